//! core/v1 Events over HTTP (`ValidateEventCreate`/`ValidateEventUpdate` of
//! `pkg/apis/core/validation/events.go` for a core/v1 request: `legacyValidateEvent` only),
//! named after TestValidateEventForCoreV1Events.

use serde_json::{Value, json};

use crate::support::*;

const EVENTS: &str = "/api/v1/namespaces/default/events";

fn event(name: &str, involved_namespace: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
           "involvedObject": {"kind": "Pod", "name": "p", "namespace": involved_namespace},
           "reason": "Started", "message": "started", "type": "Normal"})
}

#[tokio::test]
async fn event_in_the_involved_objects_namespace_is_created() {
    let s = start().await;
    let c = client(&s);
    let (code, body) = post(&c, EVENTS, &event("e", "default")).await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = post(&c, EVENTS, &event("f", "")).await;
    assert_eq!(code, 201, "{body}");
}

#[tokio::test]
async fn involved_object_namespace_that_does_not_match_event_namespace_is_422() {
    let s = start().await;
    let c = client(&s);
    let (code, body) = post(&c, EVENTS, &event("e", "other")).await;
    assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(
        invalid(&body),
        (
            "Event \"e\" is invalid: involvedObject.namespace: Invalid value: \"other\": does not match event.namespace".to_owned(),
            vec![(
                "involvedObject.namespace".to_owned(),
                "FieldValueInvalid".to_owned(),
                "Invalid value: \"other\": does not match event.namespace".to_owned()
            )]
        )
    );
    let (code, mut stored) = post(&c, EVENTS, &event("g", "default")).await;
    assert_eq!(code, 201);
    stored["involvedObject"]["namespace"] = json!("other");
    let (code, body) = put(&c, &format!("{EVENTS}/g"), &stored).await;
    assert_eq!(code, 422, "{body}");
}

#[tokio::test]
async fn new_style_event_needs_its_reporting_fields() {
    let s = start().await;
    let c = client(&s);
    let mut e = event("e", "default");
    e["eventTime"] = json!("2026-01-01T10:00:00.000000Z");
    let (code, body) = post(&c, EVENTS, &e).await;
    assert_eq!(code, 422);
    let fields: Vec<String> = invalid(&body).1.into_iter().map(|c| c.0).collect();
    assert_eq!(
        fields,
        [
            "reportingComponent",
            "reportingComponent",
            "reportingComponent",
            "reportingInstance",
            "action"
        ],
        "{body}"
    );
}
