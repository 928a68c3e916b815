//! Downward API selectors (`pkg/apis/core/validation/validation.go`:
//! `validateObjectFieldSelector`, `validateContainerResourceFieldSelector`,
//! `validateContainerResourceDivisor`; `pkg/apis/core/pods/helpers.go`:
//! `ConvertDownwardAPIFieldLabel`).

use serde_json::Value;

use super::field::{go_string, invalid, required, text, unsupported};
use super::quantity::Quantity;
use super::{Cause, invalid_value, qualified_name_errors};

/// The labels `ConvertDownwardAPIFieldLabel` knows for a v1 pod.
const POD_FIELDS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.serviceAccountName",
    "spec.schedulerName",
    "status.phase",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];
/// `validContainerResourceFieldPathExpressions`, sorted.
const RESOURCE_FIELDS: &[&str] = &[
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];
const BYTE_DIVISORS: &[&str] = &[
    "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
];
const BYTE_DIVISORS_TEXT: &str = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei";

/// `fieldpath.SplitMaybeSubscriptedPath`: `metadata.labels['app']` is `metadata.labels` and
/// `app`.
fn split_subscript(path: &str) -> Option<(&str, &str)> {
    let (head, key) = path.strip_suffix("']")?.split_once("['")?;
    (!head.is_empty()).then_some((head, key))
}

/// `ConvertDownwardAPIFieldLabel`: the internal label, or the conversion error.
fn convert(api_version: &str, label: &str) -> Result<String, String> {
    if api_version != "v1" {
        return Err(format!("unsupported pod version: {api_version}"));
    }
    if let Some((path, _)) = split_subscript(label) {
        return match path {
            "metadata.annotations" | "metadata.labels" => Ok(label.to_owned()),
            _ => Err(format!("field label does not support subscript: {label}")),
        };
    }
    match label {
        l if POD_FIELDS.contains(&l) => Ok(l.to_owned()),
        "spec.host" => Ok("spec.nodeName".to_owned()),
        _ => Err(format!("field label not supported: {label}")),
    }
}

/// `validateObjectFieldSelector` of the `fieldRef` at `path`, `expressions` the paths it may
/// name without a subscript.
pub(super) fn object_field(
    selector: &Value,
    expressions: &[&str],
    path: &str,
    causes: &mut Vec<Cause>,
) {
    let (api_version, field_path) = (text(selector, "apiVersion"), text(selector, "fieldPath"));
    if api_version.is_empty() {
        causes.push(required(&format!("{path}.apiVersion"), ""));
        return;
    }
    if field_path.is_empty() {
        causes.push(required(&format!("{path}.fieldPath"), ""));
        return;
    }
    let internal = match convert(api_version, field_path) {
        Ok(internal) => internal,
        Err(e) => {
            causes.push(invalid(
                &format!("{path}.fieldPath"),
                &go_string(field_path),
                &format!("error converting fieldPath: {e}"),
            ));
            return;
        }
    };
    match split_subscript(&internal) {
        Some((field, key)) => {
            let key = match field {
                "metadata.annotations" => key.to_lowercase(),
                "metadata.labels" => key.to_owned(),
                _ => {
                    causes.push(invalid(
                        path,
                        &go_string(field),
                        "does not support subscript",
                    ));
                    return;
                }
            };
            for m in qualified_name_errors(&key) {
                causes.push((path.to_owned(), invalid_value(&key, &m)));
            }
        }
        None if !expressions.contains(&internal.as_str()) => {
            causes.push(unsupported(
                &format!("{path}.fieldPath"),
                &internal,
                expressions,
            ));
        }
        None => {}
    }
}

/// `validateContainerResourceFieldSelector` of a `resourceFieldRef` at `path` (of a volume
/// item, which must name its container, or of an env var), and its divisor.
pub(super) fn resource_field(selector: &Value, volume: bool, path: &str, causes: &mut Vec<Cause>) {
    let resource = text(selector, "resource");
    let huge_pages =
        resource.starts_with("limits.hugepages-") || resource.starts_with("requests.hugepages-");
    if volume && text(selector, "containerName").is_empty() {
        causes.push(required(&format!("{path}.containerName"), ""));
    } else if resource.is_empty() {
        causes.push(required(&format!("{path}.resource"), ""));
    } else if !RESOURCE_FIELDS.contains(&resource) && !huge_pages {
        causes.push(unsupported(
            &format!("{path}.resource"),
            resource,
            RESOURCE_FIELDS,
        ));
    }
    let Some(divisor) = selector
        .get("divisor")
        .and_then(Quantity::from_json)
        .filter(|d| !d.is_zero())
    else {
        return;
    };
    let divisor = divisor.canonical();
    let (allowed, kind): (&[&str], &str) = match resource {
        "limits.cpu" | "requests.cpu" => (&["1m", "1"], "cpu"),
        "limits.memory" | "requests.memory" => (BYTE_DIVISORS, "memory"),
        "limits.ephemeral-storage" | "requests.ephemeral-storage" => {
            (BYTE_DIVISORS, "local ephemeral storage")
        }
        _ if huge_pages => (BYTE_DIVISORS, "hugepages"),
        _ => return,
    };
    if !allowed.contains(&divisor.as_str()) {
        let values = if kind == "cpu" {
            "1m and 1"
        } else {
            BYTE_DIVISORS_TEXT
        };
        causes.push(invalid(
            &format!("{path}.divisor"),
            &go_string(resource),
            &format!("only divisor's values {values} are supported with the {kind} resource"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_labels_convert_as_kubernetes_converts_them() {
        assert_eq!(convert("v1", "spec.host"), Ok("spec.nodeName".to_owned()));
        assert_eq!(
            convert("v1", "metadata.labels['app']"),
            Ok("metadata.labels['app']".to_owned())
        );
        assert_eq!(
            convert("v1", "spec.nodeName['x']"),
            Err("field label does not support subscript: spec.nodeName['x']".to_owned())
        );
        assert_eq!(
            convert("v2", "metadata.name"),
            Err("unsupported pod version: v2".to_owned())
        );
        assert_eq!(split_subscript("['x']"), None);
    }
}
