//! Printers of the `admissionregistration.k8s.io` kinds (`printers.go`:
//! `printMutatingWebhook`, `printValidatingWebhook`, `printValidatingAdmissionPolicy`,
//! `printValidatingAdmissionPolicyBinding`).

use serde_json::{Map, Value, json};

use super::cells::{age, at, items, text};
use super::{AGE, Cells, Column};
use crate::object::Object;

type Data = Map<String, Value>;

const UNSET: &str = "<unset>";

const WEBHOOKS: &[Column] = &[
    Column(
        "Webhooks",
        "integer",
        0,
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE,
];
const POLICY: &[Column] = &[
    Column(
        "Validations",
        "integer",
        0,
        "Validations indicates the number of validation rules defined in this configuration",
    ),
    Column(
        "ParamKind",
        "string",
        0,
        "ParamKind specifies the kind of resources used to parameterize this policy",
    ),
    AGE,
];
const BINDING: &[Column] = &[
    Column(
        "PolicyName",
        "string",
        0,
        "PolicyName indicates the policy definition which the policy binding binded to",
    ),
    Column(
        "ParamRef",
        "string",
        0,
        "ParamRef indicates the param resource which sets the configration param",
    ),
    AGE,
];

/// The printer of an `admissionregistration.k8s.io` kind.
pub(super) fn printer(group: &str, kind: &str) -> Option<(&'static [Column], Cells)> {
    if group != "admissionregistration.k8s.io" {
        return None;
    }
    Some(match kind {
        "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => (WEBHOOKS, webhooks),
        "ValidatingAdmissionPolicy" => (POLICY, policy),
        "ValidatingAdmissionPolicyBinding" => (BINDING, binding),
        _ => return None,
    })
}

fn webhooks(obj: &Object, data: &Data) -> Vec<Value> {
    vec![json!(items(data, "/webhooks").count()), age(obj)]
}

/// The param kind as `apiVersion/kind`, else `<unset>`.
fn policy(obj: &Object, data: &Data) -> Vec<Value> {
    let param_kind = if at(data, "/spec/paramKind").is_none_or(Value::is_null) {
        UNSET.to_owned()
    } else {
        format!(
            "{}/{}",
            text(data, "/spec/paramKind/apiVersion"),
            text(data, "/spec/paramKind/kind")
        )
    };
    vec![
        json!(items(data, "/spec/validations").count()),
        json!(param_kind),
        age(obj),
    ]
}

/// The param reference as `namespace/name` (`*/name` without a namespace), else `<unset>`.
fn binding(obj: &Object, data: &Data) -> Vec<Value> {
    let param_ref = match (
        text(data, "/spec/paramRef/namespace"),
        text(data, "/spec/paramRef/name"),
    ) {
        (_, "") => UNSET.to_owned(),
        ("", name) => format!("*/{name}"),
        (namespace, name) => format!("{namespace}/{name}"),
    };
    vec![
        json!(text(data, "/spec/policyName")),
        json!(param_ref),
        age(obj),
    ]
}
