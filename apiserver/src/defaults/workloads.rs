//! Workloads (`pkg/apis/apps/v1/defaults.go`, `pkg/apis/batch/v1/defaults.go`): their own
//! defaults plus those of their pod template.

use serde_json::{Map, Value, json};

use super::pod::template;
use super::{object_at, object_entry, set_default};

/// The spec of a workload with its template defaulted (None: no spec object).
fn spec_of(obj: &mut Map<String, Value>) -> Option<&mut Map<String, Value>> {
    let spec = object_at(obj, "spec")?;
    template(spec);
    Some(spec)
}

/// `spec.updateStrategy` or `spec.strategy` (`key`): type `RollingUpdate` unless given, and
/// for rolling updates, `rollingUpdate` with `rolling` as defaults.
fn rolling_strategy(spec: &mut Map<String, Value>, key: &str, rolling: &Value) {
    let Some(strategy) = object_entry(spec, key) else {
        return;
    };
    set_default(strategy, "type", "RollingUpdate");
    if strategy.get("type").and_then(Value::as_str) != Some("RollingUpdate") {
        return;
    }
    if let (Some(update), Some(defaults)) =
        (object_entry(strategy, "rollingUpdate"), rolling.as_object())
    {
        for (k, v) in defaults {
            set_default(update, k, v.clone());
        }
    }
}

pub(super) fn deployment(obj: &mut Map<String, Value>) {
    let Some(spec) = spec_of(obj) else {
        return;
    };
    set_default(spec, "replicas", 1);
    rolling_strategy(
        spec,
        "strategy",
        &json!({"maxUnavailable": "25%", "maxSurge": "25%"}),
    );
    set_default(spec, "revisionHistoryLimit", 10);
    set_default(spec, "progressDeadlineSeconds", 600);
}

pub(super) fn replica_set(obj: &mut Map<String, Value>) {
    if let Some(spec) = spec_of(obj) {
        set_default(spec, "replicas", 1);
    }
}

pub(super) fn stateful_set(obj: &mut Map<String, Value>) {
    let Some(spec) = spec_of(obj) else {
        return;
    };
    set_default(spec, "podManagementPolicy", "OrderedReady");
    rolling_strategy(spec, "updateStrategy", &json!({"partition": 0}));
    set_default(spec, "replicas", 1);
    set_default(spec, "revisionHistoryLimit", 10);
    set_default(
        spec,
        "persistentVolumeClaimRetentionPolicy",
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
    );
}

pub(super) fn daemon_set(obj: &mut Map<String, Value>) {
    let Some(spec) = spec_of(obj) else {
        return;
    };
    rolling_strategy(
        spec,
        "updateStrategy",
        &json!({"maxUnavailable": 1, "maxSurge": 0}),
    );
    set_default(spec, "revisionHistoryLimit", 10);
}

pub(super) fn job(obj: &mut Map<String, Value>) {
    let template_labels = obj
        .get("spec")
        .and_then(|s| s.pointer("/template/metadata/labels"))
        .cloned();
    let Some(spec) = spec_of(obj) else {
        return;
    };
    let given = |spec: &Map<String, Value>, k: &str| spec.get(k).is_some_and(|v| !v.is_null());
    if !given(spec, "completions") && !given(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    set_default(spec, "parallelism", 1);
    let per_index = given(spec, "backoffLimitPerIndex");
    set_default(spec, "backoffLimit", if per_index { i32::MAX } else { 6 });
    set_default(spec, "completionMode", "NonIndexed");
    set_default(spec, "suspend", false);
    let failure_policy = given(spec, "podFailurePolicy");
    let replacement = if failure_policy {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    set_default(spec, "podReplacementPolicy", replacement);
    set_default(spec, "manualSelector", false);
    if let Some(labels) = template_labels
        && let Some(meta) = object_entry(obj, "metadata")
    {
        let empty = meta
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
        if empty {
            meta.insert("labels".into(), labels);
        }
    }
}

pub(super) fn cron_job(obj: &mut Map<String, Value>) {
    let Some(spec) = object_at(obj, "spec") else {
        return;
    };
    set_default(spec, "concurrencyPolicy", "Allow");
    set_default(spec, "suspend", false);
    set_default(spec, "successfulJobsHistoryLimit", 3);
    set_default(spec, "failedJobsHistoryLimit", 1);
    if let Some(job_spec) = object_at(spec, "jobTemplate").and_then(|t| object_at(t, "spec")) {
        template(job_spec);
    }
}
