//! Quantities outside pod specs as Kubernetes reads and prints them: a claim's storage request
//! must be positive (TestValidatePersistentVolumeClaim), its value printed as
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
