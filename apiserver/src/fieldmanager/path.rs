//! Path elements of field sets and their two spellings: the `fieldsV1` keys (`f:`, `k:`, `v:`,
//! `i:`) and the human form of conflict messages (`.spec.replicas`, `[name="web"]`), as
//! structured-merge-diff's `fieldpath/element.go` and `serialize-pe.go`.

use std::fmt;

use serde_json::{Map, Value};

/// One step into an object. The derived order is the order of children in `fieldsV1`: fields,
/// then keys, then values, then indices (element.go `Compare`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum PathElement {
    /// A struct field or map key.
    Field(String),
    /// An associative-list item: the compact JSON object of its key fields (keys sorted).
    Key(String),
    /// A set item: its JSON value.
    Value(String),
    /// A list index (lists without a schema).
    Index(usize),
}

/// A path from the root of an object.
pub(crate) type Path = Vec<PathElement>;

impl PathElement {
    /// The element of an associative-list item with these key fields.
    pub(crate) fn key(fields: Map<String, Value>) -> Self {
        // serde_json's Map keeps keys sorted, as Kubernetes writes them.
        Self::Key(Value::Object(fields).to_string())
    }

    /// The element of a set item.
    pub(crate) fn value(item: &Value) -> Self {
        Self::Value(item.to_string())
    }

    /// The `fieldsV1` key of this element.
    pub(crate) fn encode(&self) -> String {
        match self {
            Self::Field(name) => format!("f:{name}"),
            Self::Key(json) => format!("k:{json}"),
            Self::Value(json) => format!("v:{json}"),
            Self::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `fieldsV1` key (`None` for `.` and anything malformed).
    pub(crate) fn decode(key: &str) -> Option<Self> {
        let (prefix, rest) = key.split_at_checked(2)?;
        match prefix {
            "f:" => Some(Self::Field(rest.to_owned())),
            "k:" => match serde_json::from_str::<Value>(rest).ok()? {
                Value::Object(fields) => Some(Self::key(fields)),
                _ => None,
            },
            "v:" => serde_json::from_str::<Value>(rest)
                .ok()
                .map(|v| Self::value(&v)),
            "i:" => rest.parse().ok().map(Self::Index),
            _ => None,
        }
    }
}

impl fmt::Display for PathElement {
    /// The human form: `.name`, `[k1=v1,k2="s"]`, `[="value"]`, `[3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Field(name) => write!(f, ".{name}"),
            Self::Key(json) => {
                let fields = match serde_json::from_str::<Value>(json) {
                    Ok(Value::Object(fields)) => fields,
                    _ => Map::new(),
                };
                let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "[{}]", parts.join(","))
            }
            Self::Value(json) => write!(f, "[={json}]"),
            Self::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// The human form of a whole path.
pub(crate) fn display(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

#[cfg(test)]
mod tests {
    //! Spellings from structured-merge-diff `fieldpath/serialize-pe_test.go` and
    //! `fieldpath/element_test.go`.
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_v1_keys_round_trip() {
        for key in [
            "f:spec",
            r#"k:{"name":"web"}"#,
            r#"k:{"containerPort":80,"protocol":"TCP"}"#,
            r#"v:"example.com/finalizer""#,
            "v:3",
            "i:7",
        ] {
            let element = PathElement::decode(key).unwrap();
            assert_eq!(element.encode(), key);
        }
    }

    #[test]
    fn key_elements_sort_their_fields() {
        let element = PathElement::decode(r#"k:{"protocol":"TCP","containerPort":80}"#).unwrap();
        assert_eq!(
            element.encode(),
            r#"k:{"containerPort":80,"protocol":"TCP"}"#
        );
    }

    #[test]
    fn malformed_keys_do_not_decode() {
        for key in [".", "x:y", "k:[1]", "k:{", "i:x", "f"] {
            assert_eq!(PathElement::decode(key), None, "{key}");
        }
    }

    #[test]
    fn human_paths_read_as_kubernetes_prints_them() {
        let path = vec![
            PathElement::Field("spec".into()),
            PathElement::Field("containers".into()),
            PathElement::key(json!({"name": "web"}).as_object().unwrap().clone()),
            PathElement::Field("image".into()),
        ];
        assert_eq!(display(&path), r#".spec.containers[name="web"].image"#);
        let port = PathElement::key(
            json!({"containerPort": 80, "protocol": "TCP"})
                .as_object()
                .unwrap()
                .clone(),
        );
        assert_eq!(port.to_string(), r#"[containerPort=80,protocol="TCP"]"#);
        assert_eq!(PathElement::value(&json!("x")).to_string(), r#"[="x"]"#);
        assert_eq!(PathElement::Index(3).to_string(), "[3]");
    }

    #[test]
    fn children_order_is_fields_keys_values_indices() {
        let mut elements = vec![
            PathElement::Index(0),
            PathElement::value(&json!("a")),
            PathElement::Key("{}".into()),
            PathElement::Field("z".into()),
            PathElement::Field("a".into()),
        ];
        elements.sort();
        let encoded: Vec<String> = elements.iter().map(PathElement::encode).collect();
        assert_eq!(encoded, ["f:a", "f:z", "k:{}", r#"v:"a""#, "i:0"]);
    }
}
