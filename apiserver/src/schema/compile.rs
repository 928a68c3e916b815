//! Compiles JSON Schema (OpenAPI v3 with `x-kubernetes-*` extensions) into a [`Schema`].

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

use super::{Gvk, KeyField, List, ListKind, Schema, Type, TypeId, UNTYPED};

/// Defaults of associative-list key fields that Kubernetes' OpenAPI declares (`default: TCP` on
/// every `protocol` key: container, service and endpoint ports) and kubernetes-validate's
/// conversion drops. A schema's own `default` wins.
const KEY_DEFAULTS: &[(&str, &str)] = &[("protocol", "TCP")];

const REF_PREFIX: &str = "#/$defs/";

struct Compiler<'d> {
    types: Vec<Type>,
    named: HashMap<&'d str, TypeId>,
    definitions: &'d Map<String, Value>,
}

/// Compiles every definition; kinds (`x-kubernetes-group-version-kind`) become roots.
pub(super) fn from_definitions(definitions: &Map<String, Value>) -> Schema {
    let mut c = Compiler {
        types: vec![Type::Untyped],
        named: HashMap::new(),
        definitions,
    };
    for name in definitions.keys() {
        c.named.insert(name, TypeId(c.types.len()));
        c.types.push(Type::Untyped);
    }
    let mut roots = HashMap::new();
    for (name, def) in definitions {
        let compiled = c.compile_inline(def);
        if let Some(&id) = c.named.get(name.as_str()) {
            c.types[id.0] = compiled;
            for gvk in def
                .get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let part = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                roots.insert((part("group"), part("version"), part("kind")), id);
            }
        }
    }
    Schema {
        types: c.types,
        roots,
    }
}

/// Compiles one schema (a custom resource's `openAPIV3Schema`) as the root of `gvk`.
pub(super) fn from_root(gvk: Gvk, schema: &Value) -> Schema {
    let empty = Map::new();
    let mut c = Compiler {
        types: vec![Type::Untyped],
        named: HashMap::new(),
        definitions: &empty,
    };
    let root = c.compile(schema);
    Schema {
        types: c.types,
        roots: HashMap::from([(gvk, root)]),
    }
}

/// The non-null `type` of a schema node (`type` may be a string or a list with `"null"`).
fn type_name(node: &Value) -> Option<&str> {
    match node.get("type") {
        Some(Value::String(t)) => Some(t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ => None,
    }
}

fn extension<'v>(node: &'v Value, name: &str) -> Option<&'v str> {
    node.get(name).and_then(Value::as_str)
}

impl<'d> Compiler<'d> {
    /// The type of a schema node: a reference resolves to its definition, anything else is
    /// compiled into a new type.
    fn compile(&mut self, node: &Value) -> TypeId {
        if let Some(id) = self.reference(node) {
            return id;
        }
        let ty = self.compile_inline(node);
        if ty == Type::Untyped {
            return UNTYPED;
        }
        self.types.push(ty);
        TypeId(self.types.len() - 1)
    }

    /// `$ref`, or `allOf` with a single `$ref` (how OpenAPI v3 attaches a default to one).
    fn reference(&self, node: &Value) -> Option<TypeId> {
        let target = match node.get("$ref") {
            Some(r) => r.as_str(),
            None => match node.get("allOf").and_then(Value::as_array) {
                Some(all) if all.len() == 1 => all[0].get("$ref").and_then(Value::as_str),
                _ => None,
            },
        }?;
        let name = target.strip_prefix(REF_PREFIX).unwrap_or(target);
        Some(self.named.get(name).copied().unwrap_or(UNTYPED))
    }

    fn compile_inline(&mut self, node: &Value) -> Type {
        let atomic = extension(node, "x-kubernetes-map-type") == Some("atomic");
        if let Some(props) = node.get("properties").and_then(Value::as_object) {
            let fields: BTreeMap<String, TypeId> = props
                .iter()
                .map(|(name, field)| (name.clone(), self.compile(field)))
                .collect();
            let open = node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
            return Type::Struct {
                fields,
                atomic,
                open,
            };
        }
        match type_name(node) {
            Some("array") => Type::List(self.list(node)),
            Some("object") => match node.get("additionalProperties") {
                Some(values @ Value::Object(_)) => Type::Map {
                    values: self.compile(values),
                    atomic,
                },
                _ if atomic => Type::Scalar,
                _ => Type::Untyped,
            },
            Some(_) => Type::Scalar,
            None if node.get("x-kubernetes-preserve-unknown-fields")
                == Some(&Value::Bool(true)) =>
            {
                Type::Untyped
            }
            None if node.get("oneOf").is_some() || node.get("anyOf").is_some() => Type::Scalar,
            None if node.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) => {
                Type::Scalar
            }
            None => Type::Untyped,
        }
    }

    fn list(&mut self, node: &Value) -> List {
        let items_node = node.get("items").unwrap_or(&Value::Null);
        let items = self.compile(items_node);
        let kind = match extension(node, "x-kubernetes-list-type") {
            Some("set") => ListKind::Set,
            Some("map") => {
                let item_props = item_properties(self.definitions, items_node);
                let keys = node
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|name| KeyField {
                        name: name.to_owned(),
                        default: key_default(item_props, name),
                    })
                    .collect();
                ListKind::Map(keys)
            }
            _ => ListKind::Atomic,
        };
        List {
            items,
            kind,
            patch_merge_key: extension(node, "x-kubernetes-patch-merge-key").map(str::to_owned),
            patch_strategy: extension(node, "x-kubernetes-patch-strategy").map(str::to_owned),
        }
    }
}

/// The `properties` of a list's item schema, following a reference.
fn item_properties<'a>(
    definitions: &'a Map<String, Value>,
    items: &'a Value,
) -> Option<&'a Map<String, Value>> {
    let resolved = match items.get("$ref").and_then(Value::as_str) {
        Some(r) => definitions.get(r.strip_prefix(REF_PREFIX).unwrap_or(r))?,
        None => items,
    };
    resolved.get("properties").and_then(Value::as_object)
}

fn key_default(props: Option<&Map<String, Value>>, name: &str) -> Option<Value> {
    props
        .and_then(|p| p.get(name))
        .and_then(|field| field.get("default"))
        .cloned()
        .or_else(|| {
            KEY_DEFAULTS
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, v)| Value::String((*v).to_owned()))
        })
}
