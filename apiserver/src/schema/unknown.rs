//! The fields of a value that its type does not declare, as Kubernetes' strict JSON decoding
//! (sigs.k8s.io/json with `DisallowUnknownFields`) reports them (`spec.foo`,
//! `spec.template.spec.containers[0].foo`, map values under their key), taken out as decoding
//! drops them; and Go's embedded structs of a protobuf body inlined.

use serde_json::Value;

use super::{Ty, Type};

impl Ty<'_> {
    /// Removes the fields of `value` that this type does not declare (as decoding into the
    /// kind's Go type drops them) and answers their paths, in the value's order; nothing is
    /// looked at below a map of anything or an untyped value.
    pub(crate) fn take_unknown_fields(self, value: &mut Value) -> Vec<String> {
        let mut out = Vec::new();
        self.take_unknown(value, &mut String::new(), &mut out);
        out
    }

    fn take_unknown(self, value: &mut Value, path: &mut String, out: &mut Vec<String>) {
        let len = path.len();
        match (self.get(), value) {
            (Type::Struct { fields, open, .. }, Value::Object(map)) => {
                map.retain(|name, v| {
                    push_field(path, name);
                    let known = match fields.get(name) {
                        Some(&id) => {
                            self.at(id).take_unknown(v, path, out);
                            true
                        }
                        None if *open => true,
                        None => {
                            out.push(path.clone());
                            false
                        }
                    };
                    path.truncate(len);
                    known
                });
            }
            (Type::Map { values, .. }, Value::Object(map)) => {
                for (key, v) in map.iter_mut() {
                    push_field(path, key);
                    self.at(*values).take_unknown(v, path, out);
                    path.truncate(len);
                }
            }
            (Type::List(list), Value::Array(items)) => {
                for (i, item) in items.iter_mut().enumerate() {
                    path.push_str(&format!("[{i}]"));
                    self.at(list.items).take_unknown(item, path, out);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }
}

impl Ty<'_> {
    /// Inlines, in `value`, the objects under fields this type does not declare into their
    /// parent (an existing field wins): Go's embedded structs, which protobuf encodes as a
    /// field of their own (`ingressRuleValue`, `volumeSource`, `handler`) and JSON inlines.
    pub(crate) fn inline_embedded(self, value: &mut Value) {
        match (self.get(), value) {
            (Type::Struct { fields, .. }, Value::Object(map)) => {
                let embedded: Vec<String> = map
                    .iter()
                    .filter(|(name, v)| !fields.contains_key(*name) && v.is_object())
                    .map(|(name, _)| name.clone())
                    .collect();
                for name in embedded {
                    if let Some(Value::Object(inner)) = map.remove(&name) {
                        for (k, v) in inner {
                            map.entry(k).or_insert(v);
                        }
                    }
                }
                for (name, v) in map.iter_mut() {
                    if let Some(&id) = fields.get(name) {
                        self.at(id).inline_embedded(v);
                    }
                }
            }
            (Type::Map { values, .. }, Value::Object(map)) => {
                for v in map.values_mut() {
                    self.at(*values).inline_embedded(v);
                }
            }
            (Type::List(list), Value::Array(items)) => {
                for item in items {
                    self.at(list.items).inline_embedded(item);
                }
            }
            _ => {}
        }
    }
}

fn push_field(path: &mut String, name: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(name);
}
