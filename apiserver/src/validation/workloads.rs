//! Workloads (`pkg/apis/apps/validation/validation.go`, `pkg/apis/batch/validation/
//! validation.go`): replicas, selectors matching their template, template pod specs, restart
//! policies, label selectors (`ValidateLabelSelector`), and the immutable selector and job
//! template.

use serde_json::{Map, Value};

use super::Cause;
use super::field::{
    go_label_selector, go_scalar, go_string, go_string_map, invalid, required, requirement_values,
    unsupported,
};
use super::pod::pod_spec;

const NON_NEGATIVE: &str = "must be greater than or equal to 0";
const IMMUTABLE: &str = "field is immutable";

/// Whether `selector` (a `LabelSelector`) selects `labels`.
pub(crate) fn selects(selector: &Value, labels: Option<&Map<String, Value>>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let match_labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| get(k) == v.as_str());
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|r| {
            let key = r["key"].as_str().unwrap_or("");
            let values = requirement_values(r);
            match (r["operator"].as_str().unwrap_or(""), get(key)) {
                ("In", Some(v)) => values.contains(&v),
                ("NotIn", v) => v.is_none_or(|v| !values.contains(&v)),
                ("Exists", v) => v.is_some(),
                ("DoesNotExist", v) => v.is_none(),
                _ => false,
            }
        });
    match_labels && expressions
}

fn non_negative(spec: &Value, field: &str, causes: &mut Vec<Cause>) {
    if let Some(n) = spec.get(field).and_then(Value::as_i64)
        && n < 0
    {
        causes.push(invalid(
            &format!("spec.{field}"),
            &n.to_string(),
            NON_NEGATIVE,
        ));
    }
}

/// A workload's `spec.selector` (`ValidateLabelSelector`, the kind's empty-selector rule, and
/// `LabelSelectorAsSelector`: an invalid selector is reported once more as a whole, except by
/// daemonsets, and only a valid one is matched against the template's `labels`).
fn workload_selector(
    kind: &str,
    selector: &Value,
    labels: Option<&Map<String, Value>>,
    causes: &mut Vec<Cause>,
) {
    let selector_causes = super::label_selector("spec.selector", selector);
    let valid = selector_causes.is_empty();
    causes.extend(selector_causes);
    let empty = ["matchLabels", "matchExpressions"].iter().all(|k| {
        selector.get(*k).is_none_or(|v| {
            v.as_object().is_some_and(Map::is_empty)
                || v.as_array().is_some_and(Vec::is_empty)
                || v.is_null()
        })
    });
    let dump = go_label_selector(selector);
    let empty_message = match kind {
        "Deployment" | "ReplicaSet" => Some("empty selector is invalid for deployment"),
        "StatefulSet" => Some("empty selector is invalid for statefulset"),
        _ => None,
    };
    if let Some(message) = empty_message.filter(|_| empty) {
        causes.push(invalid("spec.selector", &dump, message));
    }
    match (valid, kind) {
        (false, "StatefulSet") => {
            causes.push(("spec.selector".to_owned(), format!("Invalid value: {dump}")));
        }
        (false, "DaemonSet") => {}
        (false, _) => causes.push(invalid("spec.selector", &dump, "invalid label selector")),
        (true, _) if !selects(selector, labels) => causes.push(template_not_selected(labels)),
        (true, _) => {}
    }
    if empty && kind == "DaemonSet" {
        causes.push(invalid(
            "spec.selector",
            &dump,
            "empty selector is invalid for daemonset",
        ));
    }
}

/// The template's `labels` are not what the selector selects.
fn template_not_selected(labels: Option<&Map<String, Value>>) -> Cause {
    invalid(
        "spec.template.metadata.labels",
        &go_string_map(labels),
        "`selector` does not match template `labels`",
    )
}

/// Deployments, replicasets, statefulsets and daemonsets (`kind`).
pub(crate) fn workload(kind: &str, data: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    non_negative(spec, "replicas", &mut causes);
    non_negative(spec, "minReadySeconds", &mut causes);
    non_negative(spec, "revisionHistoryLimit", &mut causes);
    let template = spec.get("template").unwrap_or(&Value::Null);
    let labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object);
    match spec.get("selector").filter(|s| !s.is_null()) {
        // `LabelSelectorAsSelector(nil)` is `labels.Nothing()`, which selects no template: a
        // missing selector is required (but by `ValidateDaemonSetSpec`) and does not match.
        None => {
            if kind != "DaemonSet" {
                causes.push(required("spec.selector", ""));
            }
            causes.push(template_not_selected(labels));
        }
        Some(selector) => workload_selector(kind, selector, labels, &mut causes),
    }
    let pod = template.get("spec").unwrap_or(&Value::Null);
    pod_spec(pod, "spec.template.spec", &mut causes);
    if let Some(policy) = pod.get("restartPolicy").and_then(Value::as_str)
        && policy != "Always"
    {
        causes.push(unsupported(
            "spec.template.spec.restartPolicy",
            policy,
            &["Always"],
        ));
    }
    causes
}

/// The selector of a workload or job may not change.
pub(crate) fn selector_update(new: &Map<String, Value>, old: &Map<String, Value>) -> Vec<Cause> {
    let selector = |d: &Map<String, Value>| d.get("spec").and_then(|s| s.get("selector")).cloned();
    match (selector(new), selector(old)) {
        (Some(n), Some(o)) if n != o => {
            vec![invalid("spec.selector", &go_label_selector(&n), IMMUTABLE)]
        }
        _ => Vec::new(),
    }
}

/// A job's spec at `path` (`spec`, `spec.jobTemplate.spec`; `validateJobSpec`): counts and the template's restart policy (`OnFailure` or
/// `Never`).
fn job_spec(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    for field in [
        "parallelism",
        "completions",
        "backoffLimit",
        "activeDeadlineSeconds",
    ] {
        if let Some(n) = spec.get(field).and_then(Value::as_i64)
            && n < 0
        {
            causes.push(invalid(
                &format!("{path}.{field}"),
                &n.to_string(),
                NON_NEGATIVE,
            ));
        }
    }
    let pod = spec.pointer("/template/spec").unwrap_or(&Value::Null);
    let template_path = format!("{path}.template.spec");
    pod_spec(pod, &template_path, causes);
    let policy_path = format!("{template_path}.restartPolicy");
    match pod
        .get("restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("")
    {
        "OnFailure" | "Never" => {}
        "Always" | "" => causes.push(required(
            &policy_path,
            r#"valid values: "OnFailure", "Never""#,
        )),
        other => causes.push(unsupported(&policy_path, other, &["OnFailure", "Never"])),
    }
}

pub(crate) fn job(data: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(selector) = data
        .get("spec")
        .and_then(|s| s.get("selector"))
        .filter(|s| !s.is_null())
    {
        causes.extend(super::label_selector("spec.selector", selector));
    }
    job_spec(
        data.get("spec").unwrap_or(&Value::Null),
        "spec",
        &mut causes,
    );
    causes
}

/// A job's template may not change (the value is not printed as Kubernetes' Go dump of a
/// `core.PodTemplateSpec`).
pub(crate) fn job_update(new: &Map<String, Value>, old: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = selector_update(new, old);
    let template = |d: &Map<String, Value>| d.get("spec").and_then(|s| s.get("template")).cloned();
    if template(new) != template(old) {
        causes.push(invalid(
            "spec.template",
            "core.PodTemplateSpec{...}",
            IMMUTABLE,
        ));
    }
    let completions =
        |d: &Map<String, Value>| d.get("spec").and_then(|s| s.get("completions")).cloned();
    if let (Some(n), Some(o)) = (completions(new), completions(old))
        && n != o
    {
        causes.push(invalid("spec.completions", &go_scalar(&n), IMMUTABLE));
    }
    causes
}

/// `validateCronJobSpec` of a new cron job, or of one written over `old`'s spec (then a
/// schedule may keep the `TZ=` it had, and an unchanged `timeZone` is not checked again).
pub(crate) fn cron_job(data: &Map<String, Value>, old: Option<&Map<String, Value>>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    let old_spec = old.map(|o| o.get("spec").unwrap_or(&Value::Null));
    let zone = spec.get("timeZone").and_then(Value::as_str);
    match spec.get("schedule").and_then(Value::as_str).unwrap_or("") {
        "" => causes.push(required("spec.schedule", "")),
        schedule => {
            let quoted = go_string(schedule);
            if let Some(error) = super::cron::schedule_error(schedule) {
                causes.push(invalid("spec.schedule", &quoted, &error));
            }
            let old_tz = old_spec
                .and_then(|o| o.get("schedule"))
                .and_then(Value::as_str)
                .is_some_and(|s| s.contains("TZ"));
            let detail = match (old_tz, schedule.contains("TZ"), zone.is_some()) {
                (true, true, true) => {
                    Some("cannot use both timeZone field and TZ or CRON_TZ in schedule")
                }
                (false, true, _) => {
                    Some("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
                }
                _ => None,
            };
            if let Some(detail) = detail {
                causes.push(invalid("spec.schedule", &quoted, detail));
            }
        }
    }
    non_negative(spec, "startingDeadlineSeconds", &mut causes);
    let zone_changed = old_spec.is_none_or(|o| o.get("timeZone") != spec.get("timeZone"));
    if let (true, Some(zone)) = (zone_changed, zone) {
        for error in super::cron::time_zone_errors(zone) {
            causes.push(invalid("spec.timeZone", &go_string(zone), &error));
        }
    }
    match spec.get("concurrencyPolicy").and_then(Value::as_str) {
        None | Some("Allow" | "Forbid" | "Replace") => {}
        Some("") => causes.push(required("spec.concurrencyPolicy", "")),
        Some(other) => causes.push(unsupported(
            "spec.concurrencyPolicy",
            other,
            &["Allow", "Forbid", "Replace"],
        )),
    }
    let job = spec.pointer("/jobTemplate/spec").unwrap_or(&Value::Null);
    job_spec(job, "spec.jobTemplate.spec", &mut causes);
    if let Some(selector) = job.get("selector").filter(|s| !s.is_null()) {
        causes.push(invalid(
            "spec.jobTemplate.spec.selector",
            &go_label_selector(selector),
            "`selector` will be auto-generated",
        ));
    }
    if job.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        causes.push((
            "spec.jobTemplate.spec.manualSelector".to_owned(),
            r#"Unsupported value: true: supported values: "nil", "false""#.to_owned(),
        ));
    }
    non_negative(spec, "successfulJobsHistoryLimit", &mut causes);
    non_negative(spec, "failedJobsHistoryLimit", &mut causes);
    causes
}
