//! HorizontalPodAutoscalers (`pkg/apis/autoscaling/validation/validation.go`:
//! `validateHorizontalPodAutoscalerSpec`, `ValidateCrossVersionObjectReference`, the resource
//! metrics and their targets). Kubernetes validates the internal (v2-shaped) object, so v1
//! objects are validated after their conversion and name v2's paths.

use serde_json::{Map, Value};

use super::Cause;
use super::field::{forbidden, go_scalar, invalid, required};

/// The problems of an autoscaler's spec (v2 form).
pub(crate) fn hpa(data: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    let min = spec.get("minReplicas").and_then(Value::as_i64);
    if let Some(min) = min.filter(|m| *m < 1) {
        causes.push(invalid(
            "spec.minReplicas",
            &min.to_string(),
            "must be greater than or equal to 1",
        ));
    }
    let max = spec.get("maxReplicas").and_then(Value::as_i64).unwrap_or(0);
    if max < 1 {
        causes.push(invalid(
            "spec.maxReplicas",
            &max.to_string(),
            "must be greater than 0",
        ));
    }
    if min.is_some_and(|min| max < min) {
        causes.push(invalid(
            "spec.maxReplicas",
            &max.to_string(),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let reference = spec.get("scaleTargetRef").unwrap_or(&Value::Null);
    for field in ["kind", "name"] {
        if reference[field].as_str().is_none_or(str::is_empty) {
            causes.push(required(&format!("spec.scaleTargetRef.{field}"), ""));
        }
    }
    let metrics = spec.get("metrics").and_then(Value::as_array);
    for (i, metric) in metrics.into_iter().flatten().enumerate() {
        if metric["type"] == "Resource" {
            resource_metric(
                &format!("spec.metrics[{i}].resource"),
                &metric["resource"],
                &mut causes,
            );
        }
    }
    causes
}

/// `validateResourceSource` and `validateMetricTarget`.
fn resource_metric(path: &str, source: &Value, causes: &mut Vec<Cause>) {
    if source.is_null() {
        causes.push(required(
            path,
            "must populate information for the given metric source",
        ));
        return;
    }
    if source["name"].as_str().is_none_or(str::is_empty) {
        causes.push(required(
            &format!("{path}.name"),
            "must specify a resource name",
        ));
    }
    let target = &source["target"];
    match target["type"].as_str().unwrap_or("") {
        "" => causes.push(required(
            &format!("{path}.target.type"),
            "must specify a metric target type",
        )),
        "Utilization" | "Value" | "AverageValue" => {}
        other => causes.push(invalid(
            &format!("{path}.target.type"),
            &go_scalar(&Value::from(other)),
            "must be either Utilization, Value, or AverageValue",
        )),
    }
    let utilization = target.get("averageUtilization").and_then(Value::as_i64);
    if let Some(u) = utilization.filter(|u| *u < 1) {
        causes.push(invalid(
            &format!("{path}.target.averageUtilization"),
            &u.to_string(),
            "must be greater than 0",
        ));
    }
    let average_value = target.get("averageValue").filter(|v| !v.is_null());
    match (utilization, average_value) {
        (None, None) => causes.push(required(
            &format!("{path}.target.averageUtilization"),
            "must set either a target raw value or a target utilization",
        )),
        (Some(_), Some(_)) => causes.push(forbidden(
            &format!("{path}.target.averageValue"),
            "may not set both a target raw value and a target utilization",
        )),
        _ => {}
    }
}
