//! [`ApiError`]: a failure answered with a Kubernetes `Status` body.

use bytes::Bytes;
use serde_json::{Value, json};

/// An error answered with a `Status` body (`{"kind":"Status","apiVersion":"v1",...}`) whose HTTP
/// code equals [`ApiError::code`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
#[non_exhaustive]
pub struct ApiError {
    /// The HTTP status code.
    pub code: u16,
    /// The machine-readable reason (`NotFound`, `Expired`, ...).
    pub reason: String,
    /// The human-readable message.
    pub message: String,
    /// `details` (name, group, kind, causes, retryAfterSeconds), if any.
    pub details: Option<Value>,
}

impl ApiError {
    /// An error with a code, reason and message.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.to_owned(),
            message: message.into(),
            details: None,
        }
    }

    /// Adds `details`.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 404 NotFound for `resource` (plural, with group: `deployments.apps`) named `name`.
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, plural)),
        )
        .with_details(details(group, plural, name))
    }

    /// 404 NotFound for a path the server does not serve.
    pub fn no_route() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, plural)),
        )
        .with_details(details(group, plural, name))
    }

    /// 409 Conflict on a stale resourceVersion or failed precondition.
    pub fn conflict(group: &str, plural: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, plural)
            ),
        )
        .with_details(details(group, plural, name))
    }

    /// 410 Expired: "too old resource version: N (M)".
    pub fn too_old(requested: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// 410 Expired for a continue token that can no longer be served.
    pub fn continue_expired() -> Self {
        Self::new(
            410,
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
        )
    }

    /// 504 Timeout, cause ResourceVersionTooLarge, retry after 1 s.
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        Self::new(
            504,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
        )
        .with_details(json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1
        }))
    }

    /// 422 Invalid for `kind` named `name`, with one cause per `(field, message)`; each cause's
    /// reason follows its message as in Kubernetes (`Invalid value: ...` is FieldValueInvalid,
    /// `Forbidden: ...` FieldValueForbidden, `Unsupported value: ...` FieldValueNotSupported,
    /// `Required value...` FieldValueRequired, `Not found: ...` FieldValueNotFound).
    pub fn invalid(group: &str, kind: &str, name: &str, causes: &[(String, String)]) -> Self {
        let text: Vec<String> = causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        let what = if group.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}.{group}")
        };
        let message = match text.len() {
            1 => format!("{what} \"{name}\" is invalid: {}", text[0]),
            _ => format!("{what} \"{name}\" is invalid: [{}]", text.join(", ")),
        };
        let causes: Vec<Value> = causes
            .iter()
            .map(|(f, m)| {
                let mut cause = json!({"reason": cause_reason(m), "message": m, "field": f});
                // StatusCause's field is `omitempty` (an error about the whole object).
                if let (true, Some(c)) = (f.is_empty(), cause.as_object_mut()) {
                    c.remove("field");
                }
                cause
            })
            .collect();
        // StatusDetails' fields are `omitempty`: an empty name, group or kind is left out.
        let mut d = json!({"causes": causes});
        for (field, value) in [("name", name), ("group", group), ("kind", kind)] {
            if !value.is_empty() {
                d[field] = Value::String(value.to_owned());
            }
        }
        Self::new(422, "Invalid", message).with_details(d)
    }

    /// 500 with no reason: what Kubernetes answers for errors its handlers do not convert into
    /// a Status (such as an unparsable `resourceVersion` on a get or a list).
    pub fn unconverted(message: impl Into<String>) -> Self {
        Self::new(500, "", message)
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large_body(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("the request body is larger than {limit} bytes"),
        )
    }

    /// 406 NotAcceptable: the response cannot take the form the Accept header asked for.
    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// `details.retryAfterSeconds`, if positive.
    pub fn retry_after(&self) -> Option<u64> {
        self.details
            .as_ref()?
            .get("retryAfterSeconds")?
            .as_u64()
            .filter(|s| *s > 0)
    }

    /// The `Status` object.
    pub fn to_status_value(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if self.reason.is_empty()
            && let Some(status) = v.as_object_mut()
        {
            status.remove("reason");
        }
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        v
    }

    /// The encoded `Status` body.
    pub fn to_body(&self) -> Bytes {
        Bytes::from(self.to_status_value().to_string())
    }
}

/// The reason of a field error from its message.
fn cause_reason(message: &str) -> &'static str {
    const REASONS: [(&str, &str); 7] = [
        ("Forbidden", "FieldValueForbidden"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Required value", "FieldValueRequired"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Too long", "FieldValueTooLong"),
        ("Too many", "FieldValueTooMany"),
        ("Not found", "FieldValueNotFound"),
    ];
    REASONS
        .iter()
        .find(|(prefix, _)| message.starts_with(prefix))
        .map_or("FieldValueInvalid", |(_, reason)| reason)
}

fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_owned()
    } else {
        format!("{plural}.{group}")
    }
}

fn details(group: &str, plural: &str, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": plural});
    if !group.is_empty() {
        d["group"] = Value::String(group.to_owned());
    }
    d
}
