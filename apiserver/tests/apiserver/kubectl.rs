//! kubectl against the `kcache-apiserver` binary (skipped when kubectl is not installed).

use std::io::Read;
use std::process::{Command, Stdio};

use crate::binary::{Binary, start_binary, temp_dir};
use crate::support::skip;

pub(crate) fn kubectl_path() -> Option<std::path::PathBuf> {
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

/// Runs kubectl against `server` and waits for it.
fn run(kubectl: &std::path::Path, server: &Binary, args: &[&str]) -> std::process::Output {
    Command::new(kubectl)
        .env("KUBECONFIG", &server.kubeconfig)
        .args(args)
        .output()
        .unwrap()
}

/// Runs kubectl, which must fail (exit code 1); returns its standard error.
pub(crate) fn kubectl_failure(kubectl: &std::path::Path, server: &Binary, args: &[&str]) -> String {
    let out = run(kubectl, server, args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs kubectl; returns its exit code and standard output.
pub(crate) fn kubectl_status(
    kubectl: &std::path::Path,
    server: &Binary,
    args: &[&str],
) -> (i32, String) {
    let out = run(kubectl, server, args);
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (code, String::from_utf8_lossy(&out.stdout).into_owned())
}

pub(crate) fn kubectl(kubectl: &std::path::Path, server: &Binary, args: &[&str]) -> String {
    let out = run(kubectl, server, args);
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Applies a CustomResourceDefinition (written to `dir` as JSON) and waits until it is
/// Established.
pub(crate) fn apply_crd(
    kc: &std::path::Path,
    server: &Binary,
    dir: &std::path::Path,
    crd: &serde_json::Value,
) {
    let file = dir.join("crd.json");
    std::fs::write(&file, crd.to_string()).unwrap();
    kubectl(kc, server, &["apply", "-f", file.to_str().unwrap()]);
    let name = format!("crd/{}", crd["metadata"]["name"].as_str().unwrap());
    let wait = [
        "wait",
        "--for=condition=Established",
        &name,
        "--timeout=20s",
    ];
    kubectl(kc, server, &wait);
}

/// kubectl and a started binary in a temporary folder (None, after [`skip`], without kubectl).
pub(crate) fn session(name: &str) -> Option<(std::path::PathBuf, Binary, std::path::PathBuf)> {
    let Some(kc) = kubectl_path() else {
        skip(
            "kubectl test",
            "kubectl is not installed (set KUBECTL, or apt-get install kubernetes-client)",
        );
        return None;
    };
    let dir = temp_dir("kubectl", name);
    let server = start_binary(&dir);
    Some((kc, server, dir))
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
    let Some((kc, server, dir)) = session("watch") else {
        return;
    };
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
    let header: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `Content-Type` of each POST in kubectl's `-v=8` log (its request headers follow the
/// request line, up to the response status).
fn posted_content_types(log: &str) -> Vec<String> {
    let mut types = Vec::new();
    let mut in_post = false;
    for line in log.lines() {
        if line.contains("] POST http") {
            in_post = true;
        } else if line.contains("] Response Status:") {
            in_post = false;
        } else if let Some(t) = line
            .split("]     Content-Type: ")
            .nth(1)
            .filter(|_| in_post)
        {
            types.push(t.trim().to_owned());
        }
    }
    types
}

#[test]
fn kubectl_create_subcommands_send_protobuf_bodies_and_work_against_the_binary() {
    let Some((kc, server, dir)) = session("create") else {
        return;
    };
    let creates: &[&[&str]] = &[
        &["create", "namespace", "team"],
        &["create", "configmap", "cfg", "--from-literal=a=b"],
        &[
            "create",
            "secret",
            "generic",
            "s1",
            "--from-literal=password=hunter2",
        ],
        &[
            "create",
            "secret",
            "docker-registry",
            "reg",
            "--docker-server=r.example",
            "--docker-username=u",
            "--docker-password=p",
        ],
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx:1",
            "--replicas=2",
            "--port=80",
        ],
        &["create", "service", "clusterip", "svc1", "--tcp=80:8080"],
        &["create", "service", "nodeport", "np1", "--tcp=80:8080"],
        &["create", "service", "loadbalancer", "lb1", "--tcp=80:8080"],
        &[
            "create",
            "service",
            "externalname",
            "ext1",
            "--external-name=example.com",
        ],
        &["create", "serviceaccount", "sa1"],
        &["create", "role", "r1", "--verb=get,list", "--resource=pods"],
        &[
            "create",
            "rolebinding",
            "rb1",
            "--role=r1",
            "--serviceaccount=default:sa1",
        ],
        &[
            "create",
            "clusterrole",
            "cr1",
            "--verb=get",
            "--resource=nodes",
        ],
        &[
            "create",
            "clusterrolebinding",
            "crb1",
            "--clusterrole=cr1",
            "--user=alice",
        ],
        &["create", "job", "j1", "--image=busybox", "--", "echo", "hi"],
        &[
            "create",
            "cronjob",
            "cj1",
            "--image=busybox",
            "--schedule=*/5 * * * *",
            "--",
            "echo",
        ],
        &["create", "quota", "q1", "--hard=pods=10,cpu=2"],
        &[
            "create",
            "priorityclass",
            "pc1",
            "--value=1000",
            "--description=high",
        ],
        &[
            "create",
            "poddisruptionbudget",
            "pdb1",
            "--selector=app=web",
            "--min-available=1",
        ],
        &["create", "ingress", "ing1", "--rule=foo.com/bar=svc1:80"],
    ];
    for args in creates {
        // Before the arguments: those of `create job` end with the command after `--`.
        let out = run(&kc, &server, &[&["-v=8"][..], args].concat());
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "kubectl {args:?}: {stderr}");
        assert!(stdout.contains(" created"), "kubectl {args:?}: {stdout}");
        assert_eq!(
            posted_content_types(&stderr),
            ["application/vnd.kubernetes.protobuf"],
            "kubectl {args:?}: {stderr}"
        );
    }
    let token = kubectl(&kc, &server, &["create", "token", "sa1"]);
    assert!(
        token.starts_with("eyJ") && token.split('.').count() == 3,
        "{token}"
    );
    let get = |args: &[&str]| kubectl(&kc, &server, args);
    assert_eq!(get(&["get", "cm", "cfg", "-o", "jsonpath={.data.a}"]), "b");
    assert_eq!(
        get(&["get", "secret", "s1", "-o", "jsonpath={.data.password}"]),
        "aHVudGVyMg=="
    );
    assert_eq!(
        get(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].ports[0].containerPort}"
        ]),
        "2 80"
    );
    assert_eq!(
        get(&["get", "pdb", "pdb1", "-o", "jsonpath={.spec.minAvailable}"]),
        "1"
    );
    assert_eq!(
        get(&["get", "quota", "q1", "-o", "jsonpath={.spec.hard.cpu}"]),
        "2"
    );
    assert_eq!(
        get(&[
            "get",
            "svc",
            "svc1",
            "-o",
            "jsonpath={.spec.ports[0].targetPort}"
        ]),
        "8080"
    );
    let cm = get(&["get", "cm", "cfg", "-o", "json"]);
    assert!(
        !cm.contains("\"creationTimestamp\": null") && !cm.contains("\"generation\""),
        "{cm}"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kubectl_get_with_a_chunk_size_pages_through_the_list_in_key_order() {
    let Some((kc, server, dir)) = session("chunks") else {
        return;
    };
    for i in 0..5 {
        kubectl(&kc, &server, &["create", "configmap", &format!("cm-{i}")]);
    }
    let out = run(
        &kc,
        &server,
        &["get", "configmaps", "--chunk-size=2", "-o", "name", "-v=6"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let listed: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("configmap/cm-"))
        .collect();
    assert_eq!(
        listed,
        (0..5)
            .map(|i| format!("configmap/cm-{i}"))
            .collect::<Vec<_>>()
    );
    // Three pages: the first, and two that continue it.
    let continued = stderr
        .lines()
        .filter(|l| l.contains("/configmaps?continue=") && l.contains("limit=2"))
        .count();
    assert!(
        continued >= 2,
        "kubectl asked for no continued pages: {stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kubectl_get_all_lists_the_all_category_and_explain_reads_openapi_v3() {
    let Some((kc, server, dir)) = session("all") else {
        return;
    };
    kubectl(
        &kc,
        &server,
        &["create", "deployment", "web", "--image=nginx:1"],
    );
    kubectl(
        &kc,
        &server,
        &["create", "service", "clusterip", "svc1", "--tcp=80:8080"],
    );
    kubectl(&kc, &server, &["create", "configmap", "cfg"]);
    let all = kubectl(&kc, &server, &["get", "all", "-o", "name"]);
    assert!(
        all.contains("deployment.apps/web") && all.contains("service/svc1") && !all.contains("cfg"),
        "{all}"
    );
    let explain = kubectl(&kc, &server, &["explain", "deployment.spec.replicas"]);
    assert!(
        explain.contains("KIND:       Deployment") && explain.contains("Number of desired pods"),
        "{explain}"
    );
    let explain = kubectl(&kc, &server, &["explain", "configmaps"]);
    assert!(explain.contains("binaryData"), "{explain}");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kubectl_apply_server_side_diff_scale_and_label_work_against_the_binary() {
    let Some((kc, server, dir)) = session("apply") else {
        return;
    };
    let manifest = dir.join("deploy.yaml");
    std::fs::write(&manifest, MANIFEST.replace("IMAGE", "nginx:1")).unwrap();
    let manifest = manifest.to_str().unwrap();
    let out = kubectl(&kc, &server, &["apply", "--server-side", "-f", manifest]);
    assert!(out.contains("serverside-applied"), "{out}");

    std::fs::write(manifest, MANIFEST.replace("IMAGE", "nginx:2")).unwrap();
    let (code, diff) = kubectl_status(&kc, &server, &["diff", "-f", manifest]);
    assert_eq!(
        code, 1,
        "kubectl diff exits 1 when there are differences: {diff}"
    );
    assert!(
        diff.lines()
            .any(|l| l.starts_with('-') && l.ends_with("image: nginx:1"))
            && diff
                .lines()
                .any(|l| l.starts_with('+') && l.ends_with("image: nginx:2")),
        "{diff}"
    );
    let image = "jsonpath={.spec.template.spec.containers[0].image}";
    assert_eq!(
        kubectl(&kc, &server, &["get", "deploy", "web", "-o", image]),
        "nginx:1",
        "diff is a server-side dry run: nothing changed"
    );

    let out = kubectl(&kc, &server, &["scale", "deploy", "web", "--replicas=3"]);
    assert!(out.contains("scaled"), "{out}");
    assert_eq!(
        kubectl(
            &kc,
            &server,
            &["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]
        ),
        "3"
    );
    let out = kubectl(&kc, &server, &["label", "deploy", "web", "tier=front"]);
    assert!(out.contains("labeled"), "{out}");
    assert_eq!(
        kubectl(
            &kc,
            &server,
            &["get", "deploy", "-l", "tier=front", "-o", "name"]
        )
        .trim(),
        "deployment.apps/web"
    );
    let (code, _) = kubectl_status(&kc, &server, &["label", "deploy", "web", "bad key=x"]);
    assert_eq!(code, 1, "an invalid label key is refused");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
