//! Cluster IPs of services, allocated at create from the server's service range (as
//! Kubernetes' `pkg/registry/core/service/storage/alloc.go`, IPv4 single-stack): the addresses
//! in use are those of the stored services, so allocation holds across restarts and servers
//! sharing one etcd. Two creates racing for the same free address can both get it.

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::sync::Arc;

use kube_core::Resource;
use rand::Rng;
use serde_json::{Map, Value, json};

use super::Target;
use crate::error::ApiError;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::shared::Ipv4Cidr;
use crate::storage::ListRequest;
use crate::validation;

/// Every stored service (the allocations in use are theirs).
pub(super) async fn stored(target: &Target<'_>) -> Result<Vec<Arc<Object>>, ApiError> {
    let page = target
        .shared
        .storage
        .list(ListRequest {
            prefix: target.def.key_prefix(),
            ..ListRequest::default()
        })
        .await
        .map_err(|e| target.status("", e))?;
    Ok(page.items)
}

/// Whether `svc` is the service `name` of the target's namespace.
pub(super) fn is_named(target: &Target<'_>, svc: &Object, name: Option<&str>) -> bool {
    let meta = svc.meta();
    name.is_some_and(|name| {
        meta.name.as_deref() == Some(name) && meta.namespace.as_deref() == target.namespace
    })
}

/// The cluster IPs of every stored service but `except` (the one being updated).
pub(super) async fn used(
    target: &Target<'_>,
    except: Option<&str>,
) -> Result<HashSet<Ipv4Addr>, ApiError> {
    Ok(stored(target)
        .await?
        .iter()
        .filter(|svc| !is_named(target, svc, except))
        .filter_map(|svc| svc.field("spec.clusterIP")?.parse().ok())
        .collect())
}

/// A free address of the range, from a random start (the range's first address, the
/// `kubernetes` service's, and its last are never given).
fn free(cidr: Ipv4Cidr, used: &HashSet<Ipv4Addr>) -> Option<Ipv4Addr> {
    let size = cidr.size().checked_sub(3)?;
    let start = rand::rng().random_range(0..size.max(1));
    (0..size)
        .map(|i| 2 + (start + i) % size)
        .filter_map(|offset| cidr.nth(offset))
        .find(|ip| !used.contains(ip))
}

fn invalid(def: &ResourceDef, name: &str, field: &str, message: String) -> ApiError {
    validation::invalid(def, name, &[(field.to_owned(), message)])
}

/// Allocates the cluster IP of a new service (`spec` of its JSON) and sets `clusterIPs`,
/// `ipFamilies` and `ipFamilyPolicy`. ExternalName services get none; headless services
/// (`clusterIP: None`) keep `None`.
pub(super) async fn allocate(
    target: &Target<'_>,
    name: &str,
    spec: &mut Map<String, Value>,
) -> Result<(), ApiError> {
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return Ok(());
    }
    let used = used(target, None).await?;
    assign(
        target.def,
        name,
        target.shared.config.service_cidr,
        &used,
        spec,
    )
}

/// Allocates the cluster IP of a service `spec` that has none (or has one requested) from
/// `cidr`, the addresses in `used` being taken (see [`allocate`]).
pub(super) fn assign(
    def: &ResourceDef,
    name: &str,
    cidr: Ipv4Cidr,
    used: &HashSet<Ipv4Addr>,
    spec: &mut Map<String, Value>,
) -> Result<(), ApiError> {
    let requested = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty())
        .map(str::to_owned);
    let ip = match requested.as_deref() {
        Some("None") => "None".to_owned(),
        Some(text) => {
            let field = "spec.clusterIPs";
            let quoted = json!([text]);
            let ip: Ipv4Addr = text.parse().map_err(|_| {
                invalid(def, name, field, format!("Invalid value: {quoted}: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
            })?;
            if cidr.offset_of(ip).is_none() {
                return Err(invalid(
                    def,
                    name,
                    field,
                    format!(
                        "Invalid value: {quoted}: failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. The range of valid IPs is {}/{}",
                        cidr.network, cidr.prefix_len
                    ),
                ));
            }
            if used.contains(&ip) {
                return Err(invalid(
                    def,
                    name,
                    field,
                    format!(
                        "Invalid value: {quoted}: failed to allocate IP {ip}: provided IP is already allocated"
                    ),
                ));
            }
            ip.to_string()
        }
        None => free(cidr, used)
            .ok_or_else(|| ApiError::internal("failed to allocate a serviceIP: range is full"))?
            .to_string(),
    };
    let headless_without_selector = ip == "None" && spec.get("selector").is_none_or(Value::is_null);
    let policy = if headless_without_selector {
        "RequireDualStack"
    } else {
        "SingleStack"
    };
    spec.insert("clusterIP".into(), json!(ip));
    spec.insert("clusterIPs".into(), json!([ip]));
    spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
    spec.entry("ipFamilyPolicy")
        .or_insert_with(|| json!(policy));
    Ok(())
}
