//! The `admissionregistration.k8s.io/v1` defaults (`pkg/apis/admissionregistration/v1/
//! defaults.go`): webhooks fail closed, match equivalent resources, select everything, wait
//! 10 s (mutating ones: are not reinvoked); rules cover both scopes; services listen on 443;
//! policies fail closed and their match resources default as webhooks'.

use serde_json::{Map, Value};

use super::{items_at, object_at, object_entry, set_default};

/// `SetDefaults_MutatingWebhook` (`mutating`) or `SetDefaults_ValidatingWebhook` for each
/// webhook of a configuration.
pub(super) fn webhooks(obj: &mut Map<String, Value>, mutating: bool) {
    for hook in items_at(obj, "webhooks") {
        set_default(hook, "failurePolicy", "Fail");
        set_default(hook, "matchPolicy", "Equivalent");
        set_default(hook, "namespaceSelector", Map::new());
        set_default(hook, "objectSelector", Map::new());
        set_default(hook, "timeoutSeconds", 10);
        if mutating {
            set_default(hook, "reinvocationPolicy", "Never");
        }
        rules(hook, "rules");
        if let Some(service) = object_at(hook, "clientConfig").and_then(|c| object_at(c, "service"))
        {
            set_default(service, "port", 443);
        }
    }
}

/// `SetDefaults_Rule`: a rule without a scope matches both.
fn rules(obj: &mut Map<String, Value>, key: &str) {
    for rule in items_at(obj, key) {
        set_default(rule, "scope", "*");
    }
}

/// `SetDefaults_MatchResources` of the match resources at `key`, if any.
fn match_resources(obj: &mut Map<String, Value>, key: &str) {
    let Some(m) = object_at(obj, key) else {
        return;
    };
    set_default(m, "matchPolicy", "Equivalent");
    set_default(m, "namespaceSelector", Map::new());
    set_default(m, "objectSelector", Map::new());
    rules(m, "resourceRules");
    rules(m, "excludeResourceRules");
}

/// `SetDefaults_ValidatingAdmissionPolicySpec` and its match constraints.
pub(super) fn admission_policy(obj: &mut Map<String, Value>) {
    if let Some(spec) = object_entry(obj, "spec") {
        set_default(spec, "failurePolicy", "Fail");
        match_resources(spec, "matchConstraints");
    }
}

/// A binding's match resources.
pub(super) fn admission_policy_binding(obj: &mut Map<String, Value>) {
    if let Some(spec) = object_at(obj, "spec") {
        match_resources(spec, "matchResources");
    }
}
