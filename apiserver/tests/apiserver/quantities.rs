//! Quantities as Kubernetes reads and prints them: a text that is no quantity fails the decode
//! (400, `resource.ParseQuantity`'s error: TestQuantityParse's invalid inputs); a claim's
//! storage request must be positive (TestValidatePersistentVolumeClaim), its value printed as
//! `Quantity.String()`, and a JSON number is a quantity.

use serde_json::json;

use crate::support::*;

const PVCS: &str = "/api/v1/namespaces/default/persistentvolumeclaims";

fn claim(name: &str, storage: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}})
}

#[tokio::test]
async fn a_claim_storage_request_must_be_positive_and_prints_canonical() {
    let s = start().await;
    let c = client(&s);
    for (storage, printed) in [
        (json!("-0.5Gi"), "-512Mi"),
        (json!("0.0"), "0"),
        (json!(0), "0"),
    ] {
        let (code, status) = post(&c, PVCS, &claim("bad", storage.clone())).await;
        assert_eq!(code, 422, "{storage}: {status}");
        let message = format!("Invalid value: \"{printed}\": must be greater than zero");
        assert_eq!(
            invalid(&status).1,
            [(
                "spec.resources[storage]".to_owned(),
                "FieldValueInvalid".to_owned(),
                message
            )],
            "{storage}"
        );
    }
    let (code, created) = post(&c, PVCS, &claim("good", json!(1073741824))).await;
    assert_eq!(code, 201, "{created}");
}

#[tokio::test]
async fn a_malformed_quantity_fails_the_decode_with_parse_quantity_error() {
    let s = start().await;
    let c = client(&s);
    let format = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "app", "image": "img:1",
                                 "resources": {"limits": {"cpu": "1 core"}}}]}});
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "app", "image": "img:1",
                                       "resources": {"requests": {"memory": "0.1mi"}}}]}}}});
    for (path, body, message) in [
        ("/api/v1/namespaces/default/pods", pod,
         format!("Pod in version \"v1\" cannot be handled as a Pod: {format}")),
        ("/apis/apps/v1/namespaces/default/deployments", deployment,
         "Deployment in version \"v1\" cannot be handled as a Deployment: unable to parse quantity's suffix".to_owned()),
        (PVCS, claim("c", json!("lots")),
         format!("PersistentVolumeClaim in version \"v1\" cannot be handled as a PersistentVolumeClaim: {format}")),
    ] {
        let (code, status) = post(&c, path, &body).await;
        assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")), "{status}");
        assert_eq!(status["message"], message.as_str());
    }
}
