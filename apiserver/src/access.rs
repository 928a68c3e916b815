//! Who a request is ([`User`]; authn.rs finds it from the bearer token) and what the
//! authorization reviews answer ([`AccessRule`]).
//!
//! The server authorizes nothing itself (every authenticated request may do anything, as a
//! cluster admin); the rules only decide what `SelfSubjectAccessReview`, `SubjectAccessReview`
//! and `SelfSubjectRulesReview` answer, so that controllers and `kubectl auth can-i` can be
//! tested against a chosen policy.

use serde_json::{Value, json};

/// A user as the authenticators of the API server describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct User {
    pub(crate) name: String,
    pub(crate) groups: Vec<String>,
}

impl User {
    /// The user of requests with the server's token or none: a cluster admin.
    pub(crate) fn admin() -> Self {
        Self {
            name: "kcache-admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        }
    }

    /// A service account's user (what a token of `kubectl create token` authenticates as).
    pub(crate) fn service_account(namespace: &str, name: &str) -> Self {
        Self {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
        }
    }

    /// The `UserInfo` JSON of reviews.
    pub(crate) fn to_json(&self) -> Value {
        json!({"username": self.name, "groups": self.groups})
    }
}

/// One rule of the access policy the authorization reviews answer from: a request is allowed
/// when some rule matches its user (or one of its groups), verb, API group, resource and
/// namespace. `"*"` matches anything; an empty list matches anything too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessRule {
    /// User names or group names the rule applies to.
    pub subjects: Vec<String>,
    /// Verbs (`get`, `list`, `create`, ...).
    pub verbs: Vec<String>,
    /// API groups (`""` for the core group).
    pub api_groups: Vec<String>,
    /// Resources (`pods`, `deployments`, `pods/log`).
    pub resources: Vec<String>,
    /// Namespaces (cluster-scoped requests have none and match only rules without namespaces).
    pub namespaces: Vec<String>,
}

/// The strings of a JSON array (none when it is not one).
pub(crate) fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn matches(list: &[String], value: &str) -> bool {
    list.is_empty() || list.iter().any(|v| v == "*" || v == value)
}

/// The attributes of one access review (`spec.resourceAttributes`).
#[derive(Debug, Default)]
pub(crate) struct Attributes<'a> {
    pub(crate) verb: &'a str,
    pub(crate) group: &'a str,
    pub(crate) resource: &'a str,
    pub(crate) subresource: &'a str,
    pub(crate) namespace: &'a str,
}

impl AccessRule {
    fn applies_to(&self, user: &User) -> bool {
        self.subjects.is_empty()
            || self
                .subjects
                .iter()
                .any(|s| s == "*" || *s == user.name || user.groups.contains(s))
    }

    fn allows(&self, user: &User, a: &Attributes<'_>) -> bool {
        let resource = if a.subresource.is_empty() {
            a.resource.to_owned()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        self.applies_to(user)
            && matches(&self.verbs, a.verb)
            && matches(&self.api_groups, a.group)
            && matches(&self.resources, &resource)
            && (self.namespaces.is_empty() || matches(&self.namespaces, a.namespace))
    }

    fn to_rule_json(&self) -> Value {
        let all = |l: &[String]| {
            if l.is_empty() {
                vec!["*".to_owned()]
            } else {
                l.to_vec()
            }
        };
        json!({
            "verbs": all(&self.verbs),
            "apiGroups": all(&self.api_groups),
            "resources": all(&self.resources),
        })
    }
}

/// The access policy: everything allowed (`None`, the default) or a rule set.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy(pub(crate) Option<Vec<AccessRule>>);

impl Policy {
    /// Whether `user` may do what `a` describes.
    pub(crate) fn allows(&self, user: &User, a: &Attributes<'_>) -> bool {
        self.0
            .as_ref()
            .is_none_or(|rules| rules.iter().any(|r| r.allows(user, a)))
    }

    /// The `resourceRules` and `nonResourceRules` of `user` in `namespace`
    /// (`SelfSubjectRulesReview`).
    pub(crate) fn rules_of(&self, user: &User, namespace: &str) -> (Vec<Value>, Vec<Value>) {
        match &self.0 {
            None => (
                vec![json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})],
                vec![json!({"verbs": ["*"], "nonResourceURLs": ["*"]})],
            ),
            Some(rules) => (
                rules
                    .iter()
                    .filter(|r| {
                        r.applies_to(user)
                            && (r.namespaces.is_empty() || matches(&r.namespaces, namespace))
                    })
                    .map(AccessRule::to_rule_json)
                    .collect(),
                Vec::new(),
            ),
        }
    }
}
