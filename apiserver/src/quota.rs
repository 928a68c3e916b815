//! ResourceQuotas: what a quota counts (`pkg/quota/v1/evaluator/core`: object counts, a pod's
//! compute requests and limits, claims' storage, load balancers and node ports), the quota
//! controller's `status` (`hard` from the spec, `used` recomputed when a quota is written and
//! when a counted object is deleted), and the ResourceQuota admission plugin
//! (`plugin/pkg/admission/resourcequota/controller.go`): a create that would take a quota's
//! usage past its hard limit is refused with 403 `exceeded quota: ...`, else the quota's
//! `status.used` grows by what the object uses, in the same atomic update.
//!
//! Nothing is read or written for a create in a namespace without quotas but one look at the
//! quotas' watch cache.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_core::Resource;
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::filter::Filter;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::shared::Shared;
use crate::storage::ListRequest;
use crate::validation::quantity::Quantity;

/// Resource name → quantity, in name order (Go's `prettyPrint` sorts).
type Usage = BTreeMap<String, Quantity>;

/// The core resources whose object counts have a legacy name (`pods`, not only `count/pods`).
const LEGACY_COUNTS: &[&str] = &[
    "pods",
    "services",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "resourcequotas",
];
/// The compute resources of a pod's containers a quota may track.
const COMPUTE: &[&str] = &["cpu", "memory", "ephemeral-storage"];

pub(crate) fn is_quota(def: &ResourceDef) -> bool {
    def.api.group.is_empty() && def.api.kind == "ResourceQuota"
}

fn is_core(def: &ResourceDef, kind: &str) -> bool {
    def.api.group.is_empty() && def.api.kind == kind
}

fn count(n: usize) -> Quantity {
    Quantity::parse(&n.to_string()).unwrap_or_else(|_| Quantity::zero())
}

fn add(usage: &mut Usage, name: &str, q: &Quantity) {
    let sum = match usage.get(name) {
        Some(old) => old.add(q).unwrap_or_else(|| old.clone()),
        None => q.clone(),
    };
    usage.insert(name.to_owned(), sum);
}

/// A pod in a terminal phase uses nothing (`QuotaV1Pod`).
fn terminal(data: &Map<String, Value>) -> bool {
    matches!(
        data.get("status")
            .and_then(|s| s.get("phase"))
            .and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

/// `PodRequests` / `PodLimits` of one kind (`requests` or `limits`): the containers' sum, at
/// least each init container's.
fn pod_resources(spec: &Value, kind: &str) -> Usage {
    let of = |c: &Value, r: &str| {
        c.get("resources")
            .and_then(|x| x.get(kind))
            .and_then(|x| x.get(r))
            .and_then(Quantity::from_json)
    };
    let mut total = Usage::new();
    for c in spec["containers"].as_array().into_iter().flatten() {
        for r in COMPUTE {
            if let Some(q) = of(c, r) {
                add(&mut total, r, &q);
            }
        }
    }
    for c in spec["initContainers"].as_array().into_iter().flatten() {
        for r in COMPUTE {
            if let Some(q) = of(c, r)
                && total.get(*r).is_none_or(|t| q.cmp_value(t).is_gt())
            {
                total.insert((*r).to_owned(), q);
            }
        }
    }
    total
}

/// What `obj` of `def` uses, by quota resource name.
fn usage_of(def: &ResourceDef, obj: &Object) -> Usage {
    let data = obj.data();
    let mut usage = Usage::new();
    if is_core(def, "Pod") && terminal(&data) {
        return usage;
    }
    let one = count(1);
    usage.insert(format!("count/{}", def.qualified_plural()), one.clone());
    if def.api.group.is_empty() && LEGACY_COUNTS.contains(&def.api.plural.as_str()) {
        usage.insert(def.api.plural.clone(), one.clone());
    }
    let spec = data.get("spec").cloned().unwrap_or_default();
    if is_core(def, "Pod") {
        for (name, q) in pod_resources(&spec, "requests") {
            add(&mut usage, &format!("requests.{name}"), &q);
            add(&mut usage, &name, &q);
        }
        for (name, q) in pod_resources(&spec, "limits") {
            add(&mut usage, &format!("limits.{name}"), &q);
        }
    } else if is_core(def, "Service") {
        let kind = spec["type"].as_str().unwrap_or("ClusterIP");
        if kind == "LoadBalancer" {
            usage.insert("services.loadbalancers".into(), one);
        }
        if kind == "LoadBalancer" || kind == "NodePort" {
            let ports = spec["ports"].as_array().map_or(0, Vec::len);
            usage.insert("services.nodeports".into(), count(ports));
        }
    } else if is_core(def, "PersistentVolumeClaim")
        && let Some(q) = Quantity::from_json(&spec["resources"]["requests"]["storage"])
    {
        usage.insert("requests.storage".into(), q);
    }
    usage
}

/// The quotas of `namespace`, as the quotas' watch cache has them.
fn quotas_of(shared: &Shared, namespace: &str) -> Option<(Arc<ResourceDef>, Vec<Arc<Object>>)> {
    let served = shared.served();
    let def = served.resources.iter().find(|d| is_quota(d))?;
    let cache = shared.cache(def)?;
    let filter = Filter {
        namespace: Some(namespace.to_owned()),
        ..Filter::default()
    };
    let (quotas, _) = cache.list(&filter);
    (!quotas.is_empty()).then(|| (Arc::clone(def), quotas))
}

fn quantities(value: &Value) -> Usage {
    value
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), Quantity::from_json(v)?)))
        .collect()
}

/// Go's `prettyPrint` of a resource list: `a=1,b=2`.
fn pretty(usage: &Usage) -> String {
    usage
        .iter()
        .map(|(k, q)| format!("{k}={}", q.canonical()))
        .collect::<Vec<_>>()
        .join(",")
}

fn to_json(usage: &Usage) -> Value {
    Value::Object(
        usage
            .iter()
            .map(|(k, q)| (k.clone(), Value::String(q.canonical())))
            .collect(),
    )
}

/// The compute resources a pod's containers must all state for `hard`
/// (`enforcePodContainerConstraints`): `requests.cpu for: c1,c2` for each one missing.
fn missing_constraints(obj: &Object, hard: &Usage) -> Vec<String> {
    let spec = obj.data().get("spec").cloned().unwrap_or_default();
    let mut missing = Vec::new();
    for name in hard.keys() {
        let (kind, resource) = match name.split_once('.') {
            Some(("requests", r)) => ("requests", r),
            Some(("limits", r)) => ("limits", r),
            None if COMPUTE.contains(&name.as_str()) => ("requests", name.as_str()),
            _ => continue,
        };
        if !COMPUTE.contains(&resource) {
            continue;
        }
        let lacking: Vec<&str> = spec["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["resources"][kind][resource].is_null())
            .filter_map(|c| c["name"].as_str())
            .collect();
        if !lacking.is_empty() {
            missing.push(format!("{name} for: {}", lacking.join(",")));
        }
    }
    missing
}

/// The ResourceQuota admission of a create of `obj` (of `def`, named `name`): for each quota
/// of its namespace tracking what it uses, the new usage within the hard limits (403
/// otherwise), recorded in the quota's `status.used` unless `dry_run`.
pub(crate) async fn admit_create(
    shared: &Shared,
    def: &ResourceDef,
    obj: &Object,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let Some(namespace) = obj.meta().namespace.clone().filter(|_| def.namespaced) else {
        return Ok(());
    };
    let Some((quota_def, quotas)) = quotas_of(shared, &namespace) else {
        return Ok(());
    };
    let requested = usage_of(def, obj);
    for quota in quotas {
        let quota_name = quota.meta().name.clone().unwrap_or_default();
        let hard = quantities(&quota.to_value()["spec"]["hard"]);
        if !requested.keys().any(|k| hard.contains_key(k)) {
            continue;
        }
        if is_core(def, "Pod") {
            let missing = missing_constraints(obj, &hard);
            if !missing.is_empty() {
                let why = format!(
                    "failed quota: {quota_name}: must specify {}",
                    missing.join("; ")
                );
                return Err(crate::admission::forbidden(def, name, &why));
            }
        }
        let (def_c, name_c) = (def.clone(), name.to_owned());
        let requested_c = requested.clone();
        let update: crate::storage::UpdateFn = Box::new(move |current| {
            let Some(current) = current else {
                return Err(ApiError::not_found("", "resourcequotas", &quota_name));
            };
            let value = current.to_value();
            let status_hard = quantities(&value["status"]["hard"]);
            let mut used = quantities(&value["status"]["used"]);
            let mut exceeded = Vec::new();
            for (resource, q) in requested_c.iter().filter(|(k, _)| hard.contains_key(*k)) {
                let Some(limit) = status_hard.get(resource) else {
                    let why =
                        format!("status unknown for quota: {quota_name}, resource: {resource}");
                    return Err(crate::admission::forbidden(&def_c, &name_c, &why));
                };
                let before = used.get(resource).cloned().unwrap_or_else(Quantity::zero);
                let after = before.add(q).unwrap_or(before.clone());
                if after.cmp_value(limit).is_gt() {
                    exceeded.push(resource.clone());
                }
                used.insert(resource.clone(), after);
            }
            if !exceeded.is_empty() {
                let mask = |u: &Usage| -> Usage {
                    u.iter()
                        .filter(|(k, _)| exceeded.contains(k))
                        .map(|(k, q)| (k.clone(), q.clone()))
                        .collect()
                };
                let old_used = quantities(&value["status"]["used"]);
                let why = format!(
                    "exceeded quota: {quota_name}, requested: {}, used: {}, limited: {}",
                    pretty(&mask(&requested_c)),
                    pretty(&mask(&old_used)),
                    pretty(&mask(&status_hard))
                );
                return Err(crate::admission::forbidden(&def_c, &name_c, &why));
            }
            let mut next = (**current).clone();
            let mut data = next.data();
            if let Some(status) = data.get_mut("status").and_then(Value::as_object_mut) {
                status.insert("used".into(), to_json(&used));
            }
            next.set_data(data);
            Ok(next)
        });
        let key =
            quota_def.storage_key(Some(&namespace), quota.meta().name.as_deref().unwrap_or(""));
        if dry_run {
            let current = shared.storage.get(key).await.ok().flatten();
            let mut update = update;
            update(current.as_ref())?;
        } else {
            shared
                .storage
                .guaranteed_update(key, update)
                .await
                .map_err(|e| match e {
                    crate::storage::StorageError::Rejected(err) => err,
                    other => ApiError::internal(other.to_string()),
                })?;
        }
    }
    Ok(())
}

/// The resources whose objects a quota resource name counts, among `defs`.
fn counted_by<'a>(defs: &'a [Arc<ResourceDef>], resource: &str) -> Option<&'a Arc<ResourceDef>> {
    let core = |kind: &str| defs.iter().find(|d| is_core(d, kind));
    if let Some(plural) = resource.strip_prefix("count/") {
        return defs.iter().find(|d| d.qualified_plural() == plural);
    }
    if LEGACY_COUNTS.contains(&resource) {
        return defs
            .iter()
            .find(|d| d.api.group.is_empty() && d.api.plural == resource);
    }
    if resource.starts_with("services.") {
        return core("Service");
    }
    if resource == "requests.storage" {
        return core("PersistentVolumeClaim");
    }
    let compute = resource
        .strip_prefix("requests.")
        .or_else(|| resource.strip_prefix("limits."))
        .unwrap_or(resource);
    COMPUTE.contains(&compute).then(|| core("Pod")).flatten()
}

/// The quota controller's sync of `quota` (in `namespace`): `status.hard` is the spec's,
/// `status.used` what the namespace's objects use now, read from storage.
pub(crate) async fn sync(
    shared: &Shared,
    namespace: &str,
    quota_name: &str,
) -> Result<(), ApiError> {
    let served = shared.served();
    let Some(quota_def) = served.resources.iter().find(|d| is_quota(d)) else {
        return Ok(());
    };
    let key = quota_def.storage_key(Some(namespace), quota_name);
    let Some(quota) = shared.storage.get(key.clone()).await.ok().flatten() else {
        return Ok(());
    };
    let hard = quantities(&quota.to_value()["spec"]["hard"]);
    let mut used = Usage::new();
    for resource in hard.keys() {
        let mut total = Quantity::zero();
        if let Some(def) = counted_by(&served.resources, resource) {
            let list = shared
                .storage
                .list(ListRequest {
                    prefix: format!("{}{namespace}/", def.key_prefix()),
                    ..ListRequest::default()
                })
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?;
            for obj in &list.items {
                if let Some(q) = usage_of(def, obj).get(resource) {
                    total = total.add(q).unwrap_or(total);
                }
            }
        }
        used.insert(resource.clone(), total);
    }
    let (hard_json, used_json) = (quota.to_value()["spec"]["hard"].clone(), to_json(&used));
    let update: crate::storage::UpdateFn = Box::new(move |current| {
        let Some(current) = current else {
            return Err(ApiError::not_found("", "resourcequotas", ""));
        };
        let mut next = (**current).clone();
        let mut data = next.data();
        data.insert(
            "status".into(),
            json!({"hard": hard_json, "used": used_json}),
        );
        next.set_data(data);
        Ok(next)
    });
    shared
        .storage
        .guaranteed_update(key, update)
        .await
        .map(drop)
        .map_err(|e| ApiError::internal(e.to_string()))
}

/// After `def`'s object was removed from `namespace`: the quotas counting it are synced
/// (the quota controller's replenishment).
pub(crate) async fn replenish(shared: &Shared, def: &ResourceDef, namespace: Option<&str>) {
    let Some(namespace) = namespace.filter(|_| def.namespaced) else {
        return;
    };
    let Some((_, quotas)) = quotas_of(shared, namespace) else {
        return;
    };
    for quota in quotas {
        let name = quota.meta().name.clone().unwrap_or_default();
        if let Err(e) = sync(shared, namespace, &name).await {
            tracing::warn!(namespace, quota = %name, error = %e, "quota sync failed");
        }
    }
}
