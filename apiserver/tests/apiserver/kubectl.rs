//! kubectl against the `kcache-apiserver` binary (skipped when kubectl is not installed).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};

struct Binary {
    child: Child,
    kubeconfig: std::path::PathBuf,
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kubectl_path() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("KUBECTL")
        .map(Into::into)
        .unwrap_or_else(|| "kubectl".into());
    Command::new(&path)
        .arg("version")
        .arg("--client")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| path)
}

fn start_binary(dir: &std::path::Path) -> Binary {
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

fn kubectl(kubectl: &std::path::Path, server: &Binary, args: &[&str]) -> String {
    let out = Command::new(kubectl)
        .env("KUBECONFIG", &server.kubeconfig)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const MANIFEST: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: IMAGE
";

#[test]
fn kubectl_get_watch_create_apply_and_delete_work_against_the_binary() {
    let Some(kc) = kubectl_path() else {
        eprintln!("SKIPPED: kubectl is not installed (set KUBECTL to its path to run this test)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("kcache-kubectl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = start_binary(&dir);
    let manifest = dir.join("deploy.yaml");
    std::fs::write(&manifest, MANIFEST.replace("IMAGE", "nginx:1")).unwrap();
    let manifest = manifest.to_str().unwrap();

    let namespaces = kubectl(&kc, &server, &["get", "namespaces"]);
    assert!(
        namespaces.contains("default") && namespaces.contains("Active"),
        "{namespaces}"
    );

    let mut watch = Command::new(&kc)
        .env("KUBECONFIG", &server.kubeconfig)
        .args(["get", "deployments", "-w", "--request-timeout=0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    assert!(
        kubectl(&kc, &server, &["create", "-f", manifest]).contains("deployment.apps/web created")
    );
    assert!(kubectl(&kc, &server, &["get", "deployments"]).contains("web"));
    std::fs::write(manifest, MANIFEST.replace("IMAGE", "nginx:2")).unwrap();
    assert!(kubectl(&kc, &server, &["apply", "-f", manifest]).contains("configured"));
    let image = kubectl(
        &kc,
        &server,
        &[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ],
    );
    assert_eq!(image, "nginx:2");
    assert!(kubectl(&kc, &server, &["delete", "-f", manifest]).contains("deleted"));
    assert!(!kubectl(&kc, &server, &["get", "deployments", "-o", "name"]).contains("web"));

    // `get -w` printed the deployment when it was created.
    let _ = watch.kill();
    let mut out = String::new();
    watch
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let _ = watch.wait();
    assert!(
        out.lines().any(|l| l.starts_with("web")),
        "kubectl get -w printed: {out:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
