//! A container's resource requirements (`pkg/apis/core/validation/validation.go`:
//! `ValidateContainerResourceRequirements`, `validateContainerResourceName`,
//! `ValidateResourceQuantityValue`; `pkg/apis/core/helper`: standard, native, extended and
//! overcommittable resource names). Quantities print as `Quantity.String()` does; limits and
//! requests are checked in name order (Go walks its maps at random).

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::field::{forbidden, go_string, invalid, required};
use super::quantity::Quantity;
use super::{Cause, qualified_name_errors};

const HUGE_PAGES: &str = "hugepages-";
/// `standardResources` of `pkg/apis/core/helper`.
pub(super) const STANDARD: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];
const CONTAINER: &[&str] = &["cpu", "memory", "ephemeral-storage"];

fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

fn is_huge_pages(name: &str) -> bool {
    name.starts_with(HUGE_PAGES)
}

/// `IsOvercommitAllowed`: native resources but huge pages.
fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_huge_pages(name)
}

/// `validateContainerResourceName`, the values printed bare as Go prints a `ResourceName`.
pub(super) fn name_causes(name: &str, path: &str) -> Vec<Cause> {
    let mut causes: Vec<Cause> = qualified_name_errors(name)
        .iter()
        .map(|m| invalid(path, name, m))
        .collect();
    let unprefixed = !name.contains('/');
    if causes.is_empty()
        && unprefixed
        && !STANDARD.contains(&name)
        && !is_huge_pages(name)
        && !name.starts_with("requests.hugepages-")
    {
        causes.push(invalid(
            path,
            name,
            "must be a standard resource type or fully qualified",
        ));
    }
    if unprefixed {
        if !CONTAINER.contains(&name) && !is_huge_pages(name) {
            causes.push(invalid(
                path,
                name,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(name) {
        let extended = !name.starts_with("requests.")
            && qualified_name_errors(&format!("requests.{name}")).is_empty();
        if !extended {
            causes.push(invalid(
                path,
                name,
                "doesn't follow extended resource name standard",
            ));
        }
    }
    causes
}

/// The quantities of a `limits` or `requests` map, in name order (unparseable ones left out:
/// the API server refuses them when it decodes the object).
fn quantities(resources: Option<&Value>, key: &str) -> Vec<(String, Quantity)> {
    let map = resources
        .and_then(|r| r.get(key))
        .and_then(Value::as_object);
    let mut list: Vec<(String, Quantity)> = map
        .map(Map::iter)
        .into_iter()
        .flatten()
        .filter_map(|(name, v)| Some((name.clone(), Quantity::from_json(v)?)))
        .collect();
    list.sort_by(|a, b| a.0.cmp(&b.0));
    list
}

/// The checks of one limit or request: its name, its sign, and for huge pages a whole
/// number of pages.
fn quantity_causes(name: &str, q: &Quantity, path: &str, causes: &mut Vec<Cause>) {
    causes.extend(name_causes(name, path));
    if q.is_negative() {
        causes.push(invalid(
            path,
            &go_string(&q.canonical()),
            "must be greater than or equal to 0",
        ));
    }
    if let Some(size) = name.strip_prefix(HUGE_PAGES) {
        let divisible = Quantity::parse(size).is_ok_and(|page| q.is_multiple_of(&page));
        if !divisible {
            let text = q.canonical();
            causes.push(invalid(
                path,
                &go_string(&text),
                &format!("{text} is not positive integer multiple of {name}"),
            ));
        }
    }
}

/// `validateResourceRequirements` of the `resources` at `path`.
pub(super) fn requirements(resources: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    let (lim_path, req_path) = (format!("{path}.limits"), format!("{path}.requests"));
    let limits = quantities(resources, "limits");
    let requests = quantities(resources, "requests");
    for (name, q) in &limits {
        quantity_causes(name, q, &format!("{lim_path}[{name}]"), causes);
    }
    for (name, q) in &requests {
        quantity_causes(name, q, &format!("{req_path}[{name}]"), causes);
        match limits.iter().find(|(n, _)| n == name) {
            Some((_, limit)) => {
                let order = q.cmp_value(limit);
                let detail = if order != Ordering::Equal && !overcommit_allowed(name) {
                    Some("must be equal to")
                } else if order == Ordering::Greater {
                    Some("must be less than or equal to")
                } else {
                    None
                };
                if let Some(detail) = detail {
                    causes.push(invalid(
                        &req_path,
                        &go_string(&q.canonical()),
                        &format!("{detail} {name} limit of {}", limit.canonical()),
                    ));
                }
            }
            None if !overcommit_allowed(name) => causes.push(required(
                &lim_path,
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
    }
    let names = || limits.iter().chain(&requests).map(|(n, _)| n.as_str());
    if names().any(is_huge_pages) && !names().any(|n| n == "cpu" || n == "memory") {
        causes.push(forbidden(path, "HugePages require cpu or memory"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_names_follow_the_helper_rules() {
        assert!(name_causes("cpu", "p").is_empty());
        assert!(name_causes("hugepages-2Mi", "p").is_empty());
        assert!(name_causes("example.com/gpu", "p").is_empty());
        assert_eq!(name_causes("gpu", "p").len(), 2);
        assert_eq!(name_causes("pods", "p").len(), 1);
        assert_eq!(name_causes("kubernetes.io/x", "p").len(), 0);
        assert!(!overcommit_allowed("example.com/gpu"));
        assert!(!overcommit_allowed("hugepages-1Gi"));
        assert!(overcommit_allowed("memory"));
    }
}
