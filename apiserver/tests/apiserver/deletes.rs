//! What a DELETE answers, as `store.go`'s `Delete` and `handlers/delete.go` decide it, on every
//! backend: a removed object of a store without `ReturnDeletedObject` is a `Status` Success
//! naming it; pods (and the other stores that set it) answer the object; an object held by
//! finalizers answers itself, marked, with 202 for the deprecated `orphanDependents: false`.

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube_client::Api;
use kube_client::api::DeleteParams;
use serde_json::{Value, json};

use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const PODS: &str = "/api/v1/namespaces/default/pods";

/// The `Status` of a removed ConfigMap named `name` with `uid`.
fn removed_configmap(name: &str, uid: &Value) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
           "details": {"name": name, "kind": "configmaps", "uid": uid}})
}

async fn a_configmap_delete_answers_a_status_success_naming_it(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let (_, cm) = post(&c, CMS, &configmap("a", "1")).await;
    let (code, answer) = request(&c, "DELETE", &format!("{CMS}/a"), None).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer, removed_configmap("a", &cm["metadata"]["uid"]));
    assert_eq!(get(&c, &format!("{CMS}/a")).await.0, 404);
}

async fn a_pod_delete_answers_the_pod(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    post(&c, PODS, &pod("default", "p", "", "Pending", "web")).await;
    let (code, answer) = request(&c, "DELETE", &format!("{PODS}/p"), None).await;
    assert_eq!(
        (
            code,
            answer["kind"].as_str(),
            answer["metadata"]["name"].as_str()
        ),
        (200, Some("Pod"), Some("p")),
        "an unbound pod goes at once: {answer}"
    );
    assert_eq!(get(&c, &format!("{PODS}/p")).await.0, 404);
}

async fn a_delete_held_by_a_finalizer_answers_the_marked_object(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let mut cm = configmap("held", "1");
    cm["metadata"]["finalizers"] = json!(["example.com/keep"]);
    post(&c, CMS, &cm).await;
    let (code, marked) = request(&c, "DELETE", &format!("{CMS}/held"), None).await;
    assert_eq!((code, marked["kind"].as_str()), (200, Some("ConfigMap")));
    assert!(
        marked["metadata"]["deletionTimestamp"].is_string(),
        "{marked}"
    );
    let cascading = json!({"orphanDependents": false});
    let (code, again) = request(
        &c,
        "DELETE",
        &format!("{CMS}/held"),
        Some(("application/json", cascading.to_string().into_bytes())),
    )
    .await;
    assert_eq!(
        (code, again["kind"].as_str()),
        (202, Some("ConfigMap")),
        "not deleted, and orphanDependents=false: {again}"
    );
}

async fn a_dry_run_delete_answers_as_the_delete_would_and_keeps_the_object(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let (_, cm) = post(&c, CMS, &configmap("kept", "1")).await;
    let (code, answer) = request(&c, "DELETE", &format!("{CMS}/kept?dryRun=All"), None).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer, removed_configmap("kept", &cm["metadata"]["uid"]));
    let (code, still) = get(&c, &format!("{CMS}/kept")).await;
    assert_eq!((code, rv(&still)), (200, rv(&cm)));
}

async fn a_collection_delete_answers_the_objects_as_listed(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = client(&s);
    let (_, a) = post(&c, CMS, &configmap("a", "1")).await;
    let (_, b) = post(&c, CMS, &configmap("b", "1")).await;
    let (code, list) = request(&c, "DELETE", CMS, None).await;
    assert_eq!((code, list["kind"].as_str()), (200, Some("ConfigMapList")));
    assert_eq!(names(&list), ["a", "b"]);
    let versions: Vec<u64> = list["items"].as_array().unwrap().iter().map(rv).collect();
    assert_eq!(versions, [rv(&a), rv(&b)], "as listed, before the deletes");
    assert_eq!(names(&get(&c, CMS).await.1), Vec::<String>::new());
}

on_every_backend!(
    a_configmap_delete_answers_a_status_success_naming_it,
    a_pod_delete_answers_the_pod,
    a_delete_held_by_a_finalizer_answers_the_marked_object,
    a_dry_run_delete_answers_as_the_delete_would_and_keeps_the_object,
    a_collection_delete_answers_the_objects_as_listed,
);

/// kube-rs's `Api::delete` tells the answers apart by `kind`: a removed ConfigMap is the
/// status (`Right`), one held by a finalizer the object (`Left`), and a pod is the pod.
#[tokio::test]
async fn kube_rs_delete_tells_a_removed_object_from_one_still_deleting() {
    let s = start().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client(&s));
    let pods: Api<Pod> = Api::default_namespaced(client(&s));
    let c = client(&s);
    post(&c, CMS, &configmap("gone", "1")).await;
    let mut held = configmap("held", "1");
    held["metadata"]["finalizers"] = json!(["example.com/keep"]);
    post(&c, CMS, &held).await;
    post(&c, PODS, &pod("default", "p", "", "Pending", "web")).await;
    let dp = DeleteParams::default();
    let gone = cms.delete("gone", &dp).await.unwrap();
    assert_eq!(
        gone.right()
            .and_then(|status| status.details)
            .map(|d| d.name),
        Some("gone".to_owned())
    );
    let still = cms.delete("held", &dp).await.unwrap();
    assert!(still.left().unwrap().metadata.deletion_timestamp.is_some());
    let pod = pods.delete("p", &dp).await.unwrap();
    assert_eq!(pod.left().unwrap().metadata.name.as_deref(), Some("p"));
}
