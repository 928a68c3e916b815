//! Error texts in Kubernetes' words: JSON patches that do not apply or do not decode
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`), merge patches that are no
//! object, the 415 list of patch types, and a Secret's `data` that is not base64
//! (`transformDecodeError` with Go's `base64.CorruptInputError`).

use serde_json::{Value, json};

use crate::kubectl::{kubectl, kubectl_failure, session};
use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const SECRETS: &str = "/api/v1/namespaces/default/secrets";

async fn with_configmap() -> (kcache_apiserver::TestServer, kube_client::Client) {
    let s = start().await;
    let c = client(&s);
    let (code, body) = post(&c, CMS, &configmap("cm", "1")).await;
    assert_eq!(code, 201, "{body}");
    (s, c)
}

async fn patch_cm(c: &kube_client::Client, query: &str, ty: &str, body: &Value) -> (u16, Value) {
    patch(c, &format!("{CMS}/cm{query}"), ty, body).await
}

const JSON_PATCH: &str = "application/json-patch+json";
const MERGE_PATCH: &str = "application/merge-patch+json";

#[tokio::test]
async fn a_json_patch_that_does_not_apply_is_422_with_the_generic_text() {
    let (_s, c) = with_configmap().await;
    let ops = json!([{"op": "remove", "path": "/data/missing"}]);
    let (code, body) = patch_cm(&c, "", JSON_PATCH, &ops).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["reason"], "Invalid");
    assert_eq!(
        body["message"],
        "the server rejected our request due to an error in our request"
    );
    assert_eq!(body["details"], json!({}));
}

#[tokio::test]
async fn a_json_patch_that_is_no_list_of_operations_is_400_with_gos_decoder_text() {
    let (_s, c) = with_configmap().await;
    let (code, body) = patch_cm(&c, "", JSON_PATCH, &json!({"op": "add"})).await;
    assert_eq!((code, body["reason"].as_str()), (400, Some("BadRequest")));
    assert_eq!(
        body["message"],
        "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
    );
    let ignored = "?fieldValidation=Ignore";
    let (code, body) = patch_cm(&c, ignored, JSON_PATCH, &json!(["add"])).await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "json: cannot unmarshal string into Go value of type jsonpatch.Operation"
    );
}

#[tokio::test]
async fn a_merge_patch_that_is_no_object_is_400() {
    let (_s, c) = with_configmap().await;
    let (code, body) = patch_cm(&c, "", MERGE_PATCH, &json!(["x"])).await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
    let (code, body) = patch_cm(&c, "", MERGE_PATCH, &Value::Null).await;
    assert_eq!(code, 400);
    assert_eq!(body["message"], "Invalid JSON Patch");
}

#[tokio::test]
async fn an_unknown_patch_type_is_415_listing_the_endpoints_patch_types() {
    let (_s, c) = with_configmap().await;
    let (code, body) = patch_cm(&c, "", "application/xml", &json!({})).await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );
    assert_eq!(
        body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    );
}

#[tokio::test]
async fn secret_data_that_is_not_base64_is_400_with_gos_offset() {
    let s = start().await;
    let c = client(&s);
    for (value, offset) in [("not base64!", 3), ("AAAAA", 4), ("AA=", 3)] {
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                            "data": {"k": value}});
        let (code, body) = post(&c, SECRETS, &secret).await;
        assert_eq!((code, body["reason"].as_str()), (400, Some("BadRequest")));
        assert_eq!(
            body["message"],
            format!(
                "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte {offset}"
            ),
            "{value:?}"
        );
    }
}

#[tokio::test]
async fn an_undecodable_body_or_patch_is_400_with_gos_syntax_error() {
    let (_s, c) = with_configmap().await;
    let (code, body) = request(
        &c,
        "POST",
        CMS,
        Some(("application/json", b"{bad".to_vec())),
    )
    .await;
    assert_eq!((code, body["reason"].as_str()), (400, Some("BadRequest")));
    assert_eq!(
        body["message"],
        "couldn't get version/kind; json parse error: invalid character 'b' looking for beginning of object key string"
    );
    let (code, body) = request(&c, "POST", CMS, Some(("application/json", Vec::new()))).await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "couldn't get version/kind; json parse error: unexpected end of JSON input"
    );
    let path = format!("{CMS}/cm");
    let (code, body) = request(&c, "PATCH", &path, Some((MERGE_PATCH, b"{} {}".to_vec()))).await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "error decoding patch: invalid character '{' after top-level value"
    );
}

#[test]
fn kubectl_patch_with_a_json_patch_that_does_not_apply_says_the_request_is_invalid() {
    let Some((kc, server, _dir)) = session("json-patch") else {
        return;
    };
    kubectl(
        &kc,
        &server,
        &["create", "configmap", "cm", "--from-literal=a=1"],
    );
    let err = kubectl_failure(
        &kc,
        &server,
        &[
            "patch",
            "configmap",
            "cm",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/data/missing"}]"#,
        ],
    );
    assert_eq!(
        err.trim(),
        "The request is invalid: the server rejected our request due to an error in our request"
    );
}
