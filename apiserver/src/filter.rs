//! Per-request filters: namespace, label selector and field selector.

use std::collections::BTreeMap;

use kcache_store::parse_label_selector;
use kube_core::{Resource, Selector, SelectorExt};

use crate::error::ApiError;
use crate::object::Object;
use crate::query::Query;
use crate::resource::ResourceDef;

/// One `field=value` or `field!=value` requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldRequirement {
    pub(crate) field: String,
    pub(crate) equal: bool,
    pub(crate) value: String,
}

/// What a list or watch selects: a namespace, labels and fields.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    pub(crate) namespace: Option<String>,
    pub(crate) label: Selector,
    pub(crate) fields: Vec<FieldRequirement>,
}

static EMPTY_LABELS: BTreeMap<String, String> = BTreeMap::new();

impl Filter {
    /// Parses the selectors of a request (`labelSelector`, `fieldSelector`); bad selectors,
    /// including ones that are not UTF-8, are 400 BadRequest.
    pub(crate) fn from_query(
        def: &ResourceDef,
        namespace: Option<&str>,
        query: &Query,
    ) -> Result<Self, ApiError> {
        let label_selector = query.text("labelSelector")?;
        let field_selector = query.text("fieldSelector")?;
        let label = parse_label_selector(label_selector.unwrap_or(""))
            .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))?;
        let fields = parse_field_selector(field_selector.unwrap_or(""))?;
        for req in &fields {
            if !def.supports_field(&req.field) {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {}",
                    req.field
                )));
            }
        }
        Ok(Self {
            namespace: namespace.filter(|ns| !ns.is_empty()).map(str::to_owned),
            label,
            fields,
        })
    }

    /// Whether the labels and fields select everything (namespace aside).
    pub(crate) fn selects_all(&self) -> bool {
        self.label.selects_all() && self.fields.is_empty()
    }

    /// Whether `obj` passes the filter.
    pub(crate) fn matches(&self, obj: &Object) -> bool {
        let meta = obj.meta();
        if let Some(ns) = &self.namespace
            && meta.namespace.as_deref() != Some(ns.as_str())
        {
            return false;
        }
        if !self.label.selects_all()
            && !self
                .label
                .matches(meta.labels.as_ref().unwrap_or(&EMPTY_LABELS))
        {
            return false;
        }
        self.fields.iter().all(|req| {
            let value = obj.field(&req.field);
            let value = value.as_deref().unwrap_or("");
            (value == req.value) == req.equal
        })
    }

    /// The value of an exact `field=value` requirement on `field`, if any.
    pub(crate) fn exact_field(&self, field: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|r| r.equal && r.field == field)
            .map(|r| r.value.as_str())
    }
}

/// Parses `a=b,c!=d,e==f` (backslash escapes `,`, `=` and `!` in values).
pub(crate) fn parse_field_selector(selector: &str) -> Result<Vec<FieldRequirement>, ApiError> {
    let mut out = Vec::new();
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = selector.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n) => {
                    cur.push('\\');
                    cur.push(n);
                }
                None => {
                    return Err(ApiError::bad_request(format!(
                        "invalid field selector {selector:?}: trailing backslash"
                    )));
                }
            },
            ',' => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    parts.push(cur);
    for part in parts {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (field, equal, value) = if let Some((f, v)) = split_unescaped(part, "!=") {
            (f, false, v)
        } else if let Some((f, v)) = split_unescaped(part, "==") {
            (f, true, v)
        } else if let Some((f, v)) = split_unescaped(part, "=") {
            (f, true, v)
        } else {
            return Err(ApiError::bad_request(format!(
                "invalid selector: '{selector}'; can't understand '{part}'"
            )));
        };
        let field = field.trim();
        if field.is_empty() {
            return Err(ApiError::bad_request(format!(
                "invalid field selector {selector:?}: empty field"
            )));
        }
        out.push(FieldRequirement {
            field: field.to_owned(),
            equal,
            value: unescape(value.trim()),
        });
    }
    Ok(out)
}

/// Splits `s` at the first `op` not escaped by a backslash. Walks characters, not bytes: `s`
/// may hold multi-byte characters anywhere.
fn split_unescaped<'a>(s: &'a str, op: &str) -> Option<(&'a str, &'a str)> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if let (Some(head), Some(rest)) = (s.get(..i), s.get(i..))
            && let Some(tail) = rest.strip_prefix(op)
        {
            return Some((head, tail));
        }
    }
    None
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_selectors_parse_equal_and_not_equal() {
        let f = parse_field_selector("spec.nodeName=a,status.phase!=Running,metadata.name==x\\,y")
            .unwrap();
        assert_eq!(f.len(), 3);
        assert!(!f[1].equal);
        assert_eq!(f[2].value, "x,y");
        assert!(parse_field_selector("nonsense").is_err());
    }

    #[test]
    fn multi_byte_characters_in_field_selectors_are_bad_requests_not_panics() {
        for selector in ["metadata.name€€", "€", "metadata.name\\€€", "a\\"] {
            let err = parse_field_selector(selector).unwrap_err();
            assert_eq!(err.code, 400, "{selector:?}");
        }
        // Syntax only: an unknown field is rejected later, against the resource.
        let f = parse_field_selector("metadata.name=€€,€!=\\€,€\\€=€").unwrap();
        assert_eq!(f[0].value, "€€");
        assert_eq!(
            (f[1].field.as_str(), f[1].equal, f[1].value.as_str()),
            ("€", false, "€")
        );
    }
}
