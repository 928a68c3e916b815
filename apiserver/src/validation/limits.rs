//! LimitRanges (`pkg/apis/core/validation/validation.go`: `ValidateLimitRange`,
//! `validateLimitRangeTypeName`, `validateLimitRangeResourceName`). Quantities print as
//! `Quantity.String()` does, Go-quoted as 1.34 prints a `Quantity` value (its JSON); the keys of
//! a limit are checked in name order (Go walks its maps at random).

use std::cmp::Ordering;
use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::field::{duplicate, forbidden, go_string, invalid, items, required, text};
use super::quantity::Quantity;
use super::resources::{STANDARD, name_causes as container_resource_name};
use super::{Cause, qualified_name_errors};

type Data = Map<String, Value>;

/// `IsStandardLimitRangeType`.
const LIMIT_TYPES: &[&str] = &["Pod", "Container", "PersistentVolumeClaim"];

/// `validateLimitRangeTypeName`.
fn type_causes(value: &str, path: &str, causes: &mut Vec<Cause>) {
    let errs = qualified_name_errors(value);
    if !errs.is_empty() {
        causes.extend(errs.iter().map(|m| invalid(path, &go_string(value), m)));
        return;
    }
    if !value.contains('/') && !LIMIT_TYPES.contains(&value) {
        causes.push(invalid(
            path,
            &go_string(value),
            "must be a standard limit type or fully qualified",
        ));
    }
}

/// `validateResourceName`: a qualified name, standard unless it has a prefix.
fn resource_name(value: &str, path: &str) -> Vec<Cause> {
    let errs = qualified_name_errors(value);
    if !errs.is_empty() {
        return errs
            .iter()
            .map(|m| invalid(path, &go_string(value), m))
            .collect();
    }
    if !value.contains('/') && !STANDARD.contains(&value) {
        return vec![invalid(
            path,
            &go_string(value),
            "must be a standard resource type or fully qualified",
        )];
    }
    Vec::new()
}

/// The quantities of the map at `key` of a limit, with the check of each name.
fn quantities(
    limit: &Value,
    key: &str,
    limit_type: &str,
    path: &str,
    causes: &mut Vec<Cause>,
) -> Vec<(String, Quantity)> {
    let mut out: Vec<(String, Quantity)> = limit
        .get(key)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), Quantity::from_json(v)?)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, _) in &out {
        let at = format!("{path}.{key}[{name}]");
        causes.extend(match limit_type {
            "Pod" | "Container" => container_resource_name(name, &at),
            _ => resource_name(name, &at),
        });
    }
    out
}

fn find<'a>(list: &'a [(String, Quantity)], name: &str) -> Option<&'a Quantity> {
    list.iter().find(|(n, _)| n == name).map(|(_, q)| q)
}

/// `IsOvercommitAllowed`: native resources but huge pages.
fn overcommit_allowed(name: &str) -> bool {
    (!name.contains('/') || name.contains("kubernetes.io/")) && !name.starts_with("hugepages-")
}

/// `ValidateLimitRange`.
pub(crate) fn limit_range(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    let mut seen_types = Vec::new();
    for (i, limit) in items(spec, "limits").iter().enumerate() {
        let path = format!("spec.limits[{i}]");
        let limit_type = text(limit, "type");
        type_causes(limit_type, &format!("{path}.type"), &mut causes);
        if seen_types.contains(&limit_type) {
            causes.push(duplicate(&format!("{path}.type"), &go_string(limit_type)));
        }
        seen_types.push(limit_type);
        let max = quantities(limit, "max", limit_type, &path, &mut causes);
        let min = quantities(limit, "min", limit_type, &path, &mut causes);
        let (mut defaults, mut requests) = (Vec::new(), Vec::new());
        if limit_type == "Pod" {
            for key in ["default", "defaultRequest"] {
                if limit
                    .get(key)
                    .and_then(Value::as_object)
                    .is_some_and(|m| !m.is_empty())
                {
                    causes.push(forbidden(
                        &format!("{path}.{key}"),
                        "may not be specified when `type` is 'Pod'",
                    ));
                }
            }
        } else {
            defaults = quantities(limit, "default", limit_type, &path, &mut causes);
            requests = quantities(limit, "defaultRequest", limit_type, &path, &mut causes);
        }
        if limit_type == "PersistentVolumeClaim"
            && find(&min, "storage").is_none()
            && find(&max, "storage").is_none()
        {
            causes.push(required(
                &format!("{path}.limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            ));
        }
        let ratios = quantities(
            limit,
            "maxLimitRequestRatio",
            limit_type,
            &path,
            &mut causes,
        );
        let keys: BTreeSet<&str> = [&max, &min, &defaults, &requests, &ratios]
            .iter()
            .flat_map(|l| l.iter().map(|(n, _)| n.as_str()))
            .collect();
        for key in keys {
            let limits = Limits {
                min: find(&min, key),
                max: find(&max, key),
                default: find(&defaults, key),
                request: find(&requests, key),
                ratio: find(&ratios, key),
            };
            limits.check(&path, key, &mut causes);
        }
    }
    causes
}

/// The quantities of one resource in one limit.
struct Limits<'a> {
    min: Option<&'a Quantity>,
    max: Option<&'a Quantity>,
    default: Option<&'a Quantity>,
    request: Option<&'a Quantity>,
    ratio: Option<&'a Quantity>,
}

fn greater(a: Option<&Quantity>, b: Option<&Quantity>) -> Option<(String, String)> {
    match (a, b) {
        (Some(a), Some(b)) if a.cmp_value(b) == Ordering::Greater => {
            Some((a.canonical(), b.canonical()))
        }
        _ => None,
    }
}

impl Limits<'_> {
    /// The comparisons of `ValidateLimitRange`, in its order.
    fn check(&self, path: &str, key: &str, causes: &mut Vec<Cause>) {
        let at = |field: &str| format!("{path}.{field}[{key}]");
        let mut push = |field: &str, value: &str, detail: String| {
            causes.push(invalid(&at(field), &go_string(value), &detail));
        };
        if let Some((min, max)) = greater(self.min, self.max) {
            push(
                "min",
                &min,
                format!("min value {min} is greater than max value {max}"),
            );
        }
        if let Some((min, request)) = greater(self.min, self.request) {
            let detail = format!("min value {min} is greater than default request value {request}");
            push("defaultRequest", &request, detail);
        }
        if let Some((request, max)) = greater(self.request, self.max) {
            let detail = format!("default request value {request} is greater than max value {max}");
            push("defaultRequest", &request, detail);
        }
        if let Some((request, default)) = greater(self.request, self.default) {
            let detail = format!(
                "default request value {request} is greater than default limit value {default}"
            );
            push("defaultRequest", &request, detail);
        }
        if let Some((min, default)) = greater(self.min, self.default) {
            let detail = format!("min value {min} is greater than default value {default}");
            push("default", &min, detail);
        }
        if let Some((default, max)) = greater(self.default, self.max) {
            let detail = format!("default value {default} is greater than max value {max}");
            push("default", &max, detail);
        }
        let one = Quantity::parse("1").ok();
        if let Some(ratio) = self.ratio
            && one.as_ref().is_some_and(|one| ratio.cmp_value(one).is_lt())
        {
            let text = ratio.canonical();
            push(
                "maxLimitRequestRatio",
                &text,
                format!("ratio {text} is less than 1"),
            );
        }
        if let (Some(default), Some(request)) = (self.default, self.request)
            && !overcommit_allowed(key)
            && !default.cmp_value(request).is_eq()
        {
            let (d, r) = (default.canonical(), request.canonical());
            push(
                "defaultRequest",
                &r,
                format!("default value {d} must equal to defaultRequest value {r} in {key}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn causes(spec: Value) -> Vec<Cause> {
        let data = json!({ "spec": spec });
        limit_range(data.as_object().unwrap_or(&Map::new()))
    }

    /// `TestValidateLimitRange`'s "min-max-inversion" case.
    #[test]
    fn test_validate_limit_range_min_max_inversion() {
        let got = causes(json!({"limits": [{"type": "Container",
            "min": {"cpu": "200m"}, "max": {"cpu": "100m"}}]}));
        assert_eq!(
            got,
            [(
                "spec.limits[0].min[cpu]".to_owned(),
                "Invalid value: \"200m\": min value 200m is greater than max value 100m".to_owned()
            )]
        );
    }

    /// `TestValidateLimitRange`'s "duplicate-limit-type" and "default-limit-type-pod" cases.
    #[test]
    fn test_validate_limit_range_duplicate_type_and_pod_defaults() {
        let got = causes(json!({"limits": [
            {"type": "Pod", "max": {"cpu": "1"}, "default": {"cpu": "1"}},
            {"type": "Pod", "min": {"cpu": "1"}}]}));
        assert!(got.contains(&(
            "spec.limits[0].default".to_owned(),
            "Forbidden: may not be specified when `type` is 'Pod'".to_owned()
        )));
        assert!(got.contains(&(
            "spec.limits[1].type".to_owned(),
            "Duplicate value: \"Pod\"".to_owned()
        )));
    }

    /// `TestValidateLimitRange`'s "invalid spec maxLimitRequestRatio less than 1" and
    /// "pvc-no-storage" cases, and a valid container limit.
    #[test]
    fn test_validate_limit_range_ratio_and_pvc() {
        let got = causes(json!({"limits": [
            {"type": "Container", "maxLimitRequestRatio": {"memory": "800m"}},
            {"type": "PersistentVolumeClaim", "max": {"cpu": "1"}}]}));
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, "spec.limits[0].maxLimitRequestRatio[memory]");
        assert_eq!(got[1].0, "spec.limits[1].limits");
        assert!(
            causes(json!({"limits": [{"type": "Container",
                "max": {"cpu": "2"}, "min": {"cpu": "100m"}, "default": {"cpu": "1"},
                "defaultRequest": {"cpu": "500m"}}]}))
            .is_empty()
        );
    }
}
