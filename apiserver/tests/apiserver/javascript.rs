//! The official JavaScript client (`@kubernetes/client-node`) against the `kcache-apiserver`
//! binary with the kubeconfig it writes, unchanged. The client is the one in
//! `$KCACHE_JS_CLIENT/node_modules` (`cargo xtask ci` installs it there before the tests run;
//! nothing is installed at test time), run by `node` on the `PATH`; without them the test goes
//! through [`skip`].

use std::path::PathBuf;
use std::process::Command;

use crate::binary::{start_binary, temp_dir};
use crate::support::skip;

/// What enables the test, for the skip message.
const ENABLE: &str = "npm install --prefix DIR @kubernetes/client-node@1, then set \
    KCACHE_JS_CLIENT=DIR (cargo xtask ci does both)";

/// The folder `$KCACHE_JS_CLIENT` names, when `node` runs and the client is in its
/// `node_modules`; otherwise why not.
fn client_node() -> Result<PathBuf, String> {
    let dir = std::env::var_os("KCACHE_JS_CLIENT")
        .map(PathBuf::from)
        .ok_or_else(|| format!("KCACHE_JS_CLIENT is not set ({ENABLE})"))?;
    if !dir
        .join("node_modules/@kubernetes/client-node/package.json")
        .is_file()
    {
        return Err(format!(
            "KCACHE_JS_CLIENT={} has no node_modules/@kubernetes/client-node ({ENABLE})",
            dir.display()
        ));
    }
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        return Err("node is not installed (apt-get install nodejs)".into());
    }
    Ok(dir)
}

#[test]
fn javascript_informer_sees_add_update_delete_with_the_written_kubeconfig() {
    let dir = match client_node() {
        Ok(dir) => dir,
        Err(why) => return skip("JavaScript client test", &why),
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
