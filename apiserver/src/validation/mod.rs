//! Validation as the Kubernetes API server does it: object names, labels and annotations (with
//! its messages and field paths), the types of built-in kinds (by decoding into their
//! k8s-openapi type), `DeleteOptions` and `dryRun`; meta.rs `generateName`, owner references
//! and finalizers, secret.rs Secrets and ConfigMaps; field.rs words field errors as Kubernetes does,
//! pod.rs, service.rs and workloads.rs validate the specs of pods, services and workloads,
//! autoscaling.rs HorizontalPodAutoscalers, storage.rs StorageClasses and volumes, network.rs
//! NetworkPolicies, Ingresses and EndpointSlices, policy.rs PodDisruptionBudgets and Leases,
//! events.rs `events.k8s.io` Events; update.rs what updates may not change.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use crate::error::ApiError;
use crate::resource::ResourceDef;

mod admission;
mod affinity;
mod autoscaling;
mod bytes;
mod certificates;
mod cluster;
mod container;
mod cron;
mod downward;
mod duplicates;
mod env;
mod events;
pub(crate) mod field;
mod files;
mod go_json;
mod job_status;
mod limits;
mod meta;
mod network;
mod pod;
mod pod_update;
mod policy;
mod port;
mod probe;
mod projected;
pub(crate) mod quantity;
mod resources;
mod secret;
mod security;
mod service;
mod storage;
mod toleration;
mod unknown;
mod update;
mod volume;
mod workloads;

pub(crate) use admission::{
    admission_policy, admission_policy_binding, mutating_webhooks, mutating_webhooks_update,
    validating_webhooks, validating_webhooks_update,
};
pub(crate) use autoscaling::hpa;
pub(crate) use certificates::{CsrWrite, csr, csr_update};
pub(crate) use cluster::{
    controller_revision, controller_revision_update, csi_driver, csi_driver_update, csi_node,
    flow_schema, ingress_class, ingress_class_update, priority_level, runtime_class,
    runtime_class_update, volume_attachment, volume_attachment_update,
};
pub(crate) use duplicates::from_slice_with_duplicates;
pub(crate) use events::{core_event, event, event_update};
pub(crate) use go_json::syntax_error as go_json_syntax_error;
pub(crate) use job_status::job_status_update;
pub(crate) use limits::limit_range;
pub(crate) use meta::{dedup_owner_references, finalizer_warnings, kube_finalizers};
pub(crate) use network::{endpoint_slice, endpoint_slice_update, ingress, network_policy};
pub(crate) use pod::pod_create;
pub(crate) use pod_update::{ephemeral_containers_update, pod_update};
pub(crate) use policy::{lease, pod_disruption_budget};
pub(crate) use secret::{config_map, fold_string_data, secret, secret_update};
pub(crate) use service::service;
pub(crate) use storage::{
    persistent_volume, persistent_volume_claim, persistent_volume_claim_update,
    persistent_volume_update, storage_class, storage_class_update,
};
pub(crate) use unknown::{FieldValidation, strict_decoding_error, strict_errors, unknown_fields};
pub(crate) use update::{immutable_data, meta_update};
pub(crate) use volume::SOURCES as VOLUME_SOURCES;
pub(crate) use workloads::{cron_job, job, job_update, selector_update, selects, workload};

/// A field error: the field path and the message (`Invalid value: "x": ...`).
pub(crate) type Cause = (String, String);

/// `Invalid value: "VALUE": DETAIL`, VALUE quoted as Kubernetes does.
fn invalid_value(value: &str, detail: &str) -> String {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    format!("Invalid value: {quoted}: {detail}")
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn is_dns_label_text(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        && is_lower_alnum(b[0])
        && is_lower_alnum(b[b.len() - 1])
}

const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// The problems of `s`: longer than `max`, or not `well_formed` (then `message`).
fn shape_errors(s: &str, max: usize, well_formed: bool, message: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > max {
        errs.push(format!("must be no more than {max} characters"));
    }
    if !well_formed {
        errs.push(message.to_owned());
    }
    errs
}

/// The problems of `s` as a DNS-1123 subdomain (most object names).
fn subdomain_errors(s: &str) -> Vec<String> {
    shape_errors(s, 253, s.split('.').all(is_dns_label_text), SUBDOMAIN)
}

/// The problems of `s` as a DNS-1123 label (namespace names).
fn label_errors(s: &str) -> Vec<String> {
    shape_errors(s, 63, is_dns_label_text(s), LABEL)
}

/// The problems of `s` as a DNS-1035 label (service names: must start with a letter).
fn dns1035_errors(s: &str) -> Vec<String> {
    let starts_with_letter = s.as_bytes().first().is_some_and(u8::is_ascii_lowercase);
    shape_errors(s, 63, is_dns_label_text(s) && starts_with_letter, DNS1035)
}

/// The problems of `s` as a path segment name (RBAC objects: `system:controller:x` is valid).
fn path_segment_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s == "." || s == ".." {
        errs.push(format!("may not be '{s}'"));
    }
    for bad in ['/', '%'] {
        if s.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_qualified_text(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|&c| is_alnum(c) || c == b'-' || c == b'_' || c == b'.')
        && is_alnum(b[0])
        && is_alnum(b[b.len() - 1])
}

/// The problems of `key` as a qualified name (label and annotation keys): an optional DNS
/// subdomain prefix and `/`, then a name of at most 63 characters.
fn qualified_name_errors(key: &str) -> Vec<String> {
    let (prefix, name) = match key.split('/').collect::<Vec<_>>()[..] {
        [name] => (None, name),
        [prefix, name] => (Some(prefix), name),
        _ => {
            return vec![format!(
                "a qualified name {QUALIFIED} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    let mut errs = Vec::new();
    match prefix {
        Some("") => errs.push("prefix part must be non-empty".to_owned()),
        Some(p) => errs.extend(
            subdomain_errors(p)
                .into_iter()
                .map(|m| format!("prefix part {m}")),
        ),
        None => {}
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_owned());
    }
    // As IsQualifiedName: the pattern is checked even when the name is empty.
    if !is_qualified_text(name) {
        errs.push(format!("name part {QUALIFIED}"));
    }
    errs
}

fn label_value_errors(value: &str) -> Vec<String> {
    let well_formed = value.is_empty() || is_qualified_text(value);
    shape_errors(value, 63, well_formed, LABEL_VALUE)
}

/// The causes of an invalid object name of `def`'s kind (namespaces: DNS labels; services:
/// DNS-1035 labels; RBAC objects: path segments; others: DNS subdomains).
pub(crate) fn name_causes(def: &ResourceDef, name: &str) -> Vec<Cause> {
    let errs = match (def.api.group.as_str(), def.api.kind.as_str()) {
        ("", "Namespace") => label_errors(name),
        ("", "Service") => dns1035_errors(name),
        ("rbac.authorization.k8s.io", _) => path_segment_errors(name),
        // ValidateCertificateRequestName accepts any name; the store's key needs a path segment.
        ("certificates.k8s.io", "CertificateSigningRequest") => path_segment_errors(name),
        _ => subdomain_errors(name),
    };
    errs.into_iter()
        .map(|m| ("metadata.name".to_owned(), invalid_value(name, &m)))
        .collect()
}

/// The causes of an invalid `generateName` of `def`'s kind: the prefix checked with the kind's
/// name rules, a trailing `-` allowed (`ValidateObjectMeta`'s name function with `prefix`).
pub(crate) fn generate_name_causes(def: &ResourceDef, prefix: &str) -> Vec<Cause> {
    let masked = meta::mask_trailing_dash(prefix);
    let errs = match (def.api.group.as_str(), def.api.kind.as_str()) {
        ("", "Namespace") => label_errors(&masked),
        ("", "Service") => dns1035_errors(&masked),
        // IsPathSegmentPrefix: only `/` and `%` are refused.
        ("rbac.authorization.k8s.io", _) => path_segment_errors(prefix)
            .into_iter()
            .filter(|m| m.starts_with("may not contain"))
            .collect(),
        _ => subdomain_errors(&masked),
    };
    errs.into_iter()
        .map(|m| {
            (
                "metadata.generateName".to_owned(),
                invalid_value(prefix, &m),
            )
        })
        .collect()
}

/// The causes of an invalid namespace name.
pub(crate) fn namespace_causes(namespace: &str) -> Vec<Cause> {
    label_errors(namespace)
        .into_iter()
        .map(|m| {
            (
                "metadata.namespace".to_owned(),
                invalid_value(namespace, &m),
            )
        })
        .collect()
}

/// The causes of invalid label keys and values and annotation keys (field paths
/// `metadata.labels` and `metadata.annotations`, as Kubernetes reports them), owner
/// references and finalizers (module meta).
pub(crate) fn meta_causes(meta: &ObjectMeta) -> Vec<Cause> {
    let labels = meta
        .labels
        .iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str()));
    let mut causes = labels_causes("metadata.labels", labels);
    for key in meta.annotations.iter().flatten().map(|(k, _)| k) {
        for m in qualified_name_errors(&key.to_ascii_lowercase()) {
            causes.push(("metadata.annotations".to_owned(), invalid_value(key, &m)));
        }
    }
    causes.extend(meta::references_and_finalizers(meta));
    causes
}

/// `ValidateLabels` (apimachinery's `meta/v1/validation`) of the labels at `path`: each key a
/// qualified name, each value a label value, every cause at `path` itself.
pub(crate) fn labels_causes<'a>(
    path: &str,
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (key, value) in labels {
        for m in qualified_name_errors(key) {
            causes.push((path.to_owned(), invalid_value(key, &m)));
        }
        for m in label_value_errors(value) {
            causes.push((path.to_owned(), invalid_value(value, &m)));
        }
    }
    causes
}

/// `ValidateLabelSelector` (apimachinery's `meta/v1/validation`) of the selector at `path`: its
/// `matchLabels` keys and values, and each requirement's operator, values and key.
pub(crate) fn label_selector(path: &str, selector: &Value) -> Vec<Cause> {
    let match_labels = selector.get("matchLabels").and_then(Value::as_object);
    let labels = match_labels
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")));
    let mut causes = labels_causes(&format!("{path}.matchLabels"), labels);
    let requirements = selector.get("matchExpressions").and_then(Value::as_array);
    for (i, r) in requirements.into_iter().flatten().enumerate() {
        let at = format!("{path}.matchExpressions[{i}]");
        let values = field::requirement_values(r);
        match r["operator"].as_str().unwrap_or("") {
            "In" | "NotIn" if values.is_empty() => causes.push(field::required(
                &format!("{at}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => causes.push(field::forbidden(
                &format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => causes.push((
                format!("{at}.operator"),
                invalid_value(other, "not a valid selector operator"),
            )),
        }
        let key = r["key"].as_str().unwrap_or("");
        causes.extend(
            qualified_name_errors(key)
                .iter()
                .map(|m| (format!("{at}.key"), invalid_value(key, m))),
        );
        for (j, value) in values.iter().enumerate() {
            causes.extend(
                label_value_errors(value)
                    .iter()
                    .map(|m| (format!("{at}.values[{j}]"), invalid_value(value, m))),
            );
        }
    }
    causes
}

/// 422 Invalid of an object of `def`'s kind named `name`.
pub(crate) fn invalid(def: &ResourceDef, name: &str, causes: &[Cause]) -> ApiError {
    ApiError::invalid(&def.api.group, &def.api.kind, name, causes)
}

/// Fails with `causes` as one 422 Invalid, if there are any.
pub(crate) fn check(def: &ResourceDef, name: &str, causes: &[Cause]) -> Result<(), ApiError> {
    if causes.is_empty() {
        Ok(())
    } else {
        Err(invalid(def, name, causes))
    }
}

/// Checks that `value`, an object of a built-in kind, decodes into its k8s-openapi type (fields
/// of the wrong JSON type are 400, as the API server's decoder answers). The decoded copy is
/// dropped: the server keeps objects as their encoding. Other kinds pass.
pub(crate) fn decode_builtin(def: &ResourceDef, value: &Value) -> Result<(), ApiError> {
    let Some(kind) = crate::kinds::find(&def.api.api_version, &def.api.kind) else {
        return Ok(());
    };
    let bytes_field = match (def.api.api_version.as_str(), def.api.kind.as_str()) {
        ("v1", "Secret") => Some("data"),
        ("v1", "ConfigMap") => Some("binaryData"),
        _ => None,
    };
    if let Some(error) = bytes_field.and_then(|f| bytes::byte_map_error(value, f)) {
        return Err(cannot_handle(def, &error));
    }
    (kind.decode)(value).map_err(|e| cannot_handle(def, &e))
}

/// 400 `Kind in version "v1" cannot be handled as a Kind: <error>`: the decoder's error as the
/// API server's create and update handlers answer it (`transformDecodeError`).
pub(crate) fn cannot_handle(def: &ResourceDef, error: &dyn std::fmt::Display) -> ApiError {
    let kind = &def.api.kind;
    ApiError::bad_request(format!(
        "{kind} in version {:?} cannot be handled as a {kind}: {error}",
        def.api.version
    ))
}

/// `ValidateDryRun` of a write's `dryRun` values (the query's, or a DELETE body's): only
/// `All`; else 422 Invalid of the write's options kind (`CreateOptions`, `UpdateOptions`,
/// `PatchOptions`, `DeleteOptions`, group `meta.k8s.io`), before anything is decided.
pub(crate) fn dry_run(options: &str, values: &[&str]) -> Result<(), ApiError> {
    if values.iter().all(|v| *v == "All") {
        return Ok(());
    }
    let given = Value::from(values.to_vec()).to_string();
    Err(ApiError::invalid(
        "meta.k8s.io",
        options,
        "",
        &[(
            "dryRun".to_owned(),
            format!("Unsupported value: {given}: supported values: \"All\""),
        )],
    ))
}

/// Validates `DeleteOptions` (`propagationPolicy` in the body or the query): 422 Invalid of
/// kind `DeleteOptions.meta.k8s.io` as Kubernetes answers.
pub(crate) fn delete_options(policy: Option<&str>) -> Result<(), ApiError> {
    match policy {
        None | Some("Foreground" | "Background" | "Orphan") => Ok(()),
        Some(other) => Err(ApiError::invalid(
            "meta.k8s.io",
            "DeleteOptions",
            "",
            &[(
                "propagationPolicy".to_owned(),
                format!(
                    "Unsupported value: {}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                    serde_json::to_string(other).unwrap_or_default()
                ),
            )],
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_follow_the_kubernetes_rules() {
        for ok in ["app", "example.com/app", "a.b_c-d", "A1"] {
            assert!(qualified_name_errors(ok).is_empty(), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a b",
            "/a",
            "a/",
            "a/b/c",
            "Ex.com/a",
            &"x".repeat(64),
        ] {
            assert!(!qualified_name_errors(bad).is_empty(), "{bad}");
        }
        assert!(label_value_errors("").is_empty());
        assert!(!label_value_errors("a b").is_empty());
    }

    #[test]
    fn names_are_checked_by_kind() {
        let svc = crate::resource::builtin_resources()
            .into_iter()
            .find(|d| d.api.kind == "Service")
            .unwrap();
        assert!(!name_causes(&svc, "1abc").is_empty());
        let role = crate::resource::builtin_resources()
            .into_iter()
            .find(|d| d.api.kind == "ClusterRole")
            .unwrap();
        assert!(name_causes(&role, "system:controller:x").is_empty());
        assert!(!name_causes(&role, "a/b").is_empty());
    }
}
