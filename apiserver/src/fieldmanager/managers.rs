//! `metadata.managedFields`: entries, their identity, order and encoding
//! (k8s.io/apimachinery `util/managedfields/internal/managedfields.go`).

use serde_json::{Map, Value, json};

use super::set::{DecodeError, FieldSet};

/// Whether an entry records applies or other writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, update and non-apply patches.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "Apply",
            Self::Update => "Update",
        }
    }
}

/// One manager's fields.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) manager: String,
    pub(crate) operation: Operation,
    pub(crate) api_version: String,
    /// RFC 3339, whole seconds, UTC.
    pub(crate) time: Option<String>,
    /// Empty for the main resource.
    pub(crate) subresource: String,
    pub(crate) fields: FieldSet,
}

impl Entry {
    /// Whether this entry is the one a write by (manager, operation, apiVersion, subresource)
    /// records into: apiVersion only counts for Update entries.
    pub(crate) fn is(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == Operation::Apply || self.api_version == other.api_version)
    }

    /// How conflict messages name the manager: `"name"[ with subresource "s"][ using v]`.
    pub(crate) fn describe(&self) -> String {
        let mut out = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }

    fn encode(&self) -> Value {
        let mut entry = json!({
            "manager": self.manager,
            "operation": self.operation.as_str(),
            "apiVersion": self.api_version,
        });
        if let Some(time) = &self.time {
            entry["time"] = json!(time);
        }
        entry["fieldsType"] = json!("FieldsV1");
        entry["fieldsV1"] = self.fields.to_fields_v1();
        if !self.subresource.is_empty() {
            entry["subresource"] = json!(self.subresource);
        }
        entry
    }

    fn decode(value: &Value) -> Result<Entry, DecodeError> {
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let operation = match value.get("operation").and_then(Value::as_str) {
            Some("Apply") => Operation::Apply,
            _ => Operation::Update,
        };
        Ok(Entry {
            manager: text("manager"),
            operation,
            api_version: text("apiVersion"),
            time: value.get("time").and_then(Value::as_str).map(str::to_owned),
            subresource: text("subresource"),
            fields: FieldSet::from_fields_v1(value.get("fieldsV1").unwrap_or(&json!({})))?,
        })
    }
}

/// All managers of an object.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Managers(pub(crate) Vec<Entry>);

impl Managers {
    /// The managers in an object's `metadata.managedFields` (absent: none).
    pub(crate) fn of(object: &Value) -> Result<Managers, DecodeError> {
        match object.pointer("/metadata/managedFields") {
            Some(Value::Array(entries)) => entries
                .iter()
                .map(Entry::decode)
                .collect::<Result<_, _>>()
                .map(Managers),
            _ => Ok(Managers::default()),
        }
    }

    /// The entry `like` identifies, created empty (with `like`'s fields cleared) if missing.
    pub(crate) fn entry(&mut self, like: &Entry) -> &mut Entry {
        let index = match self.0.iter().position(|e| e.is(like)) {
            Some(i) => i,
            None => {
                self.0.push(Entry {
                    fields: FieldSet::default(),
                    ..like.clone()
                });
                self.0.len() - 1
            }
        };
        &mut self.0[index]
    }

    /// Writes the entries into `object`'s metadata, sorted as Kubernetes sorts them (operation,
    /// time, manager, apiVersion, subresource), dropping empty ones; no entries: no field.
    pub(crate) fn write(mut self, object: &mut Value) {
        self.0.retain(|e| !e.fields.is_empty());
        self.0.sort_by(|a, b| {
            (
                a.operation,
                &a.time,
                &a.manager,
                &a.api_version,
                &a.subresource,
            )
                .cmp(&(
                    b.operation,
                    &b.time,
                    &b.manager,
                    &b.api_version,
                    &b.subresource,
                ))
        });
        let Some(Value::Object(meta)) = object.get_mut("metadata") else {
            return;
        };
        if self.0.is_empty() {
            meta.remove("managedFields");
        } else {
            let entries = self.0.iter().map(Entry::encode).collect();
            meta.insert("managedFields".into(), Value::Array(entries));
        }
    }
}

/// Removes `metadata.managedFields` from an object (its fields are never tracked).
pub(crate) fn without_managed_fields(object: &Value) -> Value {
    let mut out = object.clone();
    if let Some(Value::Object(meta)) = out.get_mut("metadata") {
        meta.remove("managedFields");
    }
    out
}

/// An empty JSON object.
pub(crate) fn empty_object() -> Value {
    Value::Object(Map::new())
}
