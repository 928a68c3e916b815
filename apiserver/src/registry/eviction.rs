//! The `eviction` subresource of pods (`pkg/registry/core/pod/storage/eviction.go`): an
//! `Eviction` deletes a pod unless its PodDisruptionBudget allows no disruption, and counts
//! the disruption in the budget's status.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube_core::{Resource, Selector, SelectorExt};
use serde_json::{Value, json};

use super::delete::{DeleteRequest, delete};
use super::{Target, guaranteed_update, now};
use crate::deletion::{DeleteOptions, Propagation};
use crate::error::ApiError;
use crate::object::Object;
use crate::storage::{ListRequest, Preconditions, UpdateFn};

const BUDGET_VIOLATED: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// POST of an `Eviction` to `pods/{name}/eviction`: the pod is deleted with the eviction's
/// `deleteOptions` when it may be disrupted. Answers a `Status` Success.
pub(crate) async fn evict(
    target: &Target<'_>,
    name: &str,
    eviction: &Value,
) -> Result<Value, ApiError> {
    super::check_body_name(eviction, name, "Eviction")?;
    let options = eviction.get("deleteOptions").unwrap_or(&Value::Null);
    // `propagateDryRun`: the eviction's own `dryRun` counts when the request sets none.
    let in_body = options.get("dryRun").and_then(Value::as_array);
    let dry_run = match in_body.filter(|d| !d.is_empty()) {
        Some(d) if target.dry_run && d.iter().any(|v| v != "All") => {
            return Err(ApiError::unconverted(format!(
                "Non-matching dry-run options in request and content: [All] and {}",
                go_list(d)
            )));
        }
        Some(_) => true,
        None => target.dry_run,
    };
    let target = &Target {
        shared: target.shared,
        def: target.def,
        namespace: target.namespace,
        dry_run,
    };
    let pod = target
        .get(name)
        .await?
        .ok_or_else(|| target.not_found(name))?;
    let mut request = delete_request(options)?;
    let rv_given = request.preconditions.resource_version.is_some();
    let mut budget_name = None;
    if !can_ignore_budget(&pod) {
        let budgets = budgets_of(target, &pod).await?;
        match budgets.as_slice() {
            [] => {}
            [budget] => {
                check_and_decrement(target, budget, &pod, name).await?;
                budget_name = budget.meta().name.clone();
            }
            // Answered as a Status with code 500, not an error status (no reason).
            _ => {
                return Err(ApiError::unconverted(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                ));
            }
        }
    }
    // A pod that may still become ready is deleted only at the version the decision read,
    // so that no other disruption races the eviction.
    let enforce =
        !matches!(&*phase(&pod), "Succeeded" | "Failed") && pod.meta().deletion_timestamp.is_none();
    if enforce && !rv_given {
        request.preconditions.resource_version = Some(pod.resource_version_u64());
    }
    match delete(target, name, request).await {
        Err(e) if e.code == 409 && enforce && !rv_given => {
            Err(still_processed(budget_name.as_deref().unwrap_or_default()))
        }
        Err(e) => Err(e),
        Ok(_) => Ok(super::created_status()),
    }
}

/// A list of strings as Go's `%v` prints it (`[a b]`).
fn go_list(values: &[Value]) -> String {
    let items: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
    format!("[{}]", items.join(" "))
}

fn phase(pod: &Object) -> std::borrow::Cow<'_, str> {
    pod.field("status.phase").unwrap_or_default()
}

/// `createTooManyRequestsError`: 429, retry after 10 s.
fn still_processed(budget: &str) -> ApiError {
    let cause = format!("The disruption budget {budget} is still being processed by the server.");
    ApiError::new(429, "TooManyRequests", BUDGET_VIOLATED).with_details(json!({
        "causes": [{"reason": "DisruptionBudget", "message": cause}],
        "retryAfterSeconds": 10
    }))
}

/// `canIgnorePDB`: a pod that has finished, has not started (`Pending`) or is being deleted
/// disrupts nothing.
fn can_ignore_budget(pod: &Object) -> bool {
    matches!(&*phase(pod), "Succeeded" | "Failed" | "Pending")
        || pod.meta().deletion_timestamp.is_some()
}

/// Whether the pod's `Ready` condition is True (`IsPodReady`).
fn is_ready(pod: &Object) -> bool {
    pod.data()
        .get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// The PodDisruptionBudgets of the pod's namespace whose selector selects it (a missing or
/// empty selector selects nothing here, as in eviction.go).
async fn budgets_of(target: &Target<'_>, pod: &Object) -> Result<Vec<Arc<Object>>, ApiError> {
    let Some(def) = target.shared.find("policy", "v1", "poddisruptionbudgets") else {
        return Ok(Vec::new());
    };
    let namespace = pod.meta().namespace.clone().unwrap_or_default();
    let prefix = def.storage_key(Some(&namespace), "");
    let listed = target
        .shared
        .storage
        .list(ListRequest {
            prefix,
            revision: None,
            start_key: None,
            limit: None,
        })
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let labels = pod.meta().labels.clone().unwrap_or_default();
    Ok(listed
        .items
        .into_iter()
        .filter(|b| selects(b, &labels))
        .collect())
}

fn selects(budget: &Object, labels: &BTreeMap<String, String>) -> bool {
    let selector = budget
        .data()
        .get("spec")
        .and_then(|s| s.get("selector"))
        .cloned()
        .and_then(|s| serde_json::from_value::<LabelSelector>(s).ok());
    let Some(selector) = selector.and_then(|s| Selector::try_from(s).ok()) else {
        return false;
    };
    !selector.selects_all() && selector.matches(labels)
}

/// 429 TooManyRequests with the budget's cause.
fn too_many_requests(cause: String) -> ApiError {
    ApiError::new(429, "TooManyRequests", BUDGET_VIOLATED).with_details(json!({
        "causes": [{"reason": "DisruptionBudget", "message": cause}]
    }))
}

/// `checkAndDecrement` (after the unhealthy-pod rules): refuses the eviction when the budget
/// allows no disruption (or has not been observed since its last change), else takes one
/// disruption from `status.disruptionsAllowed` and records the pod in `disruptedPods`, in
/// one storage update of the budget.
async fn check_and_decrement(
    target: &Target<'_>,
    budget: &Object,
    pod: &Object,
    pod_name: &str,
) -> Result<(), ApiError> {
    let Some(def) = target.shared.find("policy", "v1", "poddisruptionbudgets") else {
        return Ok(());
    };
    let status_of = |b: &Object, field: &str| {
        b.data()
            .get("status")
            .and_then(|s| s.get(field))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    if !is_ready(pod) {
        let policy = budget.field("spec.unhealthyPodEvictionPolicy");
        let healthy = status_of(budget, "currentHealthy");
        let desired = status_of(budget, "desiredHealthy");
        if policy.as_deref() == Some("AlwaysAllow") || (desired > 0 && healthy >= desired) {
            return Ok(());
        }
    }
    let budget_name = budget.meta().name.clone().unwrap_or_default();
    let pod_name = pod_name.to_owned();
    let pdb_def = Arc::clone(&def);
    let f: UpdateFn = Box::new(move |cur| {
        let cur = cur.ok_or_else(|| super::not_found(&pdb_def, &budget_name))?;
        let generation = cur.meta().generation.unwrap_or(0);
        if status_of(cur, "observedGeneration") < generation {
            return Err(still_processed(&budget_name));
        }
        let allowed = status_of(cur, "disruptionsAllowed");
        if allowed < 0 {
            // NewForbidden on `poddisruptionbudget.policy`.
            return Err(ApiError::new(
                403,
                "Forbidden",
                format!("poddisruptionbudget.policy \"{budget_name}\" is forbidden: pdb disruptions allowed is negative"),
            )
            .with_details(json!({"name": budget_name, "group": "policy", "kind": "poddisruptionbudget"})));
        }
        if allowed == 0 {
            return Err(too_many_requests(format!(
                "The disruption budget {budget_name} needs {} healthy pods and has {} currently",
                status_of(cur, "desiredHealthy"),
                status_of(cur, "currentHealthy")
            )));
        }
        let mut value = cur.to_value();
        let time = serde_json::to_value(now()).unwrap_or_default();
        let status = &mut value["status"];
        status["disruptionsAllowed"] = json!(allowed - 1);
        if !status["disruptedPods"].is_object() {
            status["disruptedPods"] = json!({});
        }
        status["disruptedPods"][&pod_name] = time.clone();
        if allowed == 1 {
            insufficient_pods(status, time);
        }
        Object::from_value(value)
            .map_err(|e| ApiError::internal(format!("budget {budget_name}: {e}")))
    });
    let pdb_target = Target {
        shared: target.shared,
        def: &def,
        namespace: budget.meta().namespace.as_deref(),
        dry_run: target.dry_run,
    };
    let name = budget.meta().name.clone().unwrap_or_default();
    guaranteed_update(&pdb_target, &name, f).await?;
    Ok(())
}

/// `UpdateDisruptionAllowedCondition` once no disruption is left: the `DisruptionAllowed`
/// condition False for `InsufficientPods` (`SetStatusCondition`: the transition time changes
/// with the status only).
fn insufficient_pods(status: &mut Value, time: Value) {
    let observed = status["observedGeneration"].clone();
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let Some(conditions) = status["conditions"].as_array_mut() else {
        return;
    };
    let condition = match conditions
        .iter_mut()
        .position(|c| c["type"] == "DisruptionAllowed")
    {
        Some(i) => &mut conditions[i],
        None => {
            conditions.push(json!({"type": "DisruptionAllowed", "message": ""}));
            let last = conditions.len() - 1;
            &mut conditions[last]
        }
    };
    if condition["status"] != "False" {
        condition["status"] = json!("False");
        condition["lastTransitionTime"] = time;
    }
    condition["reason"] = json!("InsufficientPods");
    condition["observedGeneration"] = observed;
}

/// The delete an eviction's `deleteOptions` ask for.
fn delete_request(options: &Value) -> Result<DeleteRequest, ApiError> {
    let pre = options.get("preconditions").unwrap_or(&Value::Null);
    let resource_version = match pre.get("resourceVersion").and_then(Value::as_str) {
        Some(rv) if !rv.is_empty() => Some(
            crate::resource_version::parse(rv)
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?,
        ),
        _ => None,
    };
    let propagation = options
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .and_then(Propagation::parse);
    Ok(DeleteRequest {
        preconditions: Preconditions {
            resource_version,
            uid: pre.get("uid").and_then(Value::as_str).map(str::to_owned),
        },
        options: DeleteOptions {
            propagation,
            orphan_dependents: options.get("orphanDependents").and_then(Value::as_bool),
            grace_period_seconds: options.get("gracePeriodSeconds").and_then(Value::as_i64),
        },
        // The eviction's own `dryRun` already made its target a dry run (`propagateDryRun`).
        dry_run: false,
    })
}
