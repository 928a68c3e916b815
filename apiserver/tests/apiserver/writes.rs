//! Writes: server-set fields, optimistic concurrency, status subresource, patches, bad input,
//! Status bodies, scale and tokens.

use kcache_testkit::within;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn deployment(name: &str, image: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "app", "image": image}]}}}
    })
}

#[tokio::test]
async fn create_sets_uid_creation_timestamp_generation_and_resource_version() {
    let s = start().await;
    let c = client(&s);
    let (code, cm) = post(&c, CMS, &configmap("a", "1")).await;
    assert_eq!(code, 201);
    let m = &cm["metadata"];
    assert!(m["uid"].as_str().unwrap().len() >= 32);
    assert!(m["creationTimestamp"].is_string());
    assert_eq!(m["namespace"], "default");
    assert!(rv(&cm) > 0);
    let (_, d) = post(&c, DEPLOYS, &deployment("web", "img:1")).await;
    assert_eq!(d["metadata"]["generation"], 1);
}

#[tokio::test]
async fn configmaps_and_other_kinds_without_a_spec_get_no_generation() {
    let s = start().await;
    let c = client(&s);
    let (_, cm) = post(&c, CMS, &configmap("a", "1")).await;
    assert!(cm["metadata"].get("generation").is_none(), "{cm}");
    let (code, cm) = put(&c, &format!("{CMS}/a"), &configmap("a", "2")).await;
    assert_eq!(code, 200);
    assert!(cm["metadata"].get("generation").is_none(), "{cm}");
    let (_, ns) = post(
        &c,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n1"}}),
    )
    .await;
    assert!(ns["metadata"].get("generation").is_none(), "{ns}");
}

#[tokio::test]
async fn create_of_an_existing_name_is_409_already_exists_with_the_reference_status() {
    let s = start().await;
    let c = client(&s);
    post(&c, CMS, &configmap("a", "1")).await;
    let (code, status) = post(&c, CMS, &configmap("a", "2")).await;
    assert_eq!(code, 409);
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "configmaps \"a\" already exists", "reason": "AlreadyExists",
               "details": {"name": "a", "kind": "configmaps"}, "code": 409})
    );
}

#[tokio::test]
async fn generate_name_creates_unique_names() {
    let s = start().await;
    let c = client(&s);
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}});
    let (_, a) = post(&c, CMS, &body).await;
    let (_, b) = post(&c, CMS, &body).await;
    let (na, nb) = (
        a["metadata"]["name"].as_str().unwrap(),
        b["metadata"]["name"].as_str().unwrap(),
    );
    assert!(na.starts_with("gen-") && nb.starts_with("gen-") && na != nb);
}

#[tokio::test]
async fn update_with_a_stale_resource_version_is_409_conflict() {
    let s = start().await;
    let c = client(&s);
    let (_, cm) = post(&c, CMS, &configmap("a", "1")).await;
    let mut first = cm.clone();
    first["data"]["v"] = json!("2");
    assert_eq!(put(&c, &format!("{CMS}/a"), &first).await.0, 200);
    let mut stale = cm.clone();
    stale["data"]["v"] = json!("3");
    let (code, status) = put(&c, &format!("{CMS}/a"), &stale).await;
    assert_eq!(code, 409);
    assert_eq!(status["reason"], "Conflict");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("the object has been modified")
    );
}

#[tokio::test]
async fn generation_bumps_on_spec_change_only_and_status_subresource_writes_only_status() {
    let s = start().await;
    let c = client(&s);
    let (_, d) = post(&c, DEPLOYS, &deployment("web", "img:1")).await;
    let (_, d2) = patch(
        &c,
        &format!("{DEPLOYS}/web"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"x": "y"}}}),
    )
    .await;
    assert_eq!(d2["metadata"]["generation"], d["metadata"]["generation"]);
    let (_, d3) = patch(
        &c,
        &format!("{DEPLOYS}/web"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 3}}),
    )
    .await;
    assert_eq!(d3["metadata"]["generation"], 2);
    let (_, d4) = patch(
        &c,
        &format!("{DEPLOYS}/web"),
        "application/merge-patch+json",
        &json!({"status": {"replicas": 3}}),
    )
    .await;
    assert_eq!(
        d4["status"], d["status"],
        "the main resource ignores status"
    );
    let (_, d5) = patch(
        &c,
        &format!("{DEPLOYS}/web/status"),
        "application/merge-patch+json",
        &json!({"status": {"replicas": 3}, "spec": {"replicas": 9}}),
    )
    .await;
    assert_eq!(d5["status"]["replicas"], 3);
    assert_eq!(
        d5["spec"]["replicas"], 3,
        "the status subresource ignores spec"
    );
    assert_eq!(d5["metadata"]["generation"], 2);
}

#[tokio::test]
async fn json_patch_and_strategic_merge_patch_apply() {
    let s = start().await;
    let c = client(&s);
    post(&c, DEPLOYS, &deployment("web", "img:1")).await;
    let (code, d) = patch(
        &c,
        &format!("{DEPLOYS}/web"),
        "application/json-patch+json",
        &json!([{"op": "replace", "path": "/spec/replicas", "value": 2}]),
    )
    .await;
    assert_eq!((code, d["spec"]["replicas"].clone()), (200, json!(2)));
    let smp = json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "app"}, {"name": "side"}],
        "containers": [{"name": "app", "image": "img:2"}, {"name": "side", "image": "side:1"}]}}}});
    let (code, d) = patch(
        &c,
        &format!("{DEPLOYS}/web"),
        "application/strategic-merge-patch+json",
        &smp,
    )
    .await;
    assert_eq!(code, 200);
    let containers: Vec<(&serde_json::Value, &serde_json::Value)> =
        d["spec"]["template"]["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| (&c["name"], &c["image"]))
            .collect();
    assert_eq!(
        containers,
        [
            (&json!("app"), &json!("img:2")),
            (&json!("side"), &json!("side:1"))
        ]
    );
    let (code, _) = patch(
        &c,
        &format!("{DEPLOYS}/web"),
        "application/json-patch+json",
        &json!([{"op": "test", "path": "/spec/replicas", "value": 7}]),
    )
    .await;
    assert_eq!(code, 422);
    let (code, _) = patch(
        &c,
        &format!("{DEPLOYS}/missing"),
        "application/merge-patch+json",
        &json!({}),
    )
    .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn server_side_apply_creates_then_merges() {
    let s = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&s));
    let pp = PatchParams::apply("test").force();
    let cm: ConfigMap = serde_json::from_value(configmap("applied", "1")).unwrap();
    let created = api.patch("applied", &pp, &Patch::Apply(&cm)).await.unwrap();
    assert!(created.metadata.uid.is_some());
    let cm2: ConfigMap = serde_json::from_value(configmap("applied", "2")).unwrap();
    let updated = api
        .patch("applied", &pp, &Patch::Apply(&cm2))
        .await
        .unwrap();
    assert_eq!(updated.data.unwrap()["v"], "2");
}

#[tokio::test]
async fn delete_honours_preconditions() {
    let s = start().await;
    let c = client(&s);
    let (_, cm) = post(&c, CMS, &configmap("a", "1")).await;
    let stale = json!({"preconditions": {"resourceVersion": "1"}});
    let (code, status) = request(
        &c,
        "DELETE",
        &format!("{CMS}/a"),
        Some(("application/json", stale.to_string().into_bytes())),
    )
    .await;
    assert_eq!((code, status["reason"].as_str()), (409, Some("Conflict")));
    let ok = json!({"preconditions": {"resourceVersion": cm["metadata"]["resourceVersion"]}});
    let (code, gone) = request(
        &c,
        "DELETE",
        &format!("{CMS}/a"),
        Some(("application/json", ok.to_string().into_bytes())),
    )
    .await;
    assert_eq!(
        (
            code,
            gone["status"].as_str(),
            gone["details"]["name"].as_str()
        ),
        (200, Some("Success"), Some("a"))
    );
    let (code, status) = get(&c, &format!("{CMS}/a")).await;
    assert_eq!(code, 404);
    assert_eq!(status["message"], "configmaps \"a\" not found");
    assert_eq!(
        status["details"],
        json!({"name": "a", "kind": "configmaps"})
    );
}

#[tokio::test]
async fn finalizers_delay_deletion_until_removed() {
    let s = start().await;
    let c = client(&s);
    let mut cm = configmap("f", "1");
    cm["metadata"]["finalizers"] = json!(["example.com/keep"]);
    post(&c, CMS, &cm).await;
    let (code, marked) = request(&c, "DELETE", &format!("{CMS}/f"), None).await;
    assert_eq!(code, 200);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let (code, _) = patch(
        &c,
        &format!("{CMS}/f"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(get(&c, &format!("{CMS}/f")).await.0, 404);
}

#[tokio::test]
async fn bad_input_is_400_or_422_with_a_status_and_never_a_panic() {
    let s = start().await;
    let c = client(&s);
    let (code, status) = request(
        &c,
        "POST",
        CMS,
        Some(("application/json", b"{not json".to_vec())),
    )
    .await;
    assert_eq!((code, status["kind"].as_str()), (400, Some("Status")));
    let (code, _) = post(
        &c,
        CMS,
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}),
    )
    .await;
    assert_eq!(code, 400, "wrong kind");
    let (code, status) = post(&c, CMS, &configmap("Not_A_Name", "1")).await;
    assert_eq!((code, status["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.name");
    let (code, _) = post(
        &c,
        CMS,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
    )
    .await;
    assert_eq!(code, 422, "no name");
    let (code, _) = post(&c, CMS, &json!([1, 2])).await;
    assert_eq!(code, 400);
    let (code, _) = post(&c, CMS, &json!({"metadata": {"name": 5}})).await;
    assert_eq!(code, 400);
    let (code, _) = put(&c, &format!("{CMS}/other"), &configmap("a", "1")).await;
    assert_eq!(code, 400, "name mismatch");
}

#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    let s = start().await;
    let c = client(&s);
    let big = configmap("big", &"x".repeat(4 * 1024 * 1024));
    let (code, status) = post(&c, CMS, &big).await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (413, Some("RequestEntityTooLarge"))
    );
}

/// The updates each of the eight writers makes. Every round of the eight racing makes one
/// update and up to seven conflicts; 100 each keeps the writers racing (that they conflicted
/// is asserted) at a fifth of the requests 500 took, the suite's longest test by far.
const UPDATES_PER_WRITER: u64 = 100;

#[tokio::test]
async fn eight_racing_writers_with_optimistic_updates_conflict_and_lose_no_update() {
    let s = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&s));
    let cm: ConfigMap = serde_json::from_value(configmap("counter", "0")).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    let api = Arc::new(api);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let api = Arc::clone(&api);
        tasks.push(tokio::spawn(async move {
            let (mut done, mut conflicts) = (0, 0);
            while done < UPDATES_PER_WRITER {
                let mut cur = api.get("counter").await.unwrap();
                let n: u64 = cur.data.as_ref().unwrap()["v"].parse().unwrap();
                cur.data
                    .as_mut()
                    .unwrap()
                    .insert("v".into(), (n + 1).to_string());
                match api.replace("counter", &PostParams::default(), &cur).await {
                    Ok(_) => done += 1,
                    Err(kube_client::Error::Api(e)) if e.code == 409 => conflicts += 1,
                    Err(e) => panic!("{e}"),
                }
            }
            conflicts
        }));
    }
    let mut conflicts = 0;
    for t in tasks {
        conflicts += within("a writer to finish", t).await.unwrap();
    }
    assert!(conflicts > 0, "the writers raced");
    let final_cm = api.get("counter").await.unwrap();
    assert_eq!(
        final_cm.data.unwrap()["v"],
        (8 * UPDATES_PER_WRITER).to_string()
    );
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_content() {
    let s = start().await;
    let c = client(&s);
    post(
        &c,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
    )
    .await;
    post(
        &c,
        "/api/v1/namespaces/team/configmaps",
        &configmap("a", "1"),
    )
    .await;
    post(&c, CMS, &configmap("kept", "1")).await;
    let (code, ns) = request(&c, "DELETE", "/api/v1/namespaces/team", None).await;
    assert_eq!(
        (code, ns["status"]["phase"].as_str()),
        (200, Some("Terminating"))
    );
    within("the controllers to go idle", s.wait_controllers_idle())
        .await
        .unwrap();
    assert_eq!(get(&c, "/api/v1/namespaces/team/configmaps/a").await.0, 404);
    assert_eq!(get(&c, "/api/v1/namespaces/team").await.0, 404);
    assert_eq!(get(&c, &format!("{CMS}/kept")).await.0, 200);
}

#[tokio::test]
async fn dry_run_all_validates_and_answers_without_storing() {
    let s = start().await;
    let c = client(&s);
    let (code, cm) = post(&c, &format!("{CMS}?dryRun=All"), &configmap("a", "1")).await;
    assert_eq!((code, cm["metadata"]["name"].as_str()), (201, Some("a")));
    assert_eq!(get(&c, &format!("{CMS}/a")).await.0, 404);
    let (code, _) = post(&c, &format!("{CMS}?dryRun=All"), &configmap("Bad", "1")).await;
    assert_eq!(code, 422, "a dry run validates");
    let (_, created) = post(&c, CMS, &configmap("a", "1")).await;
    let (code, patched) = patch(
        &c,
        &format!("{CMS}/a?dryRun=All"),
        "application/merge-patch+json",
        &json!({"data": {"v": "2"}}),
    )
    .await;
    assert_eq!((code, patched["data"]["v"].as_str()), (200, Some("2")));
    let mut update = created.clone();
    update["data"]["v"] = json!("3");
    assert_eq!(
        put(&c, &format!("{CMS}/a?dryRun=All"), &update).await.0,
        200
    );
    let (code, _) = request(&c, "DELETE", &format!("{CMS}/a?dryRun=All"), None).await;
    assert_eq!(code, 200);
    assert_eq!(
        get(&c, &format!("{CMS}/a")).await.1,
        created,
        "nothing changed"
    );
}

#[tokio::test]
async fn scale_subresource_reads_and_writes_spec_replicas() {
    let s = start().await;
    let c = client(&s);
    post(&c, DEPLOYS, &deployment("web", "img:1")).await;
    let (code, scale) = get(&c, &format!("{DEPLOYS}/web/scale")).await;
    assert_eq!(code, 200);
    assert_eq!(
        (
            &scale["kind"],
            &scale["apiVersion"],
            &scale["spec"]["replicas"],
            &scale["status"]["selector"]
        ),
        (
            &json!("Scale"),
            &json!("autoscaling/v1"),
            &json!(1),
            &json!("app=web")
        )
    );
    let (code, scale) = patch(
        &c,
        &format!("{DEPLOYS}/web/scale"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 4}}),
    )
    .await;
    assert_eq!((code, &scale["spec"]["replicas"]), (200, &json!(4)));
    let (_, d) = get(&c, &format!("{DEPLOYS}/web")).await;
    assert_eq!(
        (&d["spec"]["replicas"], &d["metadata"]["generation"]),
        (&json!(4), &json!(2))
    );
    let mut stale = scale.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    assert_eq!(
        put(&c, &format!("{DEPLOYS}/web/scale"), &stale).await.0,
        409
    );
    let mut negative = scale.clone();
    negative["spec"]["replicas"] = json!(-1);
    assert_eq!(
        put(&c, &format!("{DEPLOYS}/web/scale"), &negative).await.0,
        422
    );
    let core = c.list_api_group_resources("apps/v1").await.unwrap();
    let sub = core
        .resources
        .iter()
        .find(|r| r.name == "deployments/scale")
        .unwrap();
    assert_eq!(
        (sub.group.as_deref(), sub.kind.as_str()),
        (Some("autoscaling"), "Scale")
    );
}

#[tokio::test]
async fn bodies_of_an_unknown_media_type_are_415_and_bad_protobuf_is_400() {
    let s = start().await;
    let c = client(&s);
    let body = configmap("a", "1").to_string().into_bytes();
    let (code, status) = request(&c, "POST", CMS, Some(("text/plain", body))).await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );
    let (code, status) = request(
        &c,
        "POST",
        CMS,
        Some((
            "application/vnd.kubernetes.protobuf",
            b"k8s\0\x0a\xff".to_vec(),
        )),
    )
    .await;
    assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")));
}

#[tokio::test]
async fn token_requests_of_a_service_account_get_a_signed_token() {
    let s = start().await;
    let c = client(&s);
    let sas = "/api/v1/namespaces/default/serviceaccounts";
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                         "spec": {"audiences": ["api"], "expirationSeconds": 3600}});
    let (code, _) = post(&c, &format!("{sas}/robot/token"), &request).await;
    assert_eq!(code, 404, "no such service account");
    post(
        &c,
        sas,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
    )
    .await;
    let (code, answer) = post(&c, &format!("{sas}/robot/token"), &request).await;
    assert_eq!((code, answer["kind"].as_str()), (201, Some("TokenRequest")));
    let token = answer["status"]["token"].as_str().unwrap();
    assert_eq!(token.split('.').count(), 3, "a JWS: {token}");
    assert!(answer["status"]["expirationTimestamp"].is_string());
    let short = json!({"spec": {"expirationSeconds": 60}});
    assert_eq!(post(&c, &format!("{sas}/robot/token"), &short).await.0, 422);
}
