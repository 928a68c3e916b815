//! `kubectl get` printing the server's Table columns for pods, deployments and services
//! (skipped when kubectl is not installed).

use crate::kubectl::{kubectl, session};

/// The header and the row starting with `name` of a `kubectl get` output, split into words.
fn header_and_row(out: &str, name: &str) -> (Vec<String>, Vec<String>) {
    let words = |l: &str| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    let header = out.lines().next().map(words).unwrap_or_default();
    let row = out
        .lines()
        .find(|l| l.starts_with(name))
        .map(words)
        .unwrap_or_default();
    (header, row)
}

#[test]
fn kubectl_get_prints_the_columns_of_pods_deployments_and_services() {
    let Some((kc, server, dir)) = session("tables") else {
        return;
    };
    kubectl(&kc, &server, &["run", "p", "--image=nginx:1"]);
    let (header, row) = header_and_row(&kubectl(&kc, &server, &["get", "pods"]), "p");
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    assert_eq!(row[..4], ["p", "0/1", "Pending", "0"]);
    let (header, row) = header_and_row(&kubectl(&kc, &server, &["get", "pods", "-o", "wide"]), "p");
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED",
            "NODE",
            "READINESS",
            "GATES"
        ]
    );
    assert_eq!(row[5..], ["<none>", "<none>", "<none>", "<none>"]);

    kubectl(
        &kc,
        &server,
        &["create", "deployment", "web", "--image=nginx:1"],
    );
    let (header, row) = header_and_row(&kubectl(&kc, &server, &["get", "deploy"]), "web");
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert_eq!(row[..4], ["web", "0/1", "0", "0"]);
    let (header, row) = header_and_row(
        &kubectl(&kc, &server, &["get", "deploy", "-o", "wide"]),
        "web",
    );
    assert_eq!(header[5..], ["CONTAINERS", "IMAGES", "SELECTOR"]);
    assert_eq!(row[5..], ["nginx", "nginx:1", "app=web"]);

    kubectl(
        &kc,
        &server,
        &["create", "service", "clusterip", "s", "--tcp=80:8080"],
    );
    let (header, row) = header_and_row(&kubectl(&kc, &server, &["get", "svc"]), "s");
    assert_eq!(
        header,
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    assert_eq!(
        (row[1].as_str(), row[3].as_str(), row[4].as_str()),
        ("ClusterIP", "<none>", "80/TCP")
    );
    assert!(row[2].starts_with("10."), "{row:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kubectl_get_prints_the_columns_of_claims_budgets_and_network_policies() {
    let Some((kc, server, dir)) = session("group-tables") else {
        return;
    };
    let file = dir.join("objects.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny}
spec: {podSelector: {}}
",
    )
    .unwrap();
    kubectl(&kc, &server, &["apply", "-f", file.to_str().unwrap()]);
    kubectl(
        &kc,
        &server,
        &[
            "create",
            "pdb",
            "web",
            "--selector=app=web",
            "--min-available=1",
        ],
    );
    let (header, row) = header_and_row(&kubectl(&kc, &server, &["get", "pvc"]), "data");
    assert_eq!(
        header,
        [
            "NAME",
            "STATUS",
            "VOLUME",
            "CAPACITY",
            "ACCESS",
            "MODES",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "AGE"
        ]
    );
    assert_eq!(row[..3], ["data", "Pending", "<unset>"]);
    let (header, row) = header_and_row(&kubectl(&kc, &server, &["get", "pdb"]), "web");
    assert_eq!(
        header,
        [
            "NAME",
            "MIN",
            "AVAILABLE",
            "MAX",
            "UNAVAILABLE",
            "ALLOWED",
            "DISRUPTIONS",
            "AGE"
        ]
    );
    assert_eq!(row[..4], ["web", "1", "N/A", "0"]);
    let (header, row) = header_and_row(&kubectl(&kc, &server, &["get", "netpol"]), "deny");
    assert_eq!(header, ["NAME", "POD-SELECTOR", "AGE"]);
    assert_eq!(row[..2], ["deny", "<none>"]);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
