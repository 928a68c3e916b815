//! The official JavaScript client (`@kubernetes/client-node`) against the `kcache-apiserver`
//! binary with the kubeconfig it writes, unchanged. The client is installed with npm under the
//! target directory on first use; skipped with a message when node or npm is missing or the
//! install fails (no network).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::binary::{start_binary, temp_dir};

fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The folder holding `node_modules/@kubernetes/client-node`, installed if needed.
fn client_node() -> Result<PathBuf, String> {
    if !runs("node") || !runs("npm") {
        return Err("node or npm is not installed".into());
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("js-client");
    if dir.join("node_modules/@kubernetes/client-node").exists() {
        return Ok(dir);
    }
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    // client-node 1.x runs on Node 20 (2.x needs Node 22).
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .arg("@kubernetes/client-node@1")
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "npm install failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(dir)
}

#[test]
fn javascript_informer_sees_add_update_delete_with_the_written_kubeconfig() {
    let dir = match client_node() {
        Ok(dir) => dir,
        Err(why) => {
            eprintln!("SKIPPED: the JavaScript client is not available: {why}");
            return;
        }
    };
    let server = start_binary(&temp_dir("javascript", "informer"));
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/apiserver/js_informer.cjs"
    );
    let out = Command::new("node")
        .env("NODE_PATH", dir.join("node_modules"))
        .arg(script)
        .arg(&server.kubeconfig)
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim_end() == "ok",
        "javascript client: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
