//! The review resources of `authorization.k8s.io/v1` and `authentication.k8s.io/v1`: create-only,
//! never stored, answered from the request's user, the access policy ([`Policy`]) and the
//! tokens this server issues.

use serde_json::{Value, json};

use crate::access::{Attributes, User};
use crate::error::ApiError;
use crate::shared::Shared;

/// One review resource.
#[derive(Debug)]
pub(crate) struct Review {
    pub(crate) group: &'static str,
    pub(crate) plural: &'static str,
    pub(crate) singular: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) namespaced: bool,
}

const AUTHZ: &str = "authorization.k8s.io";
const AUTHN: &str = "authentication.k8s.io";

/// Every review resource (all in version `v1`).
pub(crate) const REVIEWS: &[Review] = &[
    Review {
        group: AUTHN,
        plural: "selfsubjectreviews",
        singular: "selfsubjectreview",
        kind: "SelfSubjectReview",
        namespaced: false,
    },
    Review {
        group: AUTHN,
        plural: "tokenreviews",
        singular: "tokenreview",
        kind: "TokenReview",
        namespaced: false,
    },
    Review {
        group: AUTHZ,
        plural: "localsubjectaccessreviews",
        singular: "localsubjectaccessreview",
        kind: "LocalSubjectAccessReview",
        namespaced: true,
    },
    Review {
        group: AUTHZ,
        plural: "selfsubjectaccessreviews",
        singular: "selfsubjectaccessreview",
        kind: "SelfSubjectAccessReview",
        namespaced: false,
    },
    Review {
        group: AUTHZ,
        plural: "selfsubjectrulesreviews",
        singular: "selfsubjectrulesreview",
        kind: "SelfSubjectRulesReview",
        namespaced: false,
    },
    Review {
        group: AUTHZ,
        plural: "subjectaccessreviews",
        singular: "subjectaccessreview",
        kind: "SubjectAccessReview",
        namespaced: false,
    },
];

/// The review served at `group/version/plural`.
pub(crate) fn find(group: &str, version: &str, plural: &str) -> Option<&'static Review> {
    (version == "v1")
        .then(|| {
            REVIEWS
                .iter()
                .find(|r| r.group == group && r.plural == plural)
        })
        .flatten()
}

/// The discovery entries of the reviews of `group/version`.
pub(crate) fn discovery(group: &str, version: &str) -> impl Iterator<Item = Value> {
    REVIEWS
        .iter()
        .filter(move |r| r.group == group && version == "v1")
        .map(|r| {
            json!({
                "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                "kind": r.kind, "verbs": ["create"],
            })
        })
}

/// The groups of the reviews.
pub(crate) const GROUPS: [&str; 2] = [AUTHN, AUTHZ];

/// A string field of a JSON object, or "".
fn str_of<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The answer to a review `obj` (POSTed by `user`): `obj` with its `status`, as the API
/// server answers (201 Created).
pub(crate) async fn answer(
    shared: &Shared,
    review: &Review,
    namespace: Option<&str>,
    user: &User,
    mut obj: Value,
) -> Result<Value, ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request("the body is not an object"));
    }
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = match review.kind {
        "SelfSubjectReview" => json!({"userInfo": user.to_json()}),
        "TokenReview" => token_review(shared, &spec).await,
        "SelfSubjectRulesReview" => {
            let (resource_rules, non_resource_rules) =
                shared.policy.rules_of(user, str_of(&spec, "namespace"));
            json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false})
        }
        _ => {
            let subject = if review.kind == "SelfSubjectAccessReview" {
                user.clone()
            } else {
                User {
                    name: str_of(&spec, "user").to_owned(),
                    groups: crate::access::strings(&spec["groups"]),
                }
            };
            let attrs = &spec["resourceAttributes"];
            let a = Attributes {
                verb: str_of(attrs, "verb"),
                group: str_of(attrs, "group"),
                resource: str_of(attrs, "resource"),
                subresource: str_of(attrs, "subresource"),
                namespace: namespace.unwrap_or_else(|| str_of(attrs, "namespace")),
            };
            let allowed = attrs.is_null() || shared.policy.allows(&subject, &a);
            if allowed {
                json!({"allowed": true})
            } else {
                json!({"allowed": false, "reason": "no access rule allows it"})
            }
        }
    };
    obj["apiVersion"] = json!(format!("{}/v1", review.group));
    obj["kind"] = json!(review.kind);
    if obj.get("metadata").is_none_or(Value::is_null) {
        obj["metadata"] = json!({});
    }
    obj["metadata"]["creationTimestamp"] = Value::Null;
    obj["status"] = status;
    Ok(obj)
}

/// The status of a `TokenReview` of `spec.token`: authenticated for the audiences asked
/// (none: the API audience) that the token names (`authenticator.Audiences` intersection),
/// else the authenticator's error.
async fn token_review(shared: &Shared, spec: &Value) -> Value {
    let mut wanted: Vec<String> = crate::access::strings(&spec["audiences"]);
    if wanted.is_empty() {
        wanted.push(crate::tokens::ISSUER.to_owned());
    }
    match crate::authn::verify(shared, str_of(spec, "token")).await {
        Ok(claims) => {
            let audiences: Vec<&String> = wanted
                .iter()
                .filter(|w| claims.audiences.contains(w))
                .collect();
            if audiences.is_empty() {
                let error = format!(
                    "token audiences {} is invalid for the target audiences {}",
                    go_quoted(&claims.audiences),
                    go_quoted(&wanted)
                );
                return json!({"authenticated": false, "error": error});
            }
            let user = User::service_account(&claims.namespace, &claims.name);
            json!({"authenticated": true, "user": user.to_json(), "audiences": audiences})
        }
        Err(error) => json!({"authenticated": false, "error": error}),
    }
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_quoted(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| serde_json::to_string(s).unwrap_or_default())
        .collect();
    format!("[{}]", quoted.join(" "))
}
