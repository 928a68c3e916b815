//! Defaulting and status reset on create, over HTTP: what a cluster stores for objects that
//! leave fields out (cases from Kubernetes' `pkg/apis/core/v1/defaults_test.go`,
//! `pkg/apis/apps/v1/defaults_test.go`, and the status rules of `pkg/registry/*/strategy.go`);
//! what depends on storage (status reset, cluster IPs in use) runs on every backend.

use serde_json::json;

use crate::support::*;

const PODS: &str = "/api/v1/namespaces/default/pods";
const SERVICES: &str = "/api/v1/namespaces/default/services";

fn bare_pod(name: &str, image: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": image, "ports": [{"containerPort": 80}]}]}})
}

#[tokio::test]
async fn a_created_pod_reads_back_with_kubernetes_defaults() {
    let s = start().await;
    let c = client(&s);
    post(&c, PODS, &bare_pod("p", "nginx")).await;
    let (code, p) = get(&c, &format!("{PODS}/p")).await;
    assert_eq!(code, 200);
    // Every default is checked by the defaults module's tests; this checks they are applied.
    assert_eq!(p["spec"]["restartPolicy"], "Always");
    assert_eq!(p["spec"]["containers"][0]["imagePullPolicy"], "Always");
    assert_eq!(p["spec"]["containers"][0]["ports"][0]["protocol"], "TCP");
    assert_eq!(
        p["status"],
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
}

async fn status_given_on_create_is_reset_and_new_pods_are_pending(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let (code, p) = post(&c, PODS, &pod("default", "p", "n1", "Running", "web")).await;
    assert_eq!(
        (code, p["status"]["phase"].clone()),
        (201, json!("Pending"))
    );
    let (_, l) = get(&c, &format!("{PODS}?fieldSelector=status.phase%3DPending")).await;
    assert_eq!(names(&l), ["p"]);
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}},
        "status": {"replicas": 5}});
    let (code, d) = post(&c, "/apis/apps/v1/namespaces/default/deployments", &deploy).await;
    assert_eq!((code, d["status"].clone()), (201, json!({})));
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
}

async fn services_get_a_cluster_ip_from_the_service_range(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let svc = |name: &str, ip: Option<&str>| {
        let mut spec = json!({"selector": {"app": "web"}, "ports": [{"port": 80}]});
        if let Some(ip) = ip {
            spec["clusterIP"] = json!(ip);
        }
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
    };
    let (code, a) = post(&c, SERVICES, &svc("a", None)).await;
    assert_eq!(code, 201, "{a}");
    let ip: std::net::Ipv4Addr = a["spec"]["clusterIP"].as_str().unwrap().parse().unwrap();
    assert!(
        ip.octets()[0] == 10 && (96..112).contains(&ip.octets()[1]),
        "{ip} in 10.96.0.0/12"
    );
    assert_eq!(a["spec"]["clusterIPs"], json!([ip.to_string()]));
    assert_eq!(a["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(a["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(a["spec"]["type"], "ClusterIP");
    assert_eq!(a["spec"]["sessionAffinity"], "None");
    assert_eq!(
        a["spec"]["ports"][0],
        json!({"port": 80, "protocol": "TCP", "targetPort": 80})
    );
    let (code, b) = post(&c, SERVICES, &svc("b", Some(&ip.to_string()))).await;
    assert_eq!(code, 422);
    assert_eq!(
        b["message"],
        format!(
            "Service \"b\" is invalid: spec.clusterIPs: Invalid value: [\"{ip}\"]: failed to allocate IP {ip}: provided IP is already allocated"
        )
    );
}

async fn a_service_keeps_its_cluster_ip_on_update_and_may_not_change_it(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"},
                     "spec": {"ports": [{"port": 80}]}});
    let (_, a) = post(&c, SERVICES, &svc).await;
    let (code, updated) = put(&c, &format!("{SERVICES}/a"), &svc).await;
    assert_eq!(
        (code, &updated["spec"]["clusterIP"]),
        (200, &a["spec"]["clusterIP"])
    );
    let mut moved = svc.clone();
    moved["spec"]["clusterIP"] = json!("10.96.0.77");
    moved["spec"]["clusterIPs"] = json!(["10.96.0.77"]);
    let (code, err) = put(&c, &format!("{SERVICES}/a"), &moved).await;
    assert_eq!(code, 422, "{err}");
    assert_eq!(err["details"]["causes"][0]["field"], "spec.clusterIPs[0]");
}

#[tokio::test]
async fn namespaces_get_their_name_label_and_secrets_their_type() {
    let s = start().await;
    let c = client(&s);
    let (_, ns) = post(
        &c,
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "team"}}),
    )
    .await;
    assert_eq!(
        ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "team"
    );
    assert_eq!(ns["status"]["phase"], "Active");
    let (_, secret) = post(
        &c,
        "/api/v1/namespaces/default/secrets",
        &json!({"metadata": {"name": "s"}, "stringData": {}}),
    )
    .await;
    assert_eq!(secret["type"], "Opaque");
}

on_every_backend!(
    status_given_on_create_is_reset_and_new_pods_are_pending,
    services_get_a_cluster_ip_from_the_service_range,
    a_service_keeps_its_cluster_ip_on_update_and_may_not_change_it,
);

#[tokio::test]
async fn an_apply_creating_a_service_answers_201_with_a_cluster_ip() {
    let s = start().await;
    let c = client(&s);
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "applied"},
                     "spec": {"ports": [{"port": 443}]}});
    let (code, created) = patch(
        &c,
        &format!("{SERVICES}/applied?fieldManager=test"),
        "application/apply-patch+yaml",
        &svc,
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert!(
        created["spec"]["clusterIP"]
            .as_str()
            .is_some_and(|ip| ip.starts_with("10."))
    );
    let (code, _) = patch(
        &c,
        &format!("{SERVICES}/applied?fieldManager=test"),
        "application/apply-patch+yaml",
        &svc,
    )
    .await;
    assert_eq!(code, 200, "a second apply updates");
}

#[tokio::test]
async fn a_job_selects_its_pods_by_its_uid() {
    let s = start().await;
    let c = client(&s);
    let job = json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}});
    let (code, j) = post(&c, "/apis/batch/v1/namespaces/default/jobs", &job).await;
    assert_eq!(code, 201, "{j}");
    let uid = j["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        j["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    let labels = &j["spec"]["template"]["metadata"]["labels"];
    assert_eq!(labels["controller-uid"], uid);
    assert_eq!(labels["batch.kubernetes.io/job-name"], "j");
    assert_eq!(labels["job-name"], "j");
    assert_eq!(j["spec"]["backoffLimit"], 6);
}
