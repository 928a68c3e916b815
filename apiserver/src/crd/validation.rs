//! Validation of CustomResourceDefinitions, as `ValidateCustomResourceDefinition` in
//! `k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation`: the name, group, names,
//! scope, versions (exactly one storage version) and the basics of a structural schema (types,
//! `uniqueItems` refused, `pattern`s that compile), with Kubernetes' field paths.

use std::collections::HashSet;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames,
};
use serde_json::Value;

use crate::validation::Cause;

/// `Invalid value: VALUE: DETAIL` with VALUE as Go's field errors quote it.
fn invalid(path: &str, value: &str, detail: &str) -> Cause {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    (
        path.to_owned(),
        format!("Invalid value: {quoted}: {detail}"),
    )
}

fn required(path: &str, detail: &str) -> Cause {
    let message = if detail.is_empty() {
        "Required value".to_owned()
    } else {
        format!("Required value: {detail}")
    };
    (path.to_owned(), message)
}

const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// `[a-z]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
fn is_dns1035(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && b[b.len() - 1] != b'-'
}

/// The causes of an invalid CRD.
pub(crate) fn validate(crd: &CustomResourceDefinition) -> Vec<Cause> {
    let spec = &crd.spec;
    let mut causes = Vec::new();
    let name = crd.metadata.name.as_deref().unwrap_or("");
    let expected = format!("{}.{}", spec.names.plural, spec.group);
    if name != expected {
        causes.push(invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if spec.group.is_empty() {
        causes.push(required("spec.group", ""));
    } else if !spec.group.contains('.') {
        causes.push(invalid(
            "spec.group",
            &spec.group,
            "should be a domain with at least one dot",
        ));
    }
    match spec.scope.as_str() {
        "Cluster" | "Namespaced" => {}
        "" => causes.push(required("spec.scope", "")),
        other => causes.push((
            "spec.scope".to_owned(),
            format!("Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""),
        )),
    }
    causes.extend(names(&spec.names, "spec.names"));
    causes.extend(versions(crd));
    causes
}

/// The causes of an invalid update: the new CRD's, and the group, names.plural and scope may
/// not change (as Kubernetes while objects may be stored).
pub(crate) fn validate_update(
    new: &CustomResourceDefinition,
    old: &CustomResourceDefinition,
) -> Vec<Cause> {
    let mut causes = validate(new);
    if new.spec.group != old.spec.group {
        causes.push(invalid("spec.group", &new.spec.group, "field is immutable"));
    }
    if new.spec.names.plural != old.spec.names.plural {
        causes.push(invalid(
            "spec.names.plural",
            &new.spec.names.plural,
            "field is immutable",
        ));
    }
    if new.spec.scope != old.spec.scope {
        causes.push(invalid("spec.scope", &new.spec.scope, "field is immutable"));
    }
    causes
}

fn names(names: &CustomResourceDefinitionNames, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if names.plural.is_empty() {
        causes.push(required(&format!("{path}.plural"), ""));
    } else if !is_dns1035(&names.plural) {
        causes.push(invalid(&format!("{path}.plural"), &names.plural, DNS1035));
    }
    if let Some(singular) = names.singular.as_deref().filter(|s| !s.is_empty())
        && !is_dns1035(singular)
    {
        causes.push(invalid(&format!("{path}.singular"), singular, DNS1035));
    }
    let mixed = format!("may have mixed case, but should otherwise match: {DNS1035}");
    if names.kind.is_empty() {
        causes.push(required(&format!("{path}.kind"), ""));
    } else if !is_dns1035(&names.kind.to_ascii_lowercase()) {
        causes.push(invalid(&format!("{path}.kind"), &names.kind, &mixed));
    }
    match names.list_kind.as_deref() {
        None | Some("") => causes.push(required(&format!("{path}.listKind"), "")),
        Some(list) if !is_dns1035(&list.to_ascii_lowercase()) => {
            causes.push(invalid(&format!("{path}.listKind"), list, &mixed));
        }
        Some(list) if list == names.kind => causes.push(invalid(
            &format!("{path}.listKind"),
            list,
            "kind and listKind may not be the same or parsing errors will occur",
        )),
        Some(_) => {}
    }
    for (i, short) in names.short_names.iter().flatten().enumerate() {
        if !is_dns1035(short) {
            causes.push(invalid(&format!("{path}.shortNames[{i}]"), short, DNS1035));
        }
    }
    causes
}

fn versions(crd: &CustomResourceDefinition) -> Vec<Cause> {
    let versions = &crd.spec.versions;
    let mut causes = Vec::new();
    if versions.is_empty() {
        causes.push(required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
        return causes;
    }
    let storage = versions.iter().filter(|v| v.storage).count();
    if storage != 1 {
        let names: Vec<&str> = versions.iter().map(|v| v.name.as_str()).collect();
        causes.push((
            "spec.versions".to_owned(),
            format!(
                "Invalid value: {}: must have exactly one version marked as storage version",
                serde_json::to_string(&names).unwrap_or_default()
            ),
        ));
    }
    let mut seen = HashSet::new();
    for (i, v) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        if !is_dns1035(&v.name) {
            causes.push(invalid(&format!("{path}.name"), &v.name, DNS1035));
        }
        if !seen.insert(v.name.as_str()) {
            causes.push(invalid(&format!("{path}.name"), &v.name, "must be unique"));
        }
        let schema = v
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .and_then(|s| serde_json::to_value(s).ok());
        match schema {
            None => causes.push(required(
                &format!("{path}.schema.openAPIV3Schema"),
                "schemas are required",
            )),
            Some(schema) => structural(
                &schema,
                &format!("{path}.schema.openAPIV3Schema"),
                true,
                &mut causes,
            ),
        }
    }
    causes
}

/// The basics of a structural schema: a type everywhere (except where unknown fields are
/// preserved or the value is `x-kubernetes-int-or-string`), `object` at the root.
fn structural(schema: &Value, path: &str, root: bool, causes: &mut Vec<Cause>) {
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    let flag = |name: &str| schema.get(name).and_then(Value::as_bool).unwrap_or(false);
    let untyped_ok =
        flag("x-kubernetes-preserve-unknown-fields") || flag("x-kubernetes-int-or-string");
    if root && ty != "object" {
        if ty.is_empty() {
            causes.push(required(
                &format!("{path}.type"),
                "must not be empty at the root",
            ));
        } else {
            causes.push(invalid(
                &format!("{path}.type"),
                ty,
                "must be object at the root",
            ));
        }
    } else if !root && ty.is_empty() && !untyped_ok {
        causes.push(required(
            &format!("{path}.type"),
            "must not be empty for specified object fields",
        ));
    }
    super::rules::check_crd_node(schema, path, causes);
    if flag("uniqueItems") {
        causes.push((
            format!("{path}.uniqueItems"),
            "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic".to_owned(),
        ));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
        && let Some(error) = super::formats::pattern_error(pattern)
    {
        causes.push(invalid(
            &format!("{path}.pattern"),
            pattern,
            &format!("must be a valid regular expression, but isn't: {error}"),
        ));
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            structural(sub, &format!("{path}.properties[{name}]"), false, causes);
        }
    }
    if let Some(items) = schema.get("items") {
        structural(items, &format!("{path}.items"), false, causes);
    }
    if let Some(extra) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        structural(
            extra,
            &format!("{path}.additionalProperties"),
            false,
            causes,
        );
    }
}
