//! The subresources of pods (`pkg/registry/core/pod/storage/storage.go`, eviction.go):
//! `binding`, `eviction` with PodDisruptionBudgets, `ephemeralcontainers`, and their discovery.

use serde_json::{Value, json};

use crate::support::{client, create_pod, get, invalid, patch, post, put, start};

const PODS: &str = "/api/v1/namespaces/default/pods";
const PDBS: &str = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";

fn pod(name: &str) -> Value {
    json!({"metadata": {"name": name, "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "c", "image": "img:1"}]}})
}

fn binding(name: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
           "target": {"kind": "Node", "name": node}})
}

#[tokio::test]
async fn a_binding_assigns_a_pod_to_its_node_once() {
    let s = start().await;
    let c = client(&s);
    post(&c, PODS, &pod("p")).await;
    let (code, status) = post(&c, &format!("{PODS}/p/binding"), &binding("p", "n1")).await;
    assert_eq!(code, 201, "{status}");
    assert_eq!(status["status"], "Success");
    let (_, bound) = get(&c, &format!("{PODS}/p")).await;
    assert_eq!(bound["spec"]["nodeName"], "n1");
    let conditions = bound["status"]["conditions"].as_array().unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "PodScheduled" && c["status"] == "True")
    );
    // Bound once: a second binding is a Conflict on pods/binding.
    let (code, status) = post(&c, &format!("{PODS}/p/binding"), &binding("p", "n2")).await;
    assert_eq!(code, 409, "{status}");
    assert_eq!(
        status["message"],
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"n1\""
    );
    // The name must match; the pod must exist; the target must be a named node.
    let (code, status) = post(&c, &format!("{PODS}/p/binding"), &binding("q", "n1")).await;
    assert_eq!(
        (code, status["message"].as_str()),
        (
            400,
            Some("name in URL does not match name in Binding object")
        )
    );
    let (code, status) = post(&c, &format!("{PODS}/none/binding"), &binding("none", "n1")).await;
    assert_eq!(
        (code, status["message"].as_str()),
        (404, Some("pods \"none\" not found"))
    );
    post(&c, PODS, &pod("r")).await;
    let (code, status) = post(&c, &format!("{PODS}/r/binding"), &binding("r", "")).await;
    assert_eq!(
        (code, status["message"].as_str()),
        (500, Some("target.name: Required value"))
    );
}

#[tokio::test]
async fn a_gated_pod_cannot_be_bound() {
    let s = start().await;
    let c = client(&s);
    let mut gated = pod("g");
    gated["spec"]["schedulingGates"] = json!([{"name": "wait"}]);
    post(&c, PODS, &gated).await;
    let (code, status) = post(&c, &format!("{PODS}/g/binding"), &binding("g", "n1")).await;
    assert_eq!(code, 409, "{status}");
    assert_eq!(
        status["message"],
        "Operation cannot be fulfilled on pods/binding \"g\": pod g has non-empty .spec.schedulingGates"
    );
}

fn eviction(name: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}})
}

/// A running, ready pod labelled `app: web`.
async fn running(c: &kube_client::Client, name: &str) {
    let mut p = pod(name);
    p["status"] = json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]});
    create_pod(c, PODS, &p).await;
}

/// A budget `name` selecting `app: web` whose status allows `allowed` disruptions, observed
/// at its generation.
async fn budget(c: &kube_client::Client, allowed: i64) {
    named_budget(c, "web", allowed, 0).await;
}

/// [`budget`] named `name`, its observed generation `behind` its generation.
async fn named_budget(c: &kube_client::Client, name: &str, allowed: i64, behind: i64) {
    let pdb = json!({"metadata": {"name": name},
                     "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
    let (code, created) = post(c, PDBS, &pdb).await;
    assert_eq!(code, 201, "{created}");
    let mut with_status = created.clone();
    with_status["status"] = json!({"disruptionsAllowed": allowed, "currentHealthy": 2,
                                   "desiredHealthy": 1, "expectedPods": 2,
                                   "observedGeneration": created["metadata"]["generation"].as_i64().unwrap() - behind});
    let (code, stored) = put(c, &format!("{PDBS}/{name}/status"), &with_status).await;
    assert_eq!(code, 200, "{stored}");
}

#[tokio::test]
async fn an_eviction_honours_the_pod_disruption_budget() {
    let s = start().await;
    let c = client(&s);
    running(&c, "a").await;
    running(&c, "b").await;
    budget(&c, 1).await;
    let (code, status) = post(&c, &format!("{PODS}/a/eviction"), &eviction("a")).await;
    assert_eq!(code, 201, "{status}");
    assert_eq!(status["status"], "Success");
    assert_eq!(get(&c, &format!("{PODS}/a")).await.0, 404);
    let (_, pdb) = get(&c, &format!("{PDBS}/web")).await;
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert!(pdb["status"]["disruptedPods"]["a"].is_string(), "{pdb}");
    let condition = &pdb["status"]["conditions"][0];
    assert_eq!(
        (
            &condition["type"],
            &condition["status"],
            &condition["reason"]
        ),
        (
            &json!("DisruptionAllowed"),
            &json!("False"),
            &json!("InsufficientPods")
        ),
        "{pdb}"
    );
    // No disruption left: 429, and the pod stays.
    let (code, status) = post(&c, &format!("{PODS}/b/eviction"), &eviction("b")).await;
    assert_eq!(code, 429, "{status}");
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(
        status["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(status["details"]["causes"][0]["reason"], "DisruptionBudget");
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "The disruption budget web needs 1 healthy pods and has 2 currently"
    );
    assert_eq!(get(&c, &format!("{PODS}/b")).await.0, 200);
}

#[tokio::test]
async fn an_eviction_needs_one_observed_budget() {
    let s = start().await;
    let c = client(&s);
    running(&c, "a").await;
    // A budget the disruption controller has not observed since its last change: 429, retry
    // after 10 s.
    named_budget(&c, "web", 1, 1).await;
    let (code, status) = post(&c, &format!("{PODS}/a/eviction"), &eviction("a")).await;
    assert_eq!(code, 429, "{status}");
    assert_eq!(status["details"]["retryAfterSeconds"], 10);
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "The disruption budget web is still being processed by the server."
    );
    // Two budgets select the pod: a Status with code 500.
    named_budget(&c, "more", 1, 0).await;
    let (code, status) = post(&c, &format!("{PODS}/a/eviction"), &eviction("a")).await;
    assert_eq!(code, 500, "{status}");
    assert_eq!(
        status["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
    assert_eq!(get(&c, &format!("{PODS}/a")).await.0, 200);
}

#[tokio::test]
async fn an_eviction_of_a_pending_or_unbudgeted_pod_deletes_it() {
    let s = start().await;
    let c = client(&s);
    budget(&c, 0).await;
    // A pending pod disrupts nothing: the budget is not consulted.
    post(&c, PODS, &pod("pending")).await;
    let (code, status) = post(
        &c,
        &format!("{PODS}/pending/eviction"),
        &eviction("pending"),
    )
    .await;
    assert_eq!(code, 201, "{status}");
    assert_eq!(get(&c, &format!("{PODS}/pending")).await.0, 404);
    // A running pod no budget selects.
    let mut other = pod("other");
    other["metadata"]["labels"] = json!({"app": "db"});
    other["status"] = json!({"phase": "Running"});
    create_pod(&c, PODS, &other).await;
    let (code, _) = post(&c, &format!("{PODS}/other/eviction"), &eviction("other")).await;
    assert_eq!(code, 201);
    let (code, status) = post(&c, &format!("{PODS}/none/eviction"), &eviction("none")).await;
    assert_eq!(
        (code, status["message"].as_str()),
        (404, Some("pods \"none\" not found"))
    );
}

#[tokio::test]
async fn ephemeral_containers_may_only_be_added() {
    let s = start().await;
    let c = client(&s);
    post(&c, PODS, &pod("p")).await;
    let path = format!("{PODS}/p/ephemeralcontainers");
    let (code, current) = get(&c, &path).await;
    assert_eq!((code, current["kind"].as_str()), (200, Some("Pod")));
    let debug = json!({"name": "debug", "image": "busybox", "terminationMessagePolicy": "File",
                       "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "Always"});
    let body = json!({"spec": {"ephemeralContainers": [debug]}});
    let (code, updated) = patch(&c, &path, "application/strategic-merge-patch+json", &body).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"]["ephemeralContainers"][0]["name"], "debug");
    // Other changes sent to the subresource are dropped.
    let mut pod_now = updated.clone();
    pod_now["spec"]["containers"][0]["image"] = json!("img:2");
    pod_now["spec"]["ephemeralContainers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "second", "image": "busybox", "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}));
    let (code, updated) = put(&c, &path, &pod_now).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"]["containers"][0]["image"], "img:1");
    assert_eq!(
        updated["spec"]["ephemeralContainers"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // Removing one is forbidden.
    let mut removed = updated.clone();
    removed["spec"]["ephemeralContainers"] = json!([updated["spec"]["ephemeralContainers"][1]]);
    let (code, status) = put(&c, &path, &removed).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        invalid(&status).1[0],
        (
            "spec.ephemeralContainers".to_owned(),
            "FieldValueForbidden".to_owned(),
            "Forbidden: existing ephemeral containers \"debug\" may not be removed\n".to_owned()
        )
    );
    // Through the pod itself they cannot be added.
    let mut through_pod = updated.clone();
    through_pod["spec"]["ephemeralContainers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "third", "image": "busybox", "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}));
    let (code, _) = put(&c, &format!("{PODS}/p"), &through_pod).await;
    assert_eq!(code, 422);
}

#[tokio::test]
async fn discovery_lists_the_pod_subresources() {
    let s = start().await;
    let c = client(&s);
    let (_, list) = get(&c, "/api/v1").await;
    let find = |name: &str| {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(find("pods/binding")["kind"], "Binding");
    assert_eq!(find("pods/binding")["verbs"], json!(["create"]));
    assert_eq!(
        find("pods/ephemeralcontainers")["verbs"],
        json!(["get", "patch", "update"])
    );
    let eviction = find("pods/eviction");
    assert_eq!(
        (&eviction["group"], &eviction["version"], &eviction["kind"]),
        (&json!("policy"), &json!("v1"), &json!("Eviction"))
    );
}

/// `kubectl debug` adds an ephemeral container through `pods/ephemeralcontainers`, as on a
/// cluster.
#[test]
fn kubectl_debug_adds_an_ephemeral_container() {
    let Some((kc, server, dir)) = crate::kubectl::session("debug") else {
        return;
    };
    let file = dir.join("pod.json");
    let mut p = pod("p");
    p["metadata"]["namespace"] = json!("default");
    p["apiVersion"] = json!("v1");
    p["kind"] = json!("Pod");
    std::fs::write(&file, p.to_string()).unwrap();
    crate::kubectl::kubectl(&kc, &server, &["create", "-f", file.to_str().unwrap()]);
    let debug = ["debug", "p", "--image=busybox", "--container=dbg"];
    crate::kubectl::kubectl(&kc, &server, &debug);
    let query = [
        "get",
        "pod",
        "p",
        "-o",
        "jsonpath={.spec.ephemeralContainers[*].name}",
    ];
    assert_eq!(crate::kubectl::kubectl(&kc, &server, &query), "dbg");
}

#[tokio::test]
async fn a_static_pod_takes_no_ephemeral_containers() {
    let s = start().await;
    let c = client(&s);
    let mut mirror = pod("m");
    mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "hash"});
    mirror["spec"]["nodeName"] = json!("n1");
    let (code, created) = post(&c, PODS, &mirror).await;
    assert_eq!(code, 201, "{created}");
    let debug = json!({"name": "debug", "image": "busybox", "terminationMessagePolicy": "File",
                       "imagePullPolicy": "Always"});
    let body = json!({"spec": {"ephemeralContainers": [debug]}});
    let path = format!("{PODS}/m/ephemeralcontainers");
    let (code, status) = patch(&c, &path, "application/strategic-merge-patch+json", &body).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "Pod \"m\" is invalid: : Forbidden: static pods do not support ephemeral containers"
    );
}

#[tokio::test]
async fn a_dry_run_eviction_deletes_nothing() {
    let s = start().await;
    let c = client(&s);
    running(&c, "a").await;
    budget(&c, 1).await;
    let mut dry = eviction("a");
    dry["deleteOptions"] = json!({"dryRun": ["All"]});
    let (code, status) = post(&c, &format!("{PODS}/a/eviction"), &dry).await;
    assert_eq!(code, 201, "{status}");
    let (code, status) = post(&c, &format!("{PODS}/a/eviction?dryRun=All"), &eviction("a")).await;
    assert_eq!(code, 201, "{status}");
    assert_eq!(get(&c, &format!("{PODS}/a")).await.0, 200);
    assert_eq!(
        get(&c, &format!("{PDBS}/web")).await.1["status"]["disruptionsAllowed"],
        1
    );
}

#[tokio::test]
async fn an_unready_pod_is_evicted_while_the_budget_has_its_healthy_pods() {
    let s = start().await;
    let c = client(&s);
    let mut unready = pod("u");
    unready["status"] =
        json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]});
    create_pod(&c, PODS, &unready).await;
    // No disruption allowed, but 2 healthy pods where 1 is needed: the unready pod goes and
    // the budget is not charged.
    budget(&c, 0).await;
    let (code, status) = post(&c, &format!("{PODS}/u/eviction"), &eviction("u")).await;
    assert_eq!(code, 201, "{status}");
    assert_eq!(get(&c, &format!("{PODS}/u")).await.0, 404);
    let (_, pdb) = get(&c, &format!("{PDBS}/web")).await;
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert!(pdb["status"]["disruptedPods"].is_null(), "{pdb}");
}
