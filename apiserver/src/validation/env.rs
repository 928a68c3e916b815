//! The environment of a container (`pkg/apis/core/validation/validation.go`: `ValidateEnv`,
//! `validateEnvVarValueFrom`, `ValidateEnvFrom`, the key selectors). Names follow
//! `IsRelaxedEnvVarName`: the `RelaxedEnvironmentVariableValidation` gate is GA and locked on
//! in the Kubernetes version served (1.34), so any printable ASCII but `=` is a valid name.

use serde_json::Value;

use super::field::{invalid, is_set, items, required, text};
use super::{Cause, downward, invalid_value, subdomain_errors};

const RELAXED_NAME: &str = "a valid environment variable name must consist only of printable ASCII characters other than '='";
const CONFIG_KEY: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
/// The sources of `valueFrom`, in the order Kubernetes counts them.
const VALUE_SOURCES: &[&str] = &[
    "fieldRef",
    "resourceFieldRef",
    "configMapKeyRef",
    "secretKeyRef",
];

/// `validEnvDownwardAPIFieldPathExpressions`, sorted as `sets.List` prints them.
const ENV_FIELDS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// `IsRelaxedEnvVarName` of a non-empty name.
fn name_errors(name: &str) -> Option<&'static str> {
    name.chars()
        .any(|c| !(' '..='~').contains(&c) || c == '=')
        .then_some(RELAXED_NAME)
}

/// `IsConfigMapKey`.
pub(super) fn config_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push("must be no more than 253 characters".to_owned());
    }
    if key.is_empty()
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
    {
        errs.push(CONFIG_KEY.to_owned());
    }
    match key {
        "." | ".." => errs.push(format!("must not be '{key}'")),
        k if k.starts_with("..") => errs.push("must not start with '..'".to_owned()),
        _ => {}
    }
    errs
}

/// `ValidateEnv`: each variable's name and `valueFrom`.
pub(super) fn env(c: &Value, path: &str, causes: &mut Vec<Cause>) {
    for (i, var) in items(c, "env").iter().enumerate() {
        let at = format!("{path}[{i}]");
        let name = text(var, "name");
        if name.is_empty() {
            causes.push(required(&format!("{at}.name"), ""));
        } else if let Some(m) = name_errors(name) {
            causes.push((format!("{at}.name"), invalid_value(name, m)));
        }
        value_from(var, &format!("{at}.valueFrom"), causes);
    }
}

/// `validateEnvVarValueFrom`: exactly one source, and none beside a `value`.
fn value_from(var: &Value, path: &str, causes: &mut Vec<Cause>) {
    let Some(from) = var.get("valueFrom").filter(|v| !v.is_null()) else {
        return;
    };
    let mut sources = 0;
    for source in VALUE_SOURCES {
        let Some(selector) = from.get(*source).filter(|v| !v.is_null()) else {
            continue;
        };
        sources += 1;
        let at = format!("{path}.{source}");
        match *source {
            "fieldRef" => downward::object_field(selector, ENV_FIELDS, &at, causes),
            "resourceFieldRef" => downward::resource_field(selector, false, &at, causes),
            _ => key_selector(selector, &at, causes),
        }
    }
    if sources == 0 {
        causes.push(invalid(
            path,
            "\"\"",
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        ));
    } else if !text(var, "value").is_empty() {
        causes.push(invalid(
            path,
            "\"\"",
            "may not be specified when `value` is not empty",
        ));
    } else if sources > 1 {
        causes.push(invalid(
            path,
            "\"\"",
            "may not have more than one field specified at a time",
        ));
    }
}

/// `validateConfigMapKeySelector` / `validateSecretKeySelector`: the name a DNS subdomain,
/// the key required and a config key.
fn key_selector(selector: &Value, path: &str, causes: &mut Vec<Cause>) {
    let name = text(selector, "name");
    for m in subdomain_errors(name) {
        causes.push((format!("{path}.name"), invalid_value(name, &m)));
    }
    let key = text(selector, "key");
    if key.is_empty() {
        causes.push(required(&format!("{path}.key"), ""));
    } else {
        for m in config_key_errors(key) {
            causes.push((format!("{path}.key"), invalid_value(key, &m)));
        }
    }
}

/// `ValidateEnvFrom`: the prefix, and exactly one of `configMapRef` and `secretRef` (whose
/// errors Kubernetes reports at the list's path, not the item's).
pub(super) fn env_from(c: &Value, path: &str, causes: &mut Vec<Cause>) {
    for (i, source) in items(c, "envFrom").iter().enumerate() {
        let at = format!("{path}[{i}]");
        let prefix = text(source, "prefix");
        if let Some(m) = (!prefix.is_empty()).then(|| name_errors(prefix)).flatten() {
            causes.push((format!("{at}.prefix"), invalid_value(prefix, m)));
        }
        let mut sources = 0;
        for kind in ["configMapRef", "secretRef"] {
            if !is_set(source, kind) {
                continue;
            }
            sources += 1;
            let name = text(&source[kind], "name");
            let name_path = format!("{at}.{kind}.name");
            if name.is_empty() {
                causes.push(required(&name_path, ""));
            } else {
                // A prefix name: a trailing `-` is allowed (`NameIsDNSSubdomain(name, true)`
                // checks it as an `a`).
                let masked = match name.strip_suffix('-') {
                    Some(rest) if !rest.is_empty() => format!("{rest}a"),
                    _ => name.to_owned(),
                };
                for m in subdomain_errors(&masked) {
                    causes.push((name_path.clone(), invalid_value(name, &m)));
                }
            }
        }
        if sources == 0 {
            causes.push(invalid(
                path,
                "\"\"",
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if sources > 1 {
            causes.push(invalid(
                path,
                "\"\"",
                "may not have more than one field specified at a time",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names_are_printable_ascii_without_equals() {
        for ok in ["A_B", "a.b-c", "1abc", "x y", "$HOME"] {
            assert!(name_errors(ok).is_none(), "{ok}");
        }
        for bad in ["a=b", "tab\t", "é"] {
            assert!(name_errors(bad).is_some(), "{bad}");
        }
        assert!(config_key_errors("a.b_c-d").is_empty());
        assert_eq!(config_key_errors("..a").len(), 1);
        assert_eq!(config_key_errors("a/b").len(), 1);
    }
}
