//! Running the factory's examples from tests: their binaries and a kubeconfig for a test server.

use std::path::PathBuf;

/// The binary of example `name`, which `cargo test` builds next to the test binaries.
pub(crate) fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// A kubeconfig file (removed on drop) whose current context is the API server at `url`.
pub(crate) struct Kubeconfig(pub(crate) PathBuf);

impl Kubeconfig {
    pub(crate) fn for_server(url: &str, purpose: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "kcache-{purpose}-kubeconfig-{}",
            std::process::id()
        ));
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: {url}\ncontexts:\n- name: test\n  context:\n    cluster: test\n    user: test\ncurrent-context: test\nusers:\n- name: test\n  user:\n    token: test\n"
            ),
        )
        .unwrap();
        Self(path)
    }
}

impl Drop for Kubeconfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
