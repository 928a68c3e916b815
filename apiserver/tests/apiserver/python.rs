//! The official Kubernetes Python client (PyPI `kubernetes`) against the `kcache-apiserver`
//! binary: CRUD, no-op writes, label-selected list and watch, a paginated list, error statuses,
//! the scale and status subresources, discovery. Skipped (see [`skip`]) when the client is not installed.

use std::process::Command;

use crate::binary::{start_binary, temp_dir};
use crate::support::skip;

/// `$KCACHE_PYTHON`, else `python3`, when it imports `kubernetes`.
fn python() -> Option<String> {
    let python = std::env::var("KCACHE_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    Command::new(&python)
        .args(["-c", "import kubernetes"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| python)
}

#[test]
fn python_client_crud_watch_scale_and_statuses_work_against_the_binary() {
    let Some(python) = python() else {
        return skip(
            "Python client test",
            "no Python that imports kubernetes (set KCACHE_PYTHON, or pip install kubernetes)",
        );
    };
    let dir = temp_dir("python", "crud");
    let server = start_binary(&dir);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/apiserver/python_client.py"
    );
    let out = Command::new(python)
        .arg(script)
        .arg(&server.kubeconfig)
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim_end() == "ok",
        "python client: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
