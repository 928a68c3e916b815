//! HorizontalPodAutoscalers (`pkg/apis/autoscaling/v1/defaults.go` and
//! `pkg/apis/autoscaling/v2/defaults.go`, with its `GenerateHPAScaleUpRules` and
//! `GenerateHPAScaleDownRules`).

use serde_json::{Map, Value, json};

use super::{object_at, object_entry, set_default};

/// `autoscaling.DefaultCPUUtilization`.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// autoscaling/v1: one replica at least.
pub(super) fn hpa_v1(obj: &mut Map<String, Value>) {
    if let Some(spec) = object_entry(obj, "spec") {
        set_default(spec, "minReplicas", 1);
    }
}

/// autoscaling/v2: one replica at least, a CPU target of 80% without metrics, and the scaling
/// rules of a given `behavior` completed.
pub(super) fn hpa_v2(obj: &mut Map<String, Value>) {
    let Some(spec) = object_entry(obj, "spec") else {
        return;
    };
    set_default(spec, "minReplicas", 1);
    if spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]),
        );
    }
    let Some(behavior) = object_at(spec, "behavior") else {
        return;
    };
    if let Some(up) = object_entry(behavior, "scaleUp") {
        set_default(up, "stabilizationWindowSeconds", 0);
        set_default(up, "selectPolicy", "Max");
        set_default(
            up,
            "policies",
            json!([{"type": "Pods", "value": 4, "periodSeconds": 15},
                   {"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
    }
    // The scale-down window stays unset: the controller's
    // --horizontal-pod-autoscaler-downscale-stabilization applies.
    if let Some(down) = object_entry(behavior, "scaleDown") {
        set_default(down, "selectPolicy", "Max");
        set_default(
            down,
            "policies",
            json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
    }
}
