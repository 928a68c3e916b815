//! Printers of HorizontalPodAutoscalers and PodDisruptionBudgets
//! (`printHorizontalPodAutoscaler` with `formatHPAMetrics`, `printPodDisruptionBudget`).
//! Autoscalers are printed from their stored (v2) form, whatever version a request addresses.

use serde_json::{Map, Value, json};

use super::cells::{age, int, items, text};
use super::{AGE, Cells, Column};
use crate::object::Object;

type Data = Map<String, Value>;

const HPA: &[Column] = &[
    Column(
        "Reference",
        "string",
        0,
        "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.",
    ),
    Column(
        "Targets",
        "string",
        0,
        "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).",
    ),
    Column(
        "MinPods",
        "string",
        0,
        "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.",
    ),
    Column(
        "MaxPods",
        "string",
        0,
        "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.",
    ),
    Column(
        "Replicas",
        "string",
        0,
        "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
    ),
    AGE,
];
const PDB: &[Column] = &[
    Column(
        "Min Available",
        "string",
        0,
        "The minimum number of pods that must be available.",
    ),
    Column(
        "Max Unavailable",
        "string",
        0,
        "The maximum number of pods that may be unavailable.",
    ),
    Column(
        "Allowed Disruptions",
        "integer",
        0,
        "Calculated number of pods that may be disrupted at this time.",
    ),
    AGE,
];

/// The printer of an autoscaling or policy kind.
pub(super) fn printer(group: &str, kind: &str) -> Option<(&'static [Column], Cells)> {
    Some(match (group, kind) {
        ("autoscaling", "HorizontalPodAutoscaler") => (HPA, hpa),
        ("policy", "PodDisruptionBudget") => (PDB, pdb),
        _ => return None,
    })
}

/// A quantity or number as its text.
fn quantity(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<unknown>".to_owned(),
        other => other.to_string(),
    }
}

/// One metric of `formatHPAMetrics`: `current/target`, resources prefixed with their name.
fn metric(spec: &Value, status: Option<&Value>) -> String {
    let ty = spec["type"].as_str().unwrap_or("");
    let source = match ty {
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        "Pods" => "pods",
        "Object" => "object",
        "External" => "external",
        _ => return "<unknown type>".to_owned(),
    };
    let target = &spec[source]["target"];
    let current = status
        .map(|s| &s[source]["current"])
        .filter(|c| !c.is_null());
    let value = |key: &str| current.map_or_else(|| "<unknown>".to_owned(), |c| quantity(&c[key]));
    let pair = if !target["averageValue"].is_null() {
        let avg = if matches!(ty, "Object" | "External") {
            " (avg)"
        } else {
            ""
        };
        format!(
            "{}/{}{avg}",
            value("averageValue"),
            quantity(&target["averageValue"])
        )
    } else if matches!(ty, "Resource" | "ContainerResource") {
        let current = current
            .and_then(|c| c["averageUtilization"].as_i64())
            .map_or_else(|| "<unknown>".to_owned(), |u| format!("{u}%"));
        let target = target["averageUtilization"]
            .as_i64()
            .map_or_else(|| "<auto>".to_owned(), |u| format!("{u}%"));
        format!("{current}/{target}")
    } else {
        format!("{}/{}", value("value"), quantity(&target["value"]))
    };
    match ty {
        "Resource" | "ContainerResource" => {
            format!("{}: {pair}", spec[source]["name"].as_str().unwrap_or(""))
        }
        _ => pair,
    }
}

/// `formatHPAMetrics`: the first two metrics, then `+ N more...`.
fn targets(data: &Data) -> String {
    let statuses: Vec<&Value> = items(data, "/status/currentMetrics").collect();
    let list: Vec<String> = items(data, "/spec/metrics")
        .enumerate()
        .map(|(i, spec)| metric(spec, statuses.get(i).copied()))
        .collect();
    match list.len() {
        0 => "<none>".to_owned(),
        n if n > 2 => format!("{} + {} more...", list[..2].join(", "), n - 2),
        _ => list.join(", "),
    }
}

fn hpa(obj: &Object, data: &Data) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        text(data, "/spec/scaleTargetRef/kind"),
        text(data, "/spec/scaleTargetRef/name")
    );
    let min = match data
        .get("spec")
        .and_then(|s| s.get("minReplicas"))
        .and_then(Value::as_i64)
    {
        Some(m) => m.to_string(),
        None => "<unset>".to_owned(),
    };
    vec![
        json!(reference),
        json!(targets(data)),
        json!(min),
        json!(int(data, "/spec/maxReplicas")),
        json!(int(data, "/status/currentReplicas")),
        age(obj),
    ]
}

/// An int-or-string as `IntOrString.String()`, `N/A` when unset.
fn int_or_string(data: &Data, key: &str) -> String {
    match data.get("spec").and_then(|s| s.get(key)) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "N/A".to_owned(),
    }
}

fn pdb(obj: &Object, data: &Data) -> Vec<Value> {
    vec![
        json!(int_or_string(data, "minAvailable")),
        json!(int_or_string(data, "maxUnavailable")),
        json!(int(data, "/status/disruptionsAllowed")),
        age(obj),
    ]
}
