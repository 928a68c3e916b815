//! The query options of reads: resource versions, `resourceVersionMatch`, selectors, and the
//! `ListOptions` validation.

use super::context::RequestCtx;
use crate::error::ApiError;
use crate::filter::{FieldRequirement, Filter};
use crate::query::Query;
use crate::resource_version;

/// 422 Invalid of `ListOptions` with `causes` (field, message).
pub(super) fn list_options_invalid(causes: &[(&str, &str)]) -> ApiError {
    let causes: Vec<(String, String)> = causes
        .iter()
        .map(|(f, m)| ((*f).to_owned(), (*m).to_owned()))
        .collect();
    ApiError::invalid("meta.k8s.io", "ListOptions", "", &causes)
}

/// `resourceVersion` of a get or a list: unparsable is the storage's invalid error, which the
/// API server's get and list handlers do not convert into a Status (500, no reason).
pub(super) fn read_rv(rv: Option<&str>) -> Result<Option<u64>, ApiError> {
    resource_version::parse_optional(rv)
        .map_err(|e| ApiError::unconverted(format!("resourceVersion: {e}")))
}

/// The filter of a read: its namespace, selectors, and for a named watch the name.
pub(super) fn request_filter(
    ctx: &RequestCtx<'_>,
    extra_name: Option<&str>,
) -> Result<Filter, ApiError> {
    let mut filter = Filter::from_query(ctx.def, ctx.path.namespace, ctx.query)?;
    if let Some(name) = extra_name {
        filter.fields.push(FieldRequirement {
            field: "metadata.name".into(),
            equal: true,
            value: name.to_owned(),
        });
    }
    Ok(filter)
}

/// `resourceVersionMatch`, if given (only `Exact` and `NotOlderThan` are valid).
pub(super) fn parse_match(q: &Query) -> Result<Option<&str>, ApiError> {
    match q.non_empty("resourceVersionMatch") {
        None => Ok(None),
        Some(m @ ("Exact" | "NotOlderThan")) => Ok(Some(m)),
        Some(other) => Err(list_options_invalid(&[(
            "resourceVersionMatch",
            &format!(
                "Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\""
            ),
        )])),
    }
}

/// A list's `ListOptions` validation (422 with every cause, as apimachinery's
/// `ValidateListOptions`).
pub(super) fn validate_list_options(q: &Query) -> Result<(), ApiError> {
    let mut causes: Vec<(&str, String)> = Vec::new();
    if let Some(m) = q.non_empty("resourceVersionMatch") {
        let rv = q.non_empty("resourceVersion");
        if rv.is_none() {
            causes.push((
                "resourceVersionMatch",
                "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
                    .into(),
            ));
        }
        if q.non_empty("continue").is_some() {
            causes.push((
                "resourceVersionMatch",
                "Forbidden: resourceVersionMatch is forbidden when continue is provided".into(),
            ));
        }
        if m != "Exact" && m != "NotOlderThan" {
            causes.push((
                "resourceVersionMatch",
                format!(
                    "Unsupported value: {}: supported values: \"Exact\", \"NotOlderThan\"",
                    serde_json::to_string(m).unwrap_or_default()
                ),
            ));
        }
        if m == "Exact" && rv == Some("0") {
            causes.push((
                "resourceVersionMatch",
                "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""
                    .into(),
            ));
        }
    }
    if q.get("sendInitialEvents").is_some() {
        causes.push((
            "sendInitialEvents",
            "Forbidden: sendInitialEvents is forbidden for list".into(),
        ));
    }
    if causes.is_empty() {
        return Ok(());
    }
    let causes: Vec<(&str, &str)> = causes.iter().map(|(f, m)| (*f, m.as_str())).collect();
    Err(list_options_invalid(&causes))
}
