//! Validation as the Kubernetes API server does it: statuses, reasons and field paths.

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use serde_json::{Value, json};

use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const PODS: &str = "/api/v1/namespaces/default/pods";

fn causes(status: &Value) -> Vec<(String, String)> {
    status["details"]["causes"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| {
                    (
                        c["field"].as_str().unwrap_or("").to_owned(),
                        c["reason"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn resource_version_match_with_continue_is_422_list_options() {
    let s = start().await;
    let c = client(&s);
    post(&c, CMS, &configmap("a", "1")).await;
    post(&c, CMS, &configmap("b", "1")).await;
    let (_, page) = get(&c, &format!("{CMS}?limit=1")).await;
    let token = page["metadata"]["continue"].as_str().unwrap();
    let (code, status) = get(
        &c,
        &format!("{CMS}?limit=1&continue={token}&resourceVersionMatch=NotOlderThan"),
    )
    .await;
    assert_eq!((code, status["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(status["details"]["kind"], "ListOptions");
    assert_eq!(
        causes(&status),
        [
            ("resourceVersionMatch".into(), "FieldValueForbidden".into()),
            ("resourceVersionMatch".into(), "FieldValueForbidden".into())
        ],
        "{status}"
    );
}

#[tokio::test]
async fn unparsable_resource_version_is_500_on_get_and_list_and_422_on_watch_as_in_kubernetes() {
    let s = start().await;
    let c = client(&s);
    post(&c, CMS, &configmap("a", "1")).await;
    for rv in ["abc", "-1", "1.5"] {
        let message = format!(
            "resourceVersion: Invalid value: \"{rv}\": strconv.ParseUint: parsing \"{rv}\": invalid syntax"
        );
        for path in [
            format!("{CMS}/a?resourceVersion={rv}"),
            format!("{CMS}?resourceVersion={rv}"),
        ] {
            let (code, status) = get(&c, &path).await;
            assert_eq!(code, 500, "{path}");
            assert_eq!(status["message"], message.as_str(), "{path}");
            assert!(status.get("reason").is_none(), "{status}");
        }
        let (code, status) = get(&c, &format!("{CMS}?watch=1&resourceVersion={rv}")).await;
        assert_eq!(
            (code, status["reason"].as_str()),
            (422, Some("Invalid")),
            "{rv}"
        );
        assert_eq!(status["details"]["kind"], "configmaps");
        assert_eq!(
            causes(&status),
            [("resourceVersion".into(), "FieldValueInvalid".into())]
        );
    }
}

#[tokio::test]
async fn invalid_label_keys_and_values_are_422_with_the_metadata_labels_field() {
    let s = start().await;
    let c = client(&s);
    let mut cm = configmap("a", "1");
    cm["metadata"]["labels"] = json!({"bad key": "ok", "ok": "bad value!"});
    let (code, status) = post(&c, CMS, &cm).await;
    assert_eq!((code, status["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(
        causes(&status),
        [
            ("metadata.labels".into(), "FieldValueInvalid".into()),
            ("metadata.labels".into(), "FieldValueInvalid".into())
        ]
    );
    let (_, created) = post(&c, CMS, &configmap("a", "1")).await;
    let (code, _) = patch(
        &c,
        &format!("{CMS}/a"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"x": "-bad-"}}}),
    )
    .await;
    assert_eq!(code, 422);
    let mut update = created.clone();
    update["metadata"]["annotations"] = json!({"a/b/c": "x"});
    let (code, status) = put(&c, &format!("{CMS}/a"), &update).await;
    assert_eq!(code, 422);
    assert_eq!(
        status["details"]["causes"][0]["field"],
        "metadata.annotations"
    );
    let (_, now) = get(&c, &format!("{CMS}/a")).await;
    assert_eq!(now, created, "rejected writes change nothing");
}

#[tokio::test]
async fn names_are_validated_by_kind() {
    let s = start().await;
    let c = client(&s);
    let svc = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
               "spec": {"ports": [{"port": 80}]}})
    };
    let (code, status) = post(&c, "/api/v1/namespaces/default/services", &svc("1web")).await;
    assert_eq!(code, 422, "service names are DNS-1035 labels: {status}");
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.name");
    let (code, _) = post(&c, "/api/v1/namespaces/default/services", &svc("web")).await;
    assert_eq!(code, 201);
    let role = |name: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": name}, "rules": []})
    };
    let roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    let (code, status) = post(&c, roles, &role("system:controller:x")).await;
    assert_eq!(code, 201, "RBAC names are path segments: {status}");
    let (code, _) = post(&c, roles, &role("a/b")).await;
    assert_eq!(code, 422);
    let (code, _) = post(&c, CMS, &configmap("UPPER", "1")).await;
    assert_eq!(code, 422);
}

#[tokio::test]
async fn resource_version_on_create_is_refused_as_etcd3_does() {
    let s = start().await;
    let c = client(&s);
    let mut cm = configmap("a", "1");
    cm["metadata"]["resourceVersion"] = json!("12");
    let (code, status) = post(&c, CMS, &cm).await;
    assert_eq!(code, 500);
    assert_eq!(
        status["message"],
        "resourceVersion should not be set on objects to be created"
    );
    assert_eq!(get(&c, &format!("{CMS}/a")).await.0, 404);
    cm["metadata"]["resourceVersion"] = json!("0");
    assert_eq!(post(&c, CMS, &cm).await.0, 201, "0 is no resource version");
}

#[tokio::test]
async fn a_patch_that_changes_the_name_or_namespace_is_400() {
    let s = start().await;
    let c = client(&s);
    let (_, created) = post(&c, CMS, &configmap("a", "1")).await;
    for (change, message) in [
        (
            json!({"metadata": {"name": "b"}}),
            "the name of the object (b) does not match the name on the URL (a)",
        ),
        (
            json!({"metadata": {"namespace": "other"}}),
            "the namespace of the object (other) does not match the namespace on the request (default)",
        ),
    ] {
        let (code, status) = patch(
            &c,
            &format!("{CMS}/a"),
            "application/merge-patch+json",
            &change,
        )
        .await;
        assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")));
        assert_eq!(status["message"], message);
    }
    assert_eq!(get(&c, &format!("{CMS}/a")).await.1, created);
}

#[tokio::test]
async fn unknown_propagation_policy_is_422_delete_options() {
    let s = start().await;
    let c = client(&s);
    post(&c, CMS, &configmap("a", "1")).await;
    let body =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Sideways"});
    let (code, status) = request(
        &c,
        "DELETE",
        &format!("{CMS}/a"),
        Some(("application/json", body.to_string().into_bytes())),
    )
    .await;
    assert_eq!((code, status["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(status["details"]["kind"], "DeleteOptions");
    assert_eq!(
        causes(&status),
        [("propagationPolicy".into(), "FieldValueNotSupported".into())]
    );
    let (code, _) = request(&c, "DELETE", &format!("{CMS}/a?propagationPolicy=Up"), None).await;
    assert_eq!(code, 422);
    assert_eq!(get(&c, &format!("{CMS}/a")).await.0, 200, "nothing deleted");
    let body = json!({"propagationPolicy": "Foreground"});
    let (code, _) = request(
        &c,
        "DELETE",
        &format!("{CMS}/a"),
        Some(("application/json", body.to_string().into_bytes())),
    )
    .await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn fields_of_the_wrong_json_type_are_400_and_typed_informers_keep_decoding() {
    let s = start().await;
    let c = client(&s);
    let bad =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": 5});
    let (code, status) = post(&c, CMS, &bad).await;
    assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")));
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .starts_with("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: "),
        "{status}"
    );
    post(&c, CMS, &configmap("a", "1")).await;
    let (code, _) = patch(
        &c,
        &format!("{CMS}/a"),
        "application/merge-patch+json",
        &json!({"data": {"v": 5}}),
    )
    .await;
    assert_eq!(code, 400);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                     "spec": {"containers": "not a list"}});
    assert_eq!(post(&c, PODS, &pod).await.0, 400);
    let typed: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let list = typed.list(&Default::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
}

/// As apimachinery's strategicpatch (`handleDirectiveInMergeMap`: `mergepatch.ErrBadPatchType`)
/// and the API server's patch handler (`interpretStrategicMergePatchError` passes that error on
/// unconverted, so `ErrorToAPIStatus` makes it a 500 without reason): not a 400.
#[tokio::test]
async fn a_strategic_patch_with_an_unknown_directive_is_500_unknown_patch_type() {
    let s = start().await;
    let c = client(&s);
    let cms = CMS;
    let (code, _) = post(&c, cms, &configmap("bogus", "1")).await;
    assert_eq!(code, 201);
    let (code, status) = patch(
        &c,
        &format!("{cms}/bogus"),
        "application/strategic-merge-patch+json",
        &json!({"$patch": "bogus", "data": {"k": "v"}}),
    )
    .await;
    assert_eq!(code, 500, "{status}");
    assert_eq!(
        status.get("reason"),
        None,
        "StatusReasonUnknown is empty, so omitted"
    );
    assert_eq!(
        status["message"],
        "unknown patch type: bogus in map: map[$patch:bogus data:map[k:v]]"
    );
    let (_, got) = get(&c, &format!("{cms}/bogus")).await;
    assert_eq!(got["data"], json!({"v": "1"}), "nothing was written");
}
