//! Port names and numbers (`k8s.io/apimachinery/pkg/util/validation`: `IsValidPortName`,
//! `IsValidPortNum`; `ValidatePortNumOrName` of `pkg/apis/core/validation`).

use serde_json::Value;

use super::field::invalid;
use super::{Cause, invalid_value};

/// `validation.IsValidPortNum`'s message.
pub(super) const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// `validation.IsValidPortName`: an IANA service name.
pub(super) fn port_name_errors(name: &str) -> Vec<&'static str> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push("must be no more than 15 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)");
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen");
    }
    errs
}

/// `ValidatePortNumOrName`: a number in range, or an IANA service name.
pub(super) fn num_or_name(value: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    match value {
        Some(Value::String(name)) => {
            for m in port_name_errors(name) {
                causes.push((path.to_owned(), invalid_value(name, m)));
            }
        }
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            if !(1..=65535).contains(&n) {
                causes.push(invalid(path, &n.to_string(), PORT_RANGE));
            }
        }
    }
}
