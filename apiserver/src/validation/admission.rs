//! The rules of the `admissionregistration.k8s.io/v1` kinds
//! (`pkg/apis/admissionregistration/validation/validation.go`, `k8s.io/apiserver/pkg/util/
//! webhook/validation.go`): webhook configurations in full but for the CEL compilation of
//! `matchConditions`, ValidatingAdmissionPolicies and their bindings in their required fields
//! and enumerations (their CEL expressions are not compiled). Values print as 1.34's field
//! errors print them: strings quoted, numbers plainly, lists as JSON.

use serde_json::{Map, Value};

use super::field::{duplicate, go_scalar, go_string, invalid, items, required, text, unsupported};
use super::{Cause, dns1035_errors, label_selector, subdomain_errors};

type Data = Map<String, Value>;

const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
const NO_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
const SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const VALIDATION_ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];

/// The options `ValidateXWebhookConfigurationUpdate` loosens when the old object already
/// broke a rule (so that such objects stay updatable).
#[derive(Clone, Copy)]
struct Options {
    mutating: bool,
    no_side_effects: bool,
    recognized_versions: bool,
    unique_names: bool,
}

/// `ValidateMutatingWebhookConfiguration`.
pub(crate) fn mutating_webhooks(data: &Data) -> Vec<Cause> {
    configuration(data, Options::strict(true))
}

/// `ValidateMutatingWebhookConfigurationUpdate`.
pub(crate) fn mutating_webhooks_update(new: &Data, old: &Data) -> Vec<Cause> {
    configuration(new, Options::from_old(old, true))
}

/// `ValidateValidatingWebhookConfiguration`.
pub(crate) fn validating_webhooks(data: &Data) -> Vec<Cause> {
    configuration(data, Options::strict(false))
}

/// `ValidateValidatingWebhookConfigurationUpdate`.
pub(crate) fn validating_webhooks_update(new: &Data, old: &Data) -> Vec<Cause> {
    configuration(new, Options::from_old(old, false))
}

impl Options {
    const fn strict(mutating: bool) -> Self {
        Self {
            mutating,
            no_side_effects: true,
            recognized_versions: true,
            unique_names: true,
        }
    }

    /// What the old configuration satisfied stays required; what it did not is let go.
    fn from_old(old: &Data, mutating: bool) -> Self {
        let hooks = webhooks(old);
        let mut names: Vec<&str> = hooks.iter().map(|h| text(h, "name")).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        Self {
            mutating,
            no_side_effects: hooks.iter().all(|h| {
                h.get("sideEffects")
                    .and_then(Value::as_str)
                    .is_some_and(|s| NO_SIDE_EFFECTS.contains(&s))
            }),
            recognized_versions: hooks.iter().all(|h| {
                let versions = items(h, "admissionReviewVersions");
                versions.is_empty()
                    || versions
                        .iter()
                        .any(|v| REVIEW_VERSIONS.contains(&v.as_str().unwrap_or("")))
            }),
            unique_names: names.len() == count,
        }
    }
}

fn webhooks(data: &Data) -> &[Value] {
    data.get("webhooks")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A list as 1.34 prints it in a field error: JSON.
fn json(value: &Value) -> String {
    value.to_string()
}

fn configuration(data: &Data, opts: Options) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for (i, hook) in webhooks(data).iter().enumerate() {
        let at = format!("webhooks[{i}]");
        webhook(hook, opts, &at, &mut causes);
        review_versions(hook, opts.recognized_versions, &at, &mut causes);
        let name = text(hook, "name");
        if opts.unique_names && !name.is_empty() {
            if names.contains(&name) {
                causes.push(duplicate(&format!("{at}.name"), &go_string(name)));
            } else {
                names.push(name);
            }
        }
    }
    causes
}

/// `utilvalidation.IsFullyQualifiedName`: a DNS subdomain of at least three segments.
fn fully_qualified_name(path: &str, name: &str, causes: &mut Vec<Cause>) {
    if name.is_empty() {
        causes.push(required(path, ""));
        return;
    }
    let errs = subdomain_errors(name);
    if !errs.is_empty() {
        causes.push(invalid(path, &go_string(name), &errs.join(",")));
    } else if name.split('.').count() < 3 {
        causes.push(invalid(
            path,
            &go_string(name),
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

/// `validateValidatingWebhook` and `validateMutatingWebhook` (the latter also checks the
/// reinvocation policy).
fn webhook(hook: &Value, opts: Options, at: &str, causes: &mut Vec<Cause>) {
    fully_qualified_name(&format!("{at}.name"), text(hook, "name"), causes);
    for (i, rule) in items(hook, "rules").iter().enumerate() {
        rule_with_operations(rule, &format!("{at}.rules[{i}]"), causes);
    }
    enumeration(hook, "failurePolicy", FAILURE_POLICIES, at, causes);
    enumeration(hook, "matchPolicy", MATCH_POLICIES, at, causes);
    let allowed = if opts.no_side_effects {
        NO_SIDE_EFFECTS
    } else {
        SIDE_EFFECTS
    };
    match hook.get("sideEffects").and_then(Value::as_str) {
        None => causes.push(required(
            &format!("{at}.sideEffects"),
            &format!("must specify one of {}", allowed.join(", ")),
        )),
        Some(s) if !allowed.contains(&s) => {
            causes.push(unsupported(&format!("{at}.sideEffects"), s, allowed));
        }
        Some(_) => {}
    }
    if let Some(t) = hook.get("timeoutSeconds").filter(|t| !t.is_null())
        && !t.as_i64().is_some_and(|t| (1..=30).contains(&t))
    {
        causes.push(invalid(
            &format!("{at}.timeoutSeconds"),
            &go_scalar(t),
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for key in ["namespaceSelector", "objectSelector"] {
        if let Some(selector) = hook.get(key).filter(|s| !s.is_null()) {
            causes.extend(label_selector(&format!("{at}.{key}"), selector));
        }
    }
    if opts.mutating {
        enumeration(
            hook,
            "reinvocationPolicy",
            REINVOCATION_POLICIES,
            at,
            causes,
        );
    }
    client_config(
        hook.get("clientConfig").unwrap_or(&Value::Null),
        &format!("{at}.clientConfig"),
        causes,
    );
}

/// A NotSupported error when `key` is set to a value outside `allowed`.
fn enumeration(value: &Value, key: &str, allowed: &[&str], at: &str, causes: &mut Vec<Cause>) {
    if let Some(v) = value.get(key).and_then(Value::as_str)
        && !allowed.contains(&v)
    {
        causes.push(unsupported(&format!("{at}.{key}"), v, allowed));
    }
}

/// `validateAdmissionReviewVersions`.
fn review_versions(hook: &Value, recognized: bool, at: &str, causes: &mut Vec<Cause>) {
    let path = format!("{at}.admissionReviewVersions");
    let versions = items(hook, "admissionReviewVersions");
    if versions.is_empty() {
        causes.push(required(
            &path,
            &format!("must specify one of {}", REVIEW_VERSIONS.join(", ")),
        ));
        return;
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let v = v.as_str().unwrap_or("");
        if seen.contains(&v) {
            causes.push(invalid(
                &format!("{path}[{i}]"),
                &go_string(v),
                "duplicate version",
            ));
            continue;
        }
        seen.push(v);
        for m in dns1035_errors(v) {
            causes.push(invalid(&format!("{path}[{i}]"), &go_string(v), &m));
        }
    }
    if recognized && !seen.iter().any(|v| REVIEW_VERSIONS.contains(v)) {
        causes.push(invalid(
            &path,
            &json(&Value::from(versions.to_vec())),
            &format!(
                "must include at least one of {}",
                REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
}

/// `validateRuleWithOperations`: operations, then the rule (subresources allowed).
fn rule_with_operations(rule: &Value, at: &str, causes: &mut Vec<Cause>) {
    let ops = items(rule, "operations");
    let path = format!("{at}.operations");
    if ops.is_empty() {
        causes.push(required(&path, ""));
    }
    if ops.len() > 1 && ops.iter().any(|o| o == "*") {
        causes.push(invalid(
            &path,
            &json(&Value::from(ops.to_vec())),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        let op = op.as_str().unwrap_or("");
        if !OPERATIONS.contains(&op) {
            causes.push(unsupported(&format!("{path}[{i}]"), op, OPERATIONS));
        }
    }
    admission_rule(rule, at, causes);
}

/// `validateRule`: API groups and versions (`*` alone), resources, scope.
pub(super) fn admission_rule(rule: &Value, at: &str, causes: &mut Vec<Cause>) {
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let list = items(rule, key);
        let path = format!("{at}.{key}");
        if list.is_empty() {
            causes.push(required(&path, ""));
        }
        if list.len() > 1 && list.iter().any(|v| v == "*") {
            causes.push(invalid(
                &path,
                &json(&Value::from(list.to_vec())),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
    }
    for (i, v) in items(rule, "apiVersions").iter().enumerate() {
        if v.as_str().unwrap_or("").is_empty() {
            causes.push(required(&format!("{at}.apiVersions[{i}]"), ""));
        }
    }
    resources(items(rule, "resources"), &format!("{at}.resources"), causes);
    enumeration(rule, "scope", SCOPES, at, causes);
}

/// `validateResources`: `res`, `res/sub`, `res/*`, `*/sub`, `*` and `*/*` without overlaps.
fn resources(list: &[Value], path: &str, causes: &mut Vec<Cause>) {
    if list.is_empty() {
        causes.push(required(path, ""));
    }
    let mut wildcard_sub: Vec<&str> = Vec::new();
    let mut wildcard_res: Vec<&str> = Vec::new();
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, r) in list.iter().enumerate() {
        let r = r.as_str().unwrap_or("");
        let at = format!("{path}[{i}]");
        if r.is_empty() {
            causes.push(required(&at, ""));
            continue;
        }
        double |= r == "*/*";
        single |= r == "*";
        let Some((res, sub)) = r.split_once('/') else {
            // As Kubernetes: the last resource without a subresource decides.
            plain = r != "*";
            continue;
        };
        if wildcard_sub.contains(&res) {
            let why = format!("if '{res}/*' is present, must not specify {r}");
            causes.push(invalid(&at, &go_string(r), &why));
        }
        if wildcard_res.contains(&sub) {
            let why = format!("if '*/{sub}' is present, must not specify {r}");
            causes.push(invalid(&at, &go_string(r), &why));
        }
        if sub == "*" {
            wildcard_sub.push(res);
        }
        if res == "*" {
            wildcard_res.push(sub);
        }
    }
    let all = json(&Value::from(list.to_vec()));
    if list.len() > 1 && double {
        let why = "if '*/*' is present, must not specify other resources";
        causes.push(invalid(path, &all, why));
    }
    if single && plain {
        let why = "if '*' is present, must not specify other resources without subresources";
        causes.push(invalid(path, &all, why));
    }
}

/// The client configuration: exactly one of `url` (`ValidateWebhookURL`, https only) and
/// `service` (`ValidateWebhookService`).
fn client_config(cc: &Value, at: &str, causes: &mut Vec<Cause>) {
    let url = cc.get("url").and_then(Value::as_str);
    let service = cc.get("service").filter(|s| !s.is_null());
    match (url, service) {
        (Some(url), None) => webhook_url(url, &format!("{at}.url"), causes),
        (None, Some(service)) => webhook_service(service, &format!("{at}.service"), causes),
        _ => causes.push(required(at, "exactly one of url or service is required")),
    }
}

/// The parts of a URL as Go's `url.Parse` splits them: scheme, user information, host.
struct UrlParts<'a> {
    scheme: &'a str,
    user: Option<&'a str>,
    host: &'a str,
    query: &'a str,
    fragment: &'a str,
}

fn split_url(url: &str) -> UrlParts<'_> {
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scheme, rest) = match rest.split_once(':') {
        Some((s, r)) if !s.is_empty() && !s.contains('/') => (s, r),
        _ => ("", rest),
    };
    let authority = rest
        .strip_prefix("//")
        .map_or("", |r| r.split('/').next().unwrap_or(""));
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    UrlParts {
        scheme,
        user,
        host,
        query,
        fragment,
    }
}

/// `ValidateWebhookURL` with https forced.
fn webhook_url(url: &str, path: &str, causes: &mut Vec<Cause>) {
    const FORM: &str = "; desired format: https://host[/path]";
    let u = split_url(url);
    if u.scheme != "https" {
        let why = format!("'https' is the only allowed URL scheme{FORM}");
        causes.push(invalid(path, &go_string(u.scheme), &why));
    }
    if u.host.is_empty() {
        causes.push(invalid(
            path,
            "\"\"",
            &format!("host must be provided{FORM}"),
        ));
    }
    if let Some(user) = u.user {
        let why = "user information is not permitted in the URL";
        causes.push(invalid(path, &go_string(user), why));
    }
    if !u.fragment.is_empty() {
        let why = "fragments are not permitted in the URL";
        causes.push(invalid(path, &go_string(u.fragment), why));
    }
    if !u.query.is_empty() {
        let why = "query parameters are not permitted in the URL";
        causes.push(invalid(path, &go_string(u.query), why));
    }
}

/// `ValidateWebhookService`. Kubernetes passes the service's name where the function takes
/// the namespace and the other way round, so a missing name is reported at `namespace` as
/// "service namespace is required"; so is it here.
fn webhook_service(service: &Value, at: &str, causes: &mut Vec<Cause>) {
    if text(service, "name").is_empty() {
        let why = "service namespace is required";
        causes.push(required(&format!("{at}.namespace"), why));
    }
    if text(service, "namespace").is_empty() {
        causes.push(required(&format!("{at}.name"), "service name is required"));
    }
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        let why = "port is not valid: must be between 1 and 65535, inclusive";
        causes.push(invalid(&format!("{at}.port"), &port.to_string(), why));
    }
    let url_path = text(service, "path");
    if url_path.is_empty() || url_path == "/" {
        return;
    }
    let p = format!("{at}.path");
    if url_path == "//" {
        causes.push(invalid(
            &p,
            &go_string(url_path),
            "segment[0] may not be empty",
        ));
        return;
    }
    if !url_path.starts_with('/') {
        causes.push(invalid(&p, &go_string(url_path), "must start with a '/'"));
    }
    let check = url_path.get(1..).unwrap_or("");
    let check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            let why = format!("segment[{i}] may not be empty");
            causes.push(invalid(&p, &go_string(url_path), &why));
            continue;
        }
        for m in subdomain_errors(step) {
            let why = format!("segment[{i}]: {m}");
            causes.push(invalid(&p, &go_string(url_path), &why));
        }
    }
}

/// `ValidateValidatingAdmissionPolicy` without the CEL compilation: a failure policy (set by
/// defaulting), match constraints, and validations or audit annotations.
pub(crate) fn admission_policy(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    match spec.get("failurePolicy").and_then(Value::as_str) {
        None => causes.push(required("spec.failurePolicy", "")),
        Some(p) if !FAILURE_POLICIES.contains(&p) => {
            causes.push(unsupported("spec.failurePolicy", p, FAILURE_POLICIES));
        }
        Some(_) => {}
    }
    if spec.get("matchConstraints").is_none_or(Value::is_null) {
        causes.push(required("spec.matchConstraints", ""));
    }
    if items(spec, "validations").is_empty() && items(spec, "auditAnnotations").is_empty() {
        causes.push(required(
            "spec.validations",
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    for (i, v) in items(spec, "validations").iter().enumerate() {
        if text(v, "expression").trim().is_empty() {
            causes.push(required(&format!("spec.validations[{i}].expression"), ""));
        }
    }
    causes
}

/// `ValidateValidatingAdmissionPolicyBinding` without the CEL compilation: a policy name and
/// validation actions (known, unique, not both Deny and Warn).
pub(crate) fn admission_policy_binding(data: &Data) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = data.get("spec").unwrap_or(&Value::Null);
    if text(spec, "policyName").is_empty() {
        causes.push(required("spec.policyName", ""));
    }
    let actions = items(spec, "validationActions");
    let path = "spec.validationActions";
    if actions.is_empty() {
        causes.push(required(path, "at least one validation action is required"));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, a) in actions.iter().enumerate() {
        let a = a.as_str().unwrap_or("");
        if seen.contains(&a) {
            causes.push(duplicate(&format!("{path}[{i}]"), &go_string(a)));
        } else if !VALIDATION_ACTIONS.contains(&a) {
            causes.push(unsupported(&format!("{path}[{i}]"), a, VALIDATION_ACTIONS));
        }
        seen.push(a);
    }
    if seen.contains(&"Deny") && seen.contains(&"Warn") {
        causes.push(invalid(
            path,
            &json(&Value::from(actions.to_vec())),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    causes
}
