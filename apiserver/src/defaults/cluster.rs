//! LimitRanges (`pkg/apis/core/v1/defaults.go`: `SetDefaults_LimitRangeItem`), CSIDrivers
//! (`pkg/apis/storage/v1/defaults.go`), FlowSchemas and PriorityLevelConfigurations
//! (`pkg/apis/flowcontrol/v1/defaults.go`).

use serde_json::{Map, Value, json};

use super::{object_at, object_entry, set_default};

/// A container limit's default limit is its max, its default request its default limit, else
/// its min (only the names not already set; empty maps are left out as Go's `omitempty`).
pub(super) fn limit_range(obj: &mut Map<String, Value>) {
    let Some(limits) = object_at(obj, "spec")
        .and_then(|s| s.get_mut("limits"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for limit in limits.iter_mut().filter_map(Value::as_object_mut) {
        if limit.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let map = |limit: &Map<String, Value>, key: &str| {
            limit
                .get(key)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let mut default = map(limit, "default");
        for (k, v) in map(limit, "max") {
            default.entry(k).or_insert(v);
        }
        let mut request = map(limit, "defaultRequest");
        for (k, v) in default.iter().chain(&map(limit, "min")) {
            request.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for (key, value) in [("default", default), ("defaultRequest", request)] {
            if !value.is_empty() {
                limit.insert(key.to_owned(), Value::Object(value));
            }
        }
    }
}

/// `SetDefaults_CSIDriver`.
pub(super) fn csi_driver(obj: &mut Map<String, Value>) {
    let Some(spec) = object_entry(obj, "spec") else {
        return;
    };
    set_default(spec, "attachRequired", true);
    set_default(spec, "podInfoOnMount", false);
    set_default(spec, "storageCapacity", false);
    set_default(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType");
    set_default(spec, "requiresRepublish", false);
    set_default(spec, "seLinuxMount", false);
    if spec
        .get("volumeLifecycleModes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
    }
}

/// `SetDefaults_FlowSchemaSpec`: matching precedence 1000.
pub(super) fn flow_schema(obj: &mut Map<String, Value>) {
    if let Some(spec) = object_entry(obj, "spec") {
        set_default(spec, "matchingPrecedence", 1000);
    }
}

/// `SetDefaults_PriorityLevelConfiguration` with its limited and exempt parts and
/// `SetDefaults_QueuingConfiguration`.
pub(super) fn priority_level(obj: &mut Map<String, Value>) {
    let Some(spec) = object_entry(obj, "spec") else {
        return;
    };
    if let Some(limited) = object_at(spec, "limited") {
        set_default(limited, "nominalConcurrencyShares", 30);
        set_default(limited, "lendablePercent", 0);
        if let Some(queuing) = object_at(limited, "limitResponse")
            .filter(|r| r.get("type").and_then(Value::as_str) == Some("Queue"))
            .and_then(|r| object_entry(r, "queuing"))
        {
            set_default(queuing, "queues", 64);
            set_default(queuing, "handSize", 8);
            set_default(queuing, "queueLengthLimit", 50);
        }
    }
    if let Some(exempt) = object_at(spec, "exempt") {
        set_default(exempt, "nominalConcurrencyShares", 0);
        set_default(exempt, "lendablePercent", 0);
    }
}
