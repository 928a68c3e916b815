//! core/v1 and `events.k8s.io/v1` Events (`pkg/apis/core/validation/events.go`: `legacyValidateEvent`,
//! `validateEventCreate`, `validateEventUpdate` and `validateV1EventSeries` for a request of
//! events.k8s.io/v1). Kubernetes validates the internal core Event, so the paths are core's
//! (`involvedObject` for `regarding`, `message` for `note`, `count` for `deprecatedCount`...).

use serde_json::{Map, Value};

use super::Cause;
use super::field::{go_scalar, go_string, invalid, required};

type Data = Map<String, Value>;

/// The events.k8s.io/v1 fields and the core paths they are validated under, in the order of
/// `validateEventUpdate`'s immutable fields.
const IMMUTABLE: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("reason", "reason"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    // validateEventUpdate checks reason twice, so a changed reason is reported twice.
    ("reason", "reason"),
    ("type", "type"),
    ("eventTime", "eventTime"),
    ("action", "action"),
    ("related", "related"),
    ("reportingController", "reportingController"),
    ("reportingInstance", "reportingInstance"),
];

fn text<'a>(data: &'a Data, key: &str) -> &'a str {
    data.get(key).and_then(Value::as_str).unwrap_or("")
}

fn set(data: &Data, key: &str) -> bool {
    data.get(key).is_some_and(|v| !v.is_null())
}

/// A required field of at most `limit` characters.
fn limited(data: &Data, key: &str, path: &str, limit: usize, causes: &mut Vec<Cause>) {
    let value = text(data, key);
    if value.is_empty() {
        causes.push(required(path, ""));
    }
    if value.len() > limit {
        causes.push(invalid(
            path,
            "\"\"",
            &format!("can have at most {limit} characters"),
        ));
    }
}

/// Where an Event's fields are in the version it is written in.
struct Fields {
    regarding: &'static str,
    reporting: &'static str,
    /// The path of the reporting controller's errors (`reportingComponent` for core/v1).
    reporting_path: &'static str,
    note: &'static str,
}

const EVENTS_V1: Fields = Fields {
    regarding: "regarding",
    reporting: "reportingController",
    reporting_path: "reportingController",
    note: "note",
};

const CORE_V1: Fields = Fields {
    regarding: "involvedObject",
    reporting: "reportingComponent",
    reporting_path: "reportingComponent",
    note: "message",
};

/// `legacyValidateEvent`: the regarding object's namespace, and for events with an
/// `eventTime` the reporting controller and instance, action, reason and note.
fn legacy(namespace: &str, data: &Data, fields: &Fields) -> Vec<Cause> {
    let mut causes = Vec::new();
    let regarding_ns = data
        .get(fields.regarding)
        .and_then(|r| r.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mismatch = |causes: &mut Vec<Cause>| {
        causes.push(invalid(
            "involvedObject.namespace",
            &go_string(regarding_ns),
            "does not match event.namespace",
        ));
    };
    if !set(data, "eventTime") {
        let ok = if regarding_ns.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == regarding_ns
        };
        if !ok {
            mismatch(&mut causes);
        }
        return causes;
    }
    if regarding_ns.is_empty() && namespace != "default" && namespace != "kube-system" {
        mismatch(&mut causes);
    }
    let controller = text(data, fields.reporting);
    if controller.is_empty() {
        causes.push(required(fields.reporting_path, ""));
    }
    causes.extend(
        super::qualified_name_errors(controller)
            .iter()
            .map(|m| invalid(fields.reporting_path, &go_string(controller), m)),
    );
    limited(
        data,
        "reportingInstance",
        "reportingInstance",
        128,
        &mut causes,
    );
    limited(data, "action", "action", 128, &mut causes);
    limited(data, "reason", "reason", 128, &mut causes);
    if text(data, fields.note).len() > 1024 {
        causes.push(invalid(
            "message",
            "\"\"",
            "can have at most 1024 characters",
        ));
    }
    causes
}

/// `validateV1EventSeries`.
fn series(data: &Data, causes: &mut Vec<Cause>) {
    let Some(series) = data.get("series").filter(|s| !s.is_null()) else {
        return;
    };
    if series["count"].as_i64().unwrap_or(0) < 2 {
        causes.push(invalid("series.count", "\"\"", "should be at least 2"));
    }
    if series["lastObservedTime"].is_null() {
        causes.push(required("series.lastObservedTime", ""));
    }
}

/// `validateEventCreate` for events.k8s.io/v1.
pub(crate) fn event(namespace: &str, data: &Data) -> Vec<Cause> {
    let mut causes = legacy(namespace, data, &EVENTS_V1);
    series(data, &mut causes);
    if !set(data, "eventTime") {
        causes.push(required("eventTime", ""));
    }
    let ty = text(data, "type");
    if ty != "Normal" && ty != "Warning" {
        causes.push(invalid("type", "\"\"", &format!("has invalid value: {ty}")));
    }
    for (field, path) in [
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
    ] {
        if set(data, field) {
            causes.push(invalid(path, "\"\"", "needs to be unset"));
        }
    }
    if data
        .get("deprecatedCount")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        != 0
    {
        causes.push(invalid("count", "\"\"", "needs to be unset"));
    }
    let source = data.get("deprecatedSource");
    let source_set = ["component", "host"].iter().any(|k| {
        source
            .and_then(|s| s[*k].as_str())
            .is_some_and(|v| !v.is_empty())
    });
    if source_set {
        causes.push(invalid("source", "\"\"", "needs to be unset"));
    }
    causes
}

/// `validateEventUpdate` for events.k8s.io/v1: everything but the series is immutable.
pub(crate) fn event_update(namespace: &str, new: &Data, old: &Data) -> Vec<Cause> {
    let mut causes = legacy(namespace, new, &EVENTS_V1);
    if new.get("series") != old.get("series") {
        series(new, &mut causes);
    }
    for (field, path) in IMMUTABLE {
        if new.get(*field) != old.get(*field) {
            let value = new.get(*field).unwrap_or(&Value::Null);
            let printed = if value.is_object() {
                value.to_string()
            } else {
                go_scalar(value)
            };
            causes.push(invalid(path, &printed, "field is immutable"));
        }
    }
    causes
}

/// `ValidateEventCreate` and `ValidateEventUpdate` for a request of core/v1: only
/// `legacyValidateEvent` (no further rules, for backward compatibility).
pub(crate) fn core_event(namespace: &str, data: &Data) -> Vec<Cause> {
    legacy(namespace, data, &CORE_V1)
}
