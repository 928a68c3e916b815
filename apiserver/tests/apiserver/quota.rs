//! ResourceQuotas: the quota controller's `status` (hard and used) and the ResourceQuota
//! admission plugin's refusals (`plugin/pkg/admission/resourcequota`).

use serde_json::{Value, json};

use crate::support::*;

const NS: &str = "quota-test";

fn pod_with_cpu(name: &str, cpu: Option<&str>) -> Value {
    let resources = cpu.map_or_else(|| json!({}), |cpu| json!({"requests": {"cpu": cpu}}));
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "nginx", "resources": resources}]}})
}

async fn used(c: &kube_client::Client) -> Value {
    let (code, quota) = get(c, &format!("/api/v1/namespaces/{NS}/resourcequotas/q")).await;
    assert_eq!(code, 200, "{quota}");
    quota["status"]["used"].clone()
}

fn forbidden_message(code: u16, status: &Value) -> String {
    assert_eq!(
        (code, status["reason"].as_str()),
        (403, Some("Forbidden")),
        "{status}"
    );
    status["message"].as_str().unwrap_or("").to_owned()
}

#[tokio::test]
async fn resource_quotas_count_usage_and_refuse_creates_over_their_limits() {
    let s = start().await;
    let c = client(&s);
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    assert_eq!(post(&c, "/api/v1/namespaces", &ns).await.0, 201);
    let pods = format!("/api/v1/namespaces/{NS}/pods");
    let (code, _) = post(&c, &pods, &pod_with_cpu("before", Some("200m"))).await;
    assert_eq!(code, 201);
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                       "spec": {"hard": {"pods": "3", "requests.cpu": "1", "services": "0"}}});
    let (code, created) = post(
        &c,
        &format!("/api/v1/namespaces/{NS}/resourcequotas"),
        &quota,
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let (_, synced) = get(&c, &format!("/api/v1/namespaces/{NS}/resourcequotas/q")).await;
    assert_eq!(synced["status"]["hard"], quota["spec"]["hard"]);
    assert_eq!(
        synced["status"]["used"],
        json!({"pods": "1", "requests.cpu": "200m", "services": "0"})
    );
    // A pod must state what the quota tracks.
    let (code, status) = post(&c, &pods, &pod_with_cpu("bare", None)).await;
    assert_eq!(
        forbidden_message(code, &status),
        "pods \"bare\" is forbidden: failed quota: q: must specify requests.cpu for: c"
    );
    let (code, _) = post(&c, &pods, &pod_with_cpu("p1", Some("500m"))).await;
    assert_eq!(code, 201);
    assert_eq!(
        used(&c).await,
        json!({"pods": "2", "requests.cpu": "700m", "services": "0"})
    );
    let (code, status) = post(&c, &pods, &pod_with_cpu("p2", Some("400m"))).await;
    assert_eq!(
        forbidden_message(code, &status),
        "pods \"p2\" is forbidden: exceeded quota: q, requested: requests.cpu=400m, used: requests.cpu=700m, limited: requests.cpu=1"
    );
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
                         "spec": {"ports": [{"port": 80}]}});
    let (code, status) = post(&c, &format!("/api/v1/namespaces/{NS}/services"), &service).await;
    assert_eq!(
        forbidden_message(code, &status),
        "services \"svc\" is forbidden: exceeded quota: q, requested: services=1, used: services=0, limited: services=0"
    );
    // A dry run is refused alike and counts nothing.
    let (code, _) = post(
        &c,
        &format!("{pods}?dryRun=All"),
        &pod_with_cpu("dry", Some("100m")),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(used(&c).await["pods"], "2");
    // A deleted pod is given back.
    let (code, _) = request(&c, "DELETE", &format!("{pods}/p1"), None).await;
    assert_eq!(code, 200);
    assert_eq!(
        used(&c).await,
        json!({"pods": "1", "requests.cpu": "200m", "services": "0"})
    );
    // Namespaces without quotas are not concerned.
    let (code, _) = post(
        &c,
        "/api/v1/namespaces/default/pods",
        &pod_with_cpu("free", None),
    )
    .await;
    assert_eq!(code, 201);
}
