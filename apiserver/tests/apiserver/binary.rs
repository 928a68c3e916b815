//! The `kcache-apiserver` binary started for a test, for the real clients (kubectl, Python)
//! that talk to it through a kubeconfig.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running binary; killed when dropped.
pub(crate) struct Binary {
    child: Child,
    pub(crate) kubeconfig: PathBuf,
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the binary on a free loopback port, with its kubeconfig written into `dir`.
pub(crate) fn start_binary(dir: &Path) -> Binary {
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kcache-apiserver"))
        .args(["--listen", "127.0.0.1:0", "--write-kubeconfig"])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("http://127.0.0.1:"), "{line}");
    Binary { child, kubeconfig }
}

/// A fresh temporary folder for one test.
pub(crate) fn temp_dir(client: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kcache-{client}-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
