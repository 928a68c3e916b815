//! `autoscaling/v1` and `autoscaling/v2` HorizontalPodAutoscalers, as Kubernetes'
//! `pkg/apis/autoscaling/v1/conversion.go` converts them through the internal (v2-shaped) type.
//!
//! v1 has one target, `spec.targetCPUUtilizationPercentage`: the CPU `Resource` metric with a
//! `Utilization` target of v2. What v1 cannot say travels in annotations
//! (`pkg/apis/autoscaling/annotations.go`): the other metrics, the behavior, the current metrics
//! and the conditions, which a v1 write gives back to v2. A v1 object without any metric gets
//! the CPU target of 80% (the default the v1 controller applied implicitly).

use std::collections::BTreeMap;

use kube_core::Resource;
use serde_json::{Map, Value, json};

use crate::object::Object;

/// `autoscaling.MetricSpecsAnnotation`: the v2 metrics other than the CPU utilization target.
const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// `autoscaling.MetricStatusesAnnotation`: every current metric.
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// `autoscaling.BehaviorSpecsAnnotation`: `spec.behavior`.
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
/// `autoscaling.HorizontalPodAutoscalerConditionsAnnotation`: `status.conditions`.
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// `autoscaling.DefaultCPUUtilization`.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

type Annotations = BTreeMap<String, String>;

/// The round-trip annotations in which a v1 object's status travels.
const STATUS_ANNOTATIONS: [&str; 2] = [CURRENT_METRICS, CONDITIONS];

/// Gives `obj` the status annotations of `from` (none: removes them). A v1 write keeps the
/// stored status (its annotations come from the stored object), a v1 `/status` write takes the
/// status it sends, and a new object starts without status, as Kubernetes' strategy resets the
/// internal status after conversion.
pub(crate) fn set_status_annotations(obj: &mut Object, from: Option<&Object>) {
    let source = from.and_then(|f| f.meta().annotations.as_ref());
    let meta = obj.meta_mut();
    let mut annotations = meta.annotations.take().unwrap_or_default();
    for key in STATUS_ANNOTATIONS {
        match source.and_then(|s| s.get(key)) {
            Some(value) => annotations.insert(key.to_owned(), value.clone()),
            None => annotations.remove(key),
        };
    }
    meta.annotations = (!annotations.is_empty()).then_some(annotations);
}

/// Removes every round-trip annotation (a v2 write: Kubernetes' v2 conversion drops them).
pub(crate) fn drop_round_trip_annotations(obj: &mut Object) {
    let has_any = obj.meta().annotations.as_ref().is_some_and(|a| {
        [METRICS, CURRENT_METRICS, BEHAVIOR, CONDITIONS]
            .iter()
            .any(|k| a.contains_key(*k))
    });
    if has_any && let Some(annotations) = obj.meta_mut().annotations.as_mut() {
        for key in [METRICS, CURRENT_METRICS, BEHAVIOR, CONDITIONS] {
            annotations.remove(key);
        }
        if annotations.is_empty() {
            obj.meta_mut().annotations = None;
        }
    }
}

/// `obj` (v1 or v2) in `api_version`.
pub(super) fn convert(obj: &Object, api_version: &str) -> Object {
    let mut out = obj.clone();
    let mut data = obj.data();
    let mut annotations = obj.meta().annotations.clone().unwrap_or_default();
    // Round-trip annotations only ever come from a conversion (DropRoundTripHorizontalPod
    // AutoscalerAnnotations): those a client set are dropped.
    let round_trip: Annotations = [METRICS, CURRENT_METRICS, BEHAVIOR, CONDITIONS]
        .into_iter()
        .filter_map(|k| annotations.remove_entry(k))
        .collect();
    if api_version == "autoscaling/v1" {
        to_v1(&mut data, &mut annotations);
    } else {
        to_v2(&mut data, &round_trip);
    }
    out.meta_mut().annotations = (!annotations.is_empty()).then_some(annotations);
    out.set_type(api_version, obj.kind());
    out.set_data(data);
    out
}

/// Whether `metric` is the CPU `Resource` metric (v2 spec or status form).
fn is_cpu(metric: &Value) -> bool {
    metric["type"] == "Resource" && metric["resource"]["name"] == "cpu"
}

fn encode(value: &Value) -> String {
    value.to_string()
}

/// The object at `key`, removed (None when absent or not an object).
fn take_map(map: &mut Map<String, Value>, key: &str) -> Option<Map<String, Value>> {
    match map.remove(key) {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// The object at `key`, removed (empty when absent).
fn take_object(map: &mut Map<String, Value>, key: &str) -> Map<String, Value> {
    take_map(map, key).unwrap_or_default()
}

fn take_array(map: &mut Map<String, Value>, key: &str) -> Vec<Value> {
    match map.remove(key) {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}

/// v2 (internal) to v1: Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler.
fn to_v1(data: &mut Map<String, Value>, annotations: &mut Annotations) {
    let mut spec = take_object(data, "spec");
    let metrics = take_array(&mut spec, "metrics");
    let cpu_target =
        |m: &Value| is_cpu(m) && !m["resource"]["target"]["averageUtilization"].is_null();
    if let Some(cpu) = metrics.iter().find(|m| cpu_target(m)) {
        let utilization = cpu["resource"]["target"]["averageUtilization"].clone();
        spec.insert("targetCPUUtilizationPercentage".into(), utilization);
    }
    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| !cpu_target(m))
        .map(|m| metric_v1(m, Part::Spec))
        .collect();
    if !others.is_empty() {
        annotations.insert(METRICS.into(), encode(&Value::Array(others)));
    }
    if let Some(behavior) = spec.remove("behavior").filter(|b| !b.is_null()) {
        annotations.insert(BEHAVIOR.into(), encode(&behavior));
    }
    data.insert("spec".into(), Value::Object(spec));
    let Some(mut status) = take_map(data, "status") else {
        return;
    };
    let current = take_array(&mut status, "currentMetrics");
    if let Some(utilization) = current
        .iter()
        .filter(|m| is_cpu(m))
        .map(|m| &m["resource"]["current"]["averageUtilization"])
        .find(|u| !u.is_null())
    {
        status.insert(
            "currentCPUUtilizationPercentage".into(),
            utilization.clone(),
        );
    }
    if !current.is_empty() {
        let current: Vec<Value> = current.iter().map(|m| metric_v1(m, Part::Status)).collect();
        annotations.insert(CURRENT_METRICS.into(), encode(&Value::Array(current)));
    }
    let conditions = take_array(&mut status, "conditions");
    if !conditions.is_empty() {
        annotations.insert(CONDITIONS.into(), encode(&Value::Array(conditions)));
    }
    data.insert("status".into(), Value::Object(status));
}

/// The value of a round-trip annotation, if it holds JSON.
fn annotation(round_trip: &Annotations, key: &str) -> Option<Value> {
    round_trip
        .get(key)
        .and_then(|v| serde_json::from_str(v).ok())
        .filter(|v: &Value| !v.is_null())
}

/// v1 to v2 (internal): Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler.
fn to_v2(data: &mut Map<String, Value>, round_trip: &Annotations) {
    let mut spec = take_object(data, "spec");
    // The annotation's metrics first, then the CPU target (as conversion.go fills them).
    let mut metrics: Vec<Value> = match annotation(round_trip, METRICS) {
        Some(Value::Array(others)) => others.iter().map(|m| metric_v2(m, Part::Spec)).collect(),
        _ => Vec::new(),
    };
    if let Some(target) = spec
        .remove("targetCPUUtilizationPercentage")
        .filter(|t| !t.is_null())
    {
        metrics.push(json!({"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}}));
    }
    if metrics.is_empty() {
        metrics.push(json!({"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}));
    }
    spec.insert("metrics".into(), Value::Array(metrics));
    if let Some(behavior) = annotation(round_trip, BEHAVIOR) {
        spec.insert("behavior".into(), behavior);
    }
    data.insert("spec".into(), Value::Object(spec));
    let Some(mut status) = take_map(data, "status") else {
        return;
    };
    let cpu = status
        .remove("currentCPUUtilizationPercentage")
        .filter(|c| !c.is_null());
    match (annotation(round_trip, CURRENT_METRICS), cpu) {
        (Some(Value::Array(current)), _) => {
            let current: Vec<Value> = current.iter().map(|m| metric_v2(m, Part::Status)).collect();
            status.insert("currentMetrics".into(), Value::Array(current));
        }
        (_, Some(cpu)) => {
            status.insert(
                "currentMetrics".into(),
                json!([{"type": "Resource", "resource": {
                "name": "cpu", "current": {"averageUtilization": cpu}}}]),
            );
        }
        (_, None) => {}
    }
    if let Some(conditions) = annotation(round_trip, CONDITIONS) {
        status.insert("conditions".into(), conditions);
    }
    data.insert("status".into(), Value::Object(status));
}

/// A metric of a spec (`MetricSpec`) or of a status (`MetricStatus`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Spec,
    Status,
}

/// The fields of a v1 metric source (as the round-trip annotations carry it) and where v2
/// holds them, per source type: the Convert_*MetricSource/Status functions of conversion.go.
fn metric_fields(ty: &str, part: Part) -> &'static [(&'static str, &'static str)] {
    match (ty, part) {
        ("Object", Part::Spec) => &[
            ("target", "describedObject"),
            ("metricName", "metric.name"),
            ("selector", "metric.selector"),
            ("targetValue", "target.value"),
            ("averageValue", "target.averageValue"),
        ],
        ("Object", Part::Status) => &[
            ("target", "describedObject"),
            ("metricName", "metric.name"),
            ("selector", "metric.selector"),
            ("currentValue", "current.value"),
            ("averageValue", "current.averageValue"),
        ],
        ("Pods", Part::Spec) => &[
            ("metricName", "metric.name"),
            ("selector", "metric.selector"),
            ("targetAverageValue", "target.averageValue"),
        ],
        ("Pods", Part::Status) => &[
            ("metricName", "metric.name"),
            ("selector", "metric.selector"),
            ("currentAverageValue", "current.averageValue"),
        ],
        ("Resource" | "ContainerResource", Part::Spec) => &[
            ("name", "name"),
            ("container", "container"),
            ("targetAverageUtilization", "target.averageUtilization"),
            ("targetAverageValue", "target.averageValue"),
        ],
        ("Resource" | "ContainerResource", Part::Status) => &[
            ("name", "name"),
            ("container", "container"),
            ("currentAverageUtilization", "current.averageUtilization"),
            ("currentAverageValue", "current.averageValue"),
        ],
        ("External", Part::Spec) => &[
            ("metricName", "metric.name"),
            ("metricSelector", "metric.selector"),
            ("targetValue", "target.value"),
            ("targetAverageValue", "target.averageValue"),
        ],
        ("External", Part::Status) => &[
            ("metricName", "metric.name"),
            ("metricSelector", "metric.selector"),
            ("currentValue", "current.value"),
            ("currentAverageValue", "current.averageValue"),
        ],
        _ => &[],
    }
}

/// The key of a metric's source: `Resource` is under `resource`, `ContainerResource` under
/// `containerResource`...
fn source_key(ty: &str) -> String {
    let mut chars = ty.chars();
    chars
        .next()
        .map(|c| c.to_ascii_lowercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

fn at<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(value, |v, k| v.get(k))
        .filter(|v| !v.is_null())
}

fn put(value: &mut Value, path: &str, field: Value) {
    let mut target = value;
    for key in path.split('.') {
        target = &mut target[key];
    }
    *target = field;
}

/// Copies the fields of one metric source between the forms `from` and `to` of the table.
fn convert_metric(metric: &Value, part: Part, to_v1: bool) -> Value {
    let ty = metric["type"].as_str().unwrap_or("");
    let key = source_key(ty);
    let mut source = json!({});
    for (v1, v2) in metric_fields(ty, part) {
        let (from, to) = if to_v1 { (v2, v1) } else { (v1, v2) };
        if let Some(field) = at(&metric[&key], from) {
            put(&mut source, to, field.clone());
        }
    }
    json!({"type": ty, key: source})
}

/// A v2 metric in the v1 form of the round-trip annotations.
fn metric_v1(metric: &Value, part: Part) -> Value {
    convert_metric(metric, part, true)
}

/// A v1 metric of a round-trip annotation in the v2 form, its target's type inferred as
/// conversion.go does (a utilization, a value or an average value).
fn metric_v2(metric: &Value, part: Part) -> Value {
    let mut out = convert_metric(metric, part, false);
    let ty = metric["type"].as_str().unwrap_or("");
    if part == Part::Spec {
        let source = &metric[source_key(ty)];
        let set = |k: &str| at(source, k).is_some();
        let target_type = match ty {
            "Resource" | "ContainerResource" if set("targetAverageUtilization") => "Utilization",
            "Object" if !set("averageValue") => "Value",
            "External" if set("targetValue") => "Value",
            _ => "AverageValue",
        };
        put(
            &mut out,
            &format!("{}.target.type", source_key(ty)),
            json!(target_type),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hpa(api_version: &str, spec: Value, status: Value) -> Object {
        Object::from_value(json!({
            "apiVersion": api_version, "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "default"},
            "spec": spec, "status": status,
        }))
        .unwrap()
    }

    fn target() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"})
    }

    // Cases after pkg/apis/autoscaling/v1/conversion_test.go (TestHorizontalPodAutoscaler
    // AnnotationsRoundTrip and the metric conversions of conversion.go).
    #[test]
    fn a_v1_cpu_target_is_a_v2_cpu_utilization_metric_and_back() {
        let v1 = hpa(
            "autoscaling/v1",
            json!({"scaleTargetRef": target(), "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60}),
            json!({"currentReplicas": 2, "desiredReplicas": 3, "currentCPUUtilizationPercentage": 55}),
        );
        let v2 = convert(&v1, "autoscaling/v2");
        let value = v2.to_value();
        assert_eq!(value["apiVersion"], "autoscaling/v2");
        assert_eq!(
            value["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}])
        );
        assert_eq!(value["spec"].get("targetCPUUtilizationPercentage"), None);
        assert_eq!(
            value["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"],
            55
        );
        let back = convert(&v2, "autoscaling/v1").to_value();
        assert_eq!(back["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(back["status"]["currentCPUUtilizationPercentage"], 55);
        assert_eq!(back["spec"].get("metrics"), None);
    }

    #[test]
    fn a_v1_autoscaler_without_a_target_gets_the_default_cpu_utilization() {
        let v1 = hpa(
            "autoscaling/v1",
            json!({"scaleTargetRef": target(), "maxReplicas": 5}),
            Value::Null,
        );
        let value = convert(&v1, "autoscaling/v2").to_value();
        assert_eq!(
            value["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            DEFAULT_CPU_UTILIZATION
        );
    }

    #[test]
    fn what_v1_cannot_say_round_trips_through_annotations() {
        let memory = json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}});
        let behavior = json!({"scaleDown": {"stabilizationWindowSeconds": 60}});
        let conditions = json!([{"type": "AbleToScale", "status": "True"}]);
        let v2 = hpa(
            "autoscaling/v2",
            json!({"scaleTargetRef": target(), "maxReplicas": 5, "behavior": behavior,
                   "metrics": [memory.clone(), {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}]}),
            json!({"currentReplicas": 1, "desiredReplicas": 1, "conditions": conditions}),
        );
        let v1 = convert(&v2, "autoscaling/v1");
        let annotations = v1.meta().annotations.clone().unwrap();
        let memory_v1 = json!([{"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "500Mi"}}]);
        assert_eq!(
            serde_json::from_str::<Value>(&annotations[METRICS]).unwrap(),
            memory_v1
        );
        assert!(annotations.contains_key(BEHAVIOR));
        assert!(annotations.contains_key(CONDITIONS));
        assert_eq!(v1.to_value()["spec"]["targetCPUUtilizationPercentage"], 70);
        let back = convert(&v1, "autoscaling/v2");
        assert_eq!(back.meta().annotations, None);
        let value = back.to_value();
        assert_eq!(value["spec"]["behavior"], behavior);
        assert_eq!(value["status"]["conditions"], conditions);
        assert_eq!(value["spec"]["metrics"].as_array().unwrap().len(), 2);
    }

    // Convert_autoscaling_{Object,External,Pods}MetricSource_To_v1_* and back (the target
    // type inferred from the v1 fields).
    #[test]
    fn object_external_and_pods_metrics_take_their_v1_forms_and_back() {
        let object = json!({"type": "Object", "object": {
            "describedObject": {"kind": "Ingress", "name": "main", "apiVersion": "networking.k8s.io/v1"},
            "metric": {"name": "hits"}, "target": {"type": "Value", "value": "10k"}}});
        let external = json!({"type": "External", "external": {
            "metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "30"}}});
        let pods = json!({"type": "Pods", "pods": {
            "metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1"}}});
        assert_eq!(
            metric_v1(&object, Part::Spec),
            json!({"type": "Object", "object": {
                "target": {"kind": "Ingress", "name": "main", "apiVersion": "networking.k8s.io/v1"},
                "metricName": "hits", "targetValue": "10k"}})
        );
        assert_eq!(
            metric_v1(&external, Part::Spec),
            json!({"type": "External", "external": {"metricName": "queue", "targetAverageValue": "30"}})
        );
        for metric in [object, external, pods] {
            assert_eq!(
                metric_v2(&metric_v1(&metric, Part::Spec), Part::Spec),
                metric
            );
        }
    }
}
