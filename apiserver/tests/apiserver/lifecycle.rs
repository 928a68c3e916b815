//! Object lifecycle: garbage collection in its three propagation modes, namespace admission and
//! deletion, pod deletion grace. Each test waits for the in-server controllers with
//! `wait_controllers_idle`, never a sleep. Each runs on memory and on etcd.

use kcache_testkit::within;
use serde_json::{Value, json};

use crate::kubectl::{kubectl, kubectl_status, session};
use crate::support::{Backend, get, on_every_backend, owner_ref, post, put, request};

on_every_backend!(
    background_deletion_collects_the_whole_chain_after_the_owner,
    foreground_deletion_deletes_dependents_first_then_the_owner,
    orphan_deletion_strips_references_and_keeps_the_dependents,
    dependents_of_owners_that_never_existed_are_collected_and_dangling_references_dropped,
    writes_into_missing_or_terminating_namespaces_are_refused,
    namespace_deletion_waits_for_finalizer_held_content_then_removes_the_namespace,
    system_namespaces_exist_and_cannot_be_deleted,
    bound_pods_stay_for_their_grace_period_and_unbound_ones_go_at_once,
    a_bound_pod_is_removed_after_its_grace_period_differs_from_kubernetes_no_kubelet,
);

/// A Deployment, a ReplicaSet it owns and two Pods the ReplicaSet owns (bound to a node, with
/// no grace period), in `ns`; returns the three paths.
async fn chain(c: &kube_client::Client, ns: &str, block: bool) -> (String, String, [String; 2]) {
    let deploys = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let rss = format!("/apis/apps/v1/namespaces/{ns}/replicasets");
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let template = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "img:1"}]}});
    let (code, deploy) = post(
        c,
        &deploys,
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template}}),
    )
    .await;
    assert_eq!(code, 201, "{deploy}");
    let (code, rs) = post(
        c,
        &rss,
        &json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-1", "ownerReferences": owner_ref(&deploy, block)},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template}}),
    )
    .await;
    assert_eq!(code, 201, "{rs}");
    let mut pod_paths = Vec::new();
    for name in ["web-1-a", "web-1-b"] {
        let (code, pod) = post(c, &pods, &json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "ownerReferences": owner_ref(&rs, block)},
            "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 0, "containers": [{"name": "c", "image": "img:1"}]}})).await;
        assert_eq!(code, 201, "{pod}");
        pod_paths.push(format!("{pods}/{name}"));
    }
    let [a, b]: [String; 2] = pod_paths.try_into().unwrap();
    (format!("{deploys}/web"), format!("{rss}/web-1"), [a, b])
}

async fn create_namespace(c: &kube_client::Client, name: &str) {
    let (code, body) = post(
        c,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
}

async fn delete_with(c: &kube_client::Client, path: &str, policy: &str) -> (u16, Value) {
    let body = json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": policy});
    request(
        c,
        "DELETE",
        path,
        Some(("application/json", body.to_string().into_bytes())),
    )
    .await
}

async fn background_deletion_collects_the_whole_chain_after_the_owner(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    create_namespace(&c, "gc-bg").await;
    let (deploy, rs, pods) = chain(&c, "gc-bg", false).await;
    let (code, _) = delete_with(&c, &deploy, "Background").await;
    assert_eq!(code, 200);
    assert_eq!(get(&c, &deploy).await.0, 404, "the owner goes at once");
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    for path in [&rs, &pods[0], &pods[1]] {
        assert_eq!(get(&c, path).await.0, 404, "{path}");
    }
}

async fn foreground_deletion_deletes_dependents_first_then_the_owner(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    create_namespace(&c, "gc-fg").await;
    let (deploy, rs, pods) = chain(&c, "gc-fg", true).await;
    // A finalizer holds one pod: the chain waits for it.
    let (_, mut held) = get(&c, &pods[0]).await;
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(put(&c, &pods[0], &held).await.0, 200);
    let (code, marked) = delete_with(&c, &deploy, "Foreground").await;
    assert_eq!(code, 200);
    assert_eq!(
        marked["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    assert_eq!(get(&c, &pods[1]).await.0, 404);
    let (_, pod) = get(&c, &pods[0]).await;
    assert!(pod["metadata"]["deletionTimestamp"].is_string(), "{pod}");
    let (code, rs_obj) = get(&c, &rs).await;
    assert_eq!(code, 200, "the ReplicaSet waits for its blocking pod");
    assert_eq!(
        rs_obj["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert_eq!(
        get(&c, &deploy).await.0,
        200,
        "the owner waits for its dependents"
    );
    let (_, mut held) = get(&c, &pods[0]).await;
    held["metadata"]["finalizers"] = json!([]);
    assert_eq!(put(&c, &pods[0], &held).await.0, 200);
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    for path in [&pods[0], &rs, &deploy] {
        assert_eq!(get(&c, path).await.0, 404, "{path}");
    }
}

async fn orphan_deletion_strips_references_and_keeps_the_dependents(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    create_namespace(&c, "gc-orphan").await;
    let (deploy, rs, pods) = chain(&c, "gc-orphan", false).await;
    let (code, marked) = delete_with(&c, &deploy, "Orphan").await;
    assert_eq!(code, 200);
    assert_eq!(marked["metadata"]["finalizers"], json!(["orphan"]));
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    assert_eq!(get(&c, &deploy).await.0, 404);
    let (code, rs_obj) = get(&c, &rs).await;
    assert_eq!(code, 200);
    assert!(rs_obj["metadata"]["ownerReferences"].is_null(), "{rs_obj}");
    for path in &pods {
        let (code, pod) = get(&c, path).await;
        assert_eq!(code, 200);
        assert_eq!(pod["metadata"]["ownerReferences"][0]["name"], "web-1");
    }
}

async fn dependents_of_owners_that_never_existed_are_collected_and_dangling_references_dropped(
    backend: Backend,
) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    let ghost = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000001"}});
    let (code, _) = post(
        &c,
        "/api/v1/namespaces/default/configmaps",
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "orphaned", "ownerReferences": owner_ref(&ghost, false)}}),
    )
    .await;
    assert_eq!(code, 201);
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    assert_eq!(
        get(&c, "/api/v1/namespaces/default/configmaps/orphaned")
            .await
            .0,
        404
    );
    // With a live owner beside the missing one, the object stays and loses the dangling
    // reference.
    let cms = "/api/v1/namespaces/default/configmaps";
    let (_, owner) = post(
        &c,
        cms,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}),
    )
    .await;
    let mut refs = owner_ref(&ghost, false);
    let mut live = owner_ref(&owner, false)[0].clone();
    live["controller"] = json!(false);
    refs.as_array_mut().unwrap().push(live);
    let (code, body) = post(
        &c,
        cms,
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "half", "ownerReferences": refs}}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    let (code, half) = get(&c, &format!("{cms}/half")).await;
    assert_eq!(code, 200);
    let left = half["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["name"], "owner");
}

/// Watchers of the pods, the ReplicaSets and the Deployments see a Foreground cascade in the
/// order a cluster shows it: the owner marked, the pods gone, the ReplicaSet gone, the owner
/// gone, each after the one before (resource versions).
#[tokio::test]
async fn a_foreground_cascade_reaches_watchers_dependents_before_the_owner() {
    use crate::support::{next_change, rv, watch};

    let Some(s) = Backend::Memory.server().await else {
        return;
    };
    let c = s.client().unwrap();
    create_namespace(&c, "gc-watch").await;
    let (deploy, _, _) = chain(&c, "gc-watch", true).await;
    let (_, current) = get(&c, &deploy).await;
    let from = rv(&current);
    let ns = "/namespaces/gc-watch";
    let mut deploys = watch(
        &c,
        &format!("/apis/apps/v1{ns}/deployments?watch=1&resourceVersion={from}"),
    )
    .await;
    let mut rss = watch(
        &c,
        &format!("/apis/apps/v1{ns}/replicasets?watch=1&resourceVersion={from}"),
    )
    .await;
    let mut pods = watch(
        &c,
        &format!("/api/v1{ns}/pods?watch=1&resourceVersion={from}"),
    )
    .await;
    assert_eq!(delete_with(&c, &deploy, "Foreground").await.0, 200);
    let marked = next_change(&mut deploys).await;
    assert_eq!(marked["type"], "MODIFIED");
    // Each dependent is marked (Foreground when it has dependents) or deleted; keep the
    // resource version of each DELETED.
    async fn deleted(lines: &mut crate::support::WatchLines, n: usize) -> Vec<u64> {
        let mut out = Vec::new();
        while out.len() < n {
            let e = next_change(lines).await;
            if e["type"] == "DELETED" {
                out.push(rv(&e["object"]));
            }
        }
        out
    }
    let pods_gone = deleted(&mut pods, 2).await;
    let rs_gone = deleted(&mut rss, 1).await;
    let deploy_gone = deleted(&mut deploys, 1).await;
    assert!(rv(&marked["object"]) < pods_gone[0]);
    assert!(
        pods_gone.iter().all(|p| *p < rs_gone[0]),
        "{pods_gone:?} {rs_gone:?}"
    );
    assert!(rs_gone[0] < deploy_gone[0]);
}

async fn writes_into_missing_or_terminating_namespaces_are_refused(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    let (code, status) = post(&c, "/api/v1/namespaces/does-not-exist/configmaps", &cm).await;
    assert_eq!((code, status["reason"].as_str()), (404, Some("NotFound")));
    assert_eq!(status["message"], "namespaces \"does-not-exist\" not found");
    create_namespace(&c, "closing").await;
    let held = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    assert_eq!(
        post(&c, "/api/v1/namespaces/closing/configmaps", &held)
            .await
            .0,
        201
    );
    assert_eq!(
        request(&c, "DELETE", "/api/v1/namespaces/closing", None)
            .await
            .0,
        200
    );
    let (code, status) = post(&c, "/api/v1/namespaces/closing/configmaps", &cm).await;
    assert_eq!((code, status["reason"].as_str()), (403, Some("Forbidden")));
    assert_eq!(
        status["message"],
        "configmaps \"x\" is forbidden: unable to create new content in namespace closing because it is being terminated"
    );
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "NamespaceTerminating"
    );
}

async fn namespace_deletion_waits_for_finalizer_held_content_then_removes_the_namespace(
    backend: Backend,
) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    create_namespace(&c, "t5").await;
    let base = "/api/v1/namespaces/t5/configmaps";
    let held = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    assert_eq!(post(&c, base, &held).await.0, 201);
    let free = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "free"}});
    assert_eq!(post(&c, base, &free).await.0, 201);
    let (code, ns) = request(&c, "DELETE", "/api/v1/namespaces/t5", None).await;
    assert_eq!(code, 200);
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    assert_eq!(get(&c, &format!("{base}/free")).await.0, 404);
    let (code, cm) = get(&c, &format!("{base}/held")).await;
    assert_eq!(code, 200);
    assert!(cm["metadata"]["deletionTimestamp"].is_string());
    let (code, ns) = get(&c, "/api/v1/namespaces/t5").await;
    assert_eq!(code, 200, "the namespace waits for its content");
    let conditions = ns["status"]["conditions"].as_array().unwrap();
    let find = |t: &str| conditions.iter().find(|c| c["type"] == t).unwrap().clone();
    assert_eq!(find("NamespaceContentRemaining")["status"], "True");
    assert_eq!(
        find("NamespaceFinalizersRemaining")["message"],
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    );
    let (_, mut cm) = get(&c, &format!("{base}/held")).await;
    cm["metadata"]["finalizers"] = json!([]);
    assert_eq!(put(&c, &format!("{base}/held"), &cm).await.0, 200);
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    assert_eq!(get(&c, "/api/v1/namespaces/t5").await.0, 404);
}

async fn system_namespaces_exist_and_cannot_be_deleted(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert_eq!(
            get(&c, &format!("/api/v1/namespaces/{ns}")).await.0,
            200,
            "{ns}"
        );
    }
    let (code, status) = request(&c, "DELETE", "/api/v1/namespaces/kube-system", None).await;
    assert_eq!(code, 403);
    assert_eq!(
        status["message"],
        "namespaces \"kube-system\" is forbidden: this namespace may not be deleted"
    );
}

async fn bound_pods_stay_for_their_grace_period_and_unbound_ones_go_at_once(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    let pods = "/api/v1/namespaces/default/pods";
    let pod = |name: &str, node: Option<&str>| {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "img:1"}], "terminationGracePeriodSeconds": 3600}});
        if let Some(node) = node {
            p["spec"]["nodeName"] = json!(node);
        }
        p
    };
    for (name, node) in [
        ("bound", Some("n1")),
        ("unbound", None),
        ("now", Some("n1")),
    ] {
        assert_eq!(post(&c, pods, &pod(name, node)).await.0, 201);
    }
    let (code, marked) = request(&c, "DELETE", &format!("{pods}/bound"), None).await;
    assert_eq!(code, 200);
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 3600);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(get(&c, &format!("{pods}/bound")).await.0, 200);
    assert_eq!(
        request(&c, "DELETE", &format!("{pods}/unbound"), None)
            .await
            .0,
        200
    );
    assert_eq!(get(&c, &format!("{pods}/unbound")).await.0, 404);
    assert_eq!(
        request(
            &c,
            "DELETE",
            &format!("{pods}/now?gracePeriodSeconds=0"),
            None
        )
        .await
        .0,
        200
    );
    assert_eq!(get(&c, &format!("{pods}/now")).await.0, 404);
    // A second delete with a shorter grace period shortens it; at 0 the pod goes.
    assert_eq!(
        request(
            &c,
            "DELETE",
            &format!("{pods}/bound?gracePeriodSeconds=0"),
            None
        )
        .await
        .0,
        200
    );
    assert_eq!(get(&c, &format!("{pods}/bound")).await.0, 404);
}

/// Differs from Kubernetes (README "What still differs"): there the kubelet confirms a bound
/// pod's termination (its delete with grace 0, `pkg/kubelet/status/status_manager.go`), and a
/// pod no kubelet runs stays marked for ever; here the server removes it when its grace period
/// is over. Watched until its DELETED event arrives.
async fn a_bound_pod_is_removed_after_its_grace_period_differs_from_kubernetes_no_kubelet(
    backend: Backend,
) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    let pods = "/api/v1/namespaces/default/pods";
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "short"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "img:1"}]}});
    let (code, short) = post(&c, pods, &pod).await;
    assert_eq!(code, 201, "{short}");
    let mut lines = crate::support::watch(
        &c,
        &format!(
            "{pods}?watch=true&fieldSelector=metadata.name=short&resourceVersion={}",
            crate::support::rv(&short)
        ),
    )
    .await;
    assert_eq!(
        request(
            &c,
            "DELETE",
            &format!("{pods}/short?gracePeriodSeconds=1"),
            None
        )
        .await
        .0,
        200
    );
    assert_eq!(
        crate::support::next_change(&mut lines).await["type"],
        "MODIFIED"
    );
    assert_eq!(
        crate::support::next_change(&mut lines).await["type"],
        "DELETED"
    );
}

/// A server restarted over the same etcd finishes what its garbage collector had not done: a
/// Background cascade whose owner went while no collector ran, and a Foreground deletion whose
/// owner waits with its dependents still there.
#[cfg(feature = "etcd")]
#[tokio::test]
async fn a_server_restarted_on_etcd_finishes_cascades_in_flight() {
    use kcache_apiserver::TestServer;

    use crate::support::test_builder;

    let Some(storage) = Backend::Etcd.storage().await else {
        return;
    };
    let builder = || test_builder().storage(std::sync::Arc::clone(&storage.inner));
    let (bg, fg) = {
        // No collector: the cascades stop where a crash would leave them.
        let s = TestServer::start_with(builder().garbage_collection(false))
            .await
            .unwrap();
        let c = s.client().unwrap();
        create_namespace(&c, "restart-bg").await;
        create_namespace(&c, "restart-fg").await;
        let bg = chain(&c, "restart-bg", false).await;
        assert_eq!(delete_with(&c, &bg.0, "Background").await.0, 200);
        let fg = chain(&c, "restart-fg", true).await;
        let (_, mut deploy) = get(&c, &fg.0).await;
        deploy["metadata"]["finalizers"] = json!(["foregroundDeletion"]);
        assert_eq!(put(&c, &fg.0, &deploy).await.0, 200);
        assert_eq!(request(&c, "DELETE", &fg.0, None).await.0, 200);
        within("the controllers to go idle", s.wait_controllers_idle())
            .await
            .unwrap();
        assert_eq!(get(&c, &bg.1).await.0, 200, "nothing collected yet");
        assert_eq!(get(&c, &fg.0).await.0, 200, "the owner waits");
        s.shutdown();
        (bg, fg)
    };
    let s = TestServer::start_with(builder()).await.unwrap();
    let c = s.client().unwrap();
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    for path in [&bg.1, &bg.2[0], &bg.2[1], &fg.0, &fg.1, &fg.2[0], &fg.2[1]] {
        assert_eq!(get(&c, path).await.0, 404, "{path}");
    }
}

#[test]
fn kubectl_delete_ns_waits_for_the_namespace_and_its_content() {
    let Some((kc, server, _dir)) = session("delete-ns") else {
        return;
    };
    kubectl(&kc, &server, &["create", "namespace", "t5"]);
    kubectl(
        &kc,
        &server,
        &["-n", "t5", "create", "configmap", "x", "--from-literal=a=b"],
    );
    let (code, _) = kubectl_status(
        &kc,
        &server,
        &["-n", "does-not-exist", "create", "configmap", "x"],
    );
    assert_eq!(code, 1, "no namespace, no configmap");
    // kubectl waits until the namespace is gone (after its content).
    let out = kubectl(
        &kc,
        &server,
        &["delete", "namespace", "t5", "--timeout=60s"],
    );
    assert!(out.contains("namespace \"t5\" deleted"), "{out}");
    let (code, _) = kubectl_status(&kc, &server, &["get", "namespace", "t5"]);
    assert_eq!(code, 1);
    let (code, _) = kubectl_status(&kc, &server, &["delete", "namespace", "default"]);
    assert_eq!(code, 1, "default can't be deleted");
}
