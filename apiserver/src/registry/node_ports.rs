//! Node ports of NodePort and LoadBalancer services, allocated from the server's node port
//! range as Kubernetes' `pkg/registry/core/service/storage/alloc.go` (`initNodePorts` at
//! create, `updateNodePorts` at update) with `portallocator`'s errors. As for cluster IPs
//! (service_ip.rs), the ports in use are those of the stored services, so a port is released
//! when its service is deleted or stops needing it, on every storage and across restarts; two
//! writes racing for the same free port can both get it.

use std::collections::{HashMap, HashSet};

use rand::Rng;
use serde_json::{Map, Value, json};

use super::Target;
use crate::error::ApiError;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::shared::PortRange;
use crate::validation;

/// The node ports of every stored service but `except` (namespace and name: the service being
/// updated, whose own ports are its to keep).
pub(super) async fn in_use(
    target: &Target<'_>,
    except: Option<&str>,
) -> Result<HashSet<i64>, ApiError> {
    Ok(super::service_ip::stored(target)
        .await?
        .iter()
        .filter(|svc| !super::service_ip::is_named(target, svc, except))
        .flat_map(|svc| node_ports(svc.data().get("spec").unwrap_or(&Value::Null)))
        .collect())
}

/// Whether a service of this spec gets node ports (`shouldAllocateNodePorts`): NodePort, and
/// LoadBalancer unless `allocateLoadBalancerNodePorts: false`.
fn should_allocate(spec: &Value) -> bool {
    match spec.get("type").and_then(Value::as_str) {
        Some("NodePort") => true,
        Some("LoadBalancer") => spec
            .get("allocateLoadBalancerNodePorts")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        _ => false,
    }
}

/// Whether a service of this type may have node ports (`needsNodePort`).
pub(crate) fn needs_node_ports(spec: &Value) -> bool {
    matches!(
        spec.get("type").and_then(Value::as_str),
        Some("NodePort" | "LoadBalancer")
    )
}

/// The non-zero node ports of a spec's ports.
pub(crate) fn node_ports(spec: &Value) -> Vec<i64> {
    ports(spec)
        .iter()
        .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
        .filter(|n| *n != 0)
        .collect()
}

fn ports(spec: &Value) -> &[Value] {
    spec.get("ports")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The allocations of one write: the range, the ports other services hold and the ones this
/// write took.
struct Allocator<'a> {
    def: &'a ResourceDef,
    name: &'a str,
    range: PortRange,
    used: &'a HashSet<i64>,
    taken: HashSet<i64>,
}

impl Allocator<'_> {
    /// `portallocator.Allocate` of a requested port, its error as the port's field error.
    fn allocate(&mut self, index: usize, port: i64) -> Result<(), ApiError> {
        let error = if !self.range.contains(port) {
            format!(
                "provided port is not in the valid range. The range of valid ports is {}",
                self.range
            )
        } else if self.used.contains(&port) || !self.taken.insert(port) {
            "provided port is already allocated".to_owned()
        } else {
            return Ok(());
        };
        let field = format!("spec.ports[{index}].nodePort");
        let cause = validation::field::invalid(&field, &port.to_string(), &error);
        Err(validation::invalid(self.def, self.name, &[cause]))
    }

    /// `AllocateNext`: a free port of the range, from a random start.
    fn next(&mut self) -> Result<i64, ApiError> {
        let size = i64::from(self.range.size);
        let start = rand::rng().random_range(0..size);
        let port = (0..size)
            .map(|i| i64::from(self.range.base) + (start + i) % size)
            .find(|p| !self.used.contains(p) && !self.taken.contains(p))
            .ok_or_else(|| ApiError::internal("failed to allocate a nodePort: range is full"))?;
        self.taken.insert(port);
        Ok(port)
    }
}

fn set_node_port(spec: &mut Map<String, Value>, index: usize, port: i64) {
    if let Some(p) = spec
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .and_then(|ports| ports.get_mut(index))
        .and_then(Value::as_object_mut)
    {
        p.insert("nodePort".into(), json!(port));
    }
}

/// Allocates the node ports of a service's spec written over `old` (None: a new service):
/// requested ports are checked to be in range and free, missing ones allocated (ports of one
/// service sharing a `port` number share a node port at create).
pub(super) fn allocate(
    def: &ResourceDef,
    name: &str,
    spec: &mut Map<String, Value>,
    old: Option<&Value>,
    used: &HashSet<i64>,
    range: PortRange,
) -> Result<(), ApiError> {
    let view = Value::Object(spec.clone());
    let allocate_new = should_allocate(&view);
    let kept: HashSet<i64> = old
        .map(node_ports)
        .unwrap_or_default()
        .into_iter()
        .collect();
    let mut alloc = Allocator {
        def,
        name,
        range,
        used,
        taken: HashSet::new(),
    };
    let mut by_port: HashMap<i64, i64> = HashMap::new();
    for (i, port) in ports(&view).iter().enumerate() {
        let requested = port.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
        if requested == 0 && !allocate_new {
            continue;
        }
        let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
        let shared = old
            .is_none()
            .then(|| by_port.get(&number).copied())
            .flatten();
        let node_port = match (requested, shared) {
            (0, Some(shared)) => shared,
            (0, None) => alloc.next()?,
            (requested, Some(shared)) if requested == shared => requested,
            (requested, _) if kept.contains(&requested) => requested,
            (requested, _) => {
                alloc.allocate(i, requested)?;
                requested
            }
        };
        by_port.entry(number).or_insert(node_port);
        if requested == 0 {
            set_node_port(spec, i, node_port);
        }
    }
    Ok(())
}

/// What an update of a service allocates node ports (and, leaving ExternalName, a cluster IP)
/// from: the ports and addresses of the other services and the ranges.
pub(crate) struct ForUpdate {
    used: HashSet<i64>,
    range: PortRange,
    cluster_ips: HashSet<std::net::Ipv4Addr>,
    cidr: crate::shared::Ipv4Cidr,
}

/// Reads the ports in use before an update of `name` through `main` (the object itself, not
/// `/status`) when `target` holds services.
pub(super) async fn for_update(
    target: &Target<'_>,
    name: &str,
    main: bool,
) -> Result<Option<ForUpdate>, ApiError> {
    if !main || !is_service(target.def) {
        return Ok(None);
    }
    Ok(Some(ForUpdate {
        used: in_use(target, Some(name)).await?,
        range: target.shared.config.service_node_port_range,
        cluster_ips: super::service_ip::used(target, Some(name)).await?,
        cidr: target.shared.config.service_cidr,
    }))
}

/// Whether `def` is core's services.
pub(super) fn is_service(def: &ResourceDef) -> bool {
    def.api.group.is_empty() && def.api.kind == "Service"
}

impl ForUpdate {
    /// Allocates the node ports of `next`, the validated update of `old`.
    pub(super) fn allocate(
        &self,
        def: &ResourceDef,
        name: &str,
        next: &mut Object,
        old: &Object,
    ) -> Result<(), ApiError> {
        let old_spec = old.data().get("spec").cloned().unwrap_or_default();
        let mut data = next.data();
        if let Some(spec) = data.get_mut("spec").and_then(Value::as_object_mut) {
            // A service leaving ExternalName gets a cluster IP, as at create (`allocateUpdate`).
            let external =
                |s: &Value| s.get("type").and_then(Value::as_str) == Some("ExternalName");
            if external(&old_spec) && !external(&Value::Object(spec.clone())) {
                super::service_ip::assign(def, name, self.cidr, &self.cluster_ips, spec)?;
            }
            allocate(def, name, spec, Some(&old_spec), &self.used, self.range)?;
        }
        next.set_data(data);
        Ok(())
    }
}

/// Allocates the node ports of a new service's spec.
pub(super) async fn allocate_create(
    target: &Target<'_>,
    name: &str,
    spec: &mut Map<String, Value>,
) -> Result<(), ApiError> {
    let view = Value::Object(spec.clone());
    if !needs_node_ports(&view) && node_ports(&view).is_empty() {
        return Ok(());
    }
    let used = in_use(target, None).await?;
    let range = target.shared.config.service_node_port_range;
    allocate(target.def, name, spec, None, &used, range)
}
