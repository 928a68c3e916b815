//! The strategy of services (`pkg/registry/core/service/strategy.go`): the empty status at
//! create; at update the status kept, allocated values an update leaves out patched in from
//! the stored service (`patchAllocatedValues`), the fields of a type the service leaves
//! dropped when the update did not change them (`dropTypeDependentFields`: cluster IPs, IP
//! families and the internal traffic policy for ExternalName, node ports and the external
//! traffic policy for ClusterIP and ExternalName), and a cluster IP
//! that may not change. Allocation is in service_ip.rs and node_ports.rs.

use k8s_openapi::api::core;
use serde_json::{Map, Value};

use super::node_ports::{needs_node_ports, node_ports};
use super::strategy::{Strategy, Subresource, prepare_update, set_status};
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::validation::{self, Cause};

/// Services.
pub(crate) struct ServiceStrategy;

/// The fields of a service's spec allocated at create.
const ALLOCATED: &[&str] = &["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"];

/// `needsClusterIP`: every type but ExternalName.
fn needs_cluster_ip(spec: &Value) -> bool {
    spec.get("type").and_then(Value::as_str) != Some("ExternalName")
}

fn missing(spec: &Map<String, Value>, field: &str) -> bool {
    spec.get(field).is_none_or(|v| v.is_null() || v == "")
}

/// `patchAllocatedValues`: what the update leaves out keeps its stored value, node ports
/// matched by port name (unless another port of the update already uses the stored one).
fn patch_allocated(spec: &mut Map<String, Value>, old: &Value) {
    let view = Value::Object(spec.clone());
    if needs_cluster_ip(old) && needs_cluster_ip(&view) {
        for field in ALLOCATED {
            if let (true, Some(value)) = (missing(spec, field), old.get(*field)) {
                spec.insert((*field).to_owned(), value.clone());
            }
        }
    }
    if !(needs_node_ports(old) && needs_node_ports(&view)) {
        return;
    }
    let new_ports = node_ports(&view);
    let used: Vec<i64> = node_ports(old)
        .into_iter()
        .filter(|p| new_ports.contains(p))
        .collect();
    let old_by_name: Vec<(&str, i64)> = old["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let name = p.get("name").and_then(Value::as_str).unwrap_or("");
            (name, p.get("nodePort").and_then(Value::as_i64).unwrap_or(0))
        })
        .collect();
    let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) else {
        return;
    };
    for port in ports.iter_mut().filter_map(Value::as_object_mut) {
        if port.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
            continue;
        }
        let name = port.get("name").and_then(Value::as_str).unwrap_or("");
        let stored = old_by_name.iter().rev().find(|(n, _)| *n == name);
        if let Some(&(_, stored)) = stored.filter(|(_, p)| *p != 0 && !used.contains(p)) {
            port.insert("nodePort".into(), stored.into());
        }
    }
}

/// `dropTypeDependentFields`: leaving a type that needs node ports (cluster IPs) drops those
/// the update did not change.
fn drop_type_dependent(spec: &mut Map<String, Value>, old: &Value) {
    let view = Value::Object(spec.clone());
    let old_ports = node_ports(old);
    let same_node_ports = node_ports(&view).iter().all(|p| old_ports.contains(p));
    if needs_node_ports(old) && !needs_node_ports(&view) && same_node_ports {
        let ports = spec.get_mut("ports").and_then(Value::as_array_mut);
        for port in ports.into_iter().flatten().filter_map(Value::as_object_mut) {
            port.remove("nodePort");
        }
    }
    let external = |spec: &Value| needs_node_ports(spec);
    for (field, needed_before, needed_now) in [
        ("externalTrafficPolicy", external(old), external(&view)),
        (
            "internalTrafficPolicy",
            needs_cluster_ip(old),
            needs_cluster_ip(&view),
        ),
    ] {
        if needed_before
            && !needed_now
            && (missing(spec, field) || spec.get(field) == old.get(field))
        {
            spec.remove(field);
        }
    }
    if needs_cluster_ip(old) && !needs_cluster_ip(&view) {
        let same = |fields: &[&str]| {
            fields
                .iter()
                .all(|f| missing(spec, f) || spec.get(*f) == old.get(*f))
        };
        let drop: Vec<&[&str]> = [
            &["clusterIP", "clusterIPs"][..],
            &["ipFamilies"],
            &["ipFamilyPolicy"],
        ]
        .into_iter()
        .filter(|fields| same(fields))
        .collect();
        for field in drop.into_iter().flatten() {
            spec.remove(*field);
        }
    }
}

impl Strategy for ServiceStrategy {
    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, _def: &ResourceDef, obj: &mut Object) {
        set_status(
            obj,
            serde_json::to_value(core::v1::ServiceStatus::default()).ok(),
        );
    }

    fn prepare_for_update(
        &self,
        def: &ResourceDef,
        new: &mut Object,
        old: &Object,
        sub: Subresource,
    ) {
        prepare_update(def, new, old, sub);
        let old_spec = old.data().get("spec").cloned().unwrap_or_default();
        let mut data = new.data();
        if let Some(spec) = data.get_mut("spec").and_then(Value::as_object_mut) {
            patch_allocated(spec, &old_spec);
            drop_type_dependent(spec, &old_spec);
        }
        new.set_data(data);
    }

    fn validate(&self, _def: &ResourceDef, obj: &Object) -> Vec<Cause> {
        validation::service(&obj.data())
    }

    fn validate_update(&self, _def: &ResourceDef, new: &Object, old: &Object) -> Vec<Cause> {
        let mut causes = validation::service(&new.data());
        let ip = |o: &Object| o.field("spec.clusterIP").map(|ip| ip.into_owned());
        let (new_ip, old_ip) = (ip(new), ip(old));
        let external = new.field("spec.type").as_deref() == Some("ExternalName");
        if old_ip.is_none() || new_ip == old_ip || (external && new_ip.is_none()) {
            return causes;
        }
        let new_ips = new
            .data()
            .get("spec")
            .and_then(|s| s.get("clusterIPs"))
            .cloned()
            .unwrap_or(Value::Null);
        causes.push((
            "spec.clusterIPs[0]".to_owned(),
            format!("Invalid value: {new_ips}: may not change once set"),
        ));
        causes
    }
}
