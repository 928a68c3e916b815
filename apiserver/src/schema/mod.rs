//! Typed schemas of objects: which fields a kind has and how each list and map merges.
//!
//! A [`Schema`] is compiled once from JSON Schema (OpenAPI v3 style, with Kubernetes'
//! `x-kubernetes-*` extensions) and does not care where that came from: the built-in kinds'
//! definitions vendored under `apiserver/openapi/` ([`Schema::builtin`], loaded lazily on first
//! use) or a custom resource's structural schema ([`Schema::from_structural`]). It is the one
//! source for server-side apply's field sets and merge rules (`fieldmanager/`), strategic merge
//! patch's merge keys (`patch.rs`) and the extensions `/openapi/v3` serves (`openapi.rs`).
//! Objects of kinds without a schema are [`Type::Untyped`]: lists atomic, maps granular.

mod compile;
mod unknown;

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use serde_json::{Map, Value};

/// Kubernetes' OpenAPI definitions (`$defs` of kubernetes-validate's `_definitions.json`,
/// descriptions stripped); see `apiserver/openapi/PROVENANCE.md`.
const BUILTIN_DEFINITIONS: &str = include_str!("../../openapi/definitions.json");

/// An index into a schema's types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TypeId(usize);

/// How a list's items are identified and merged (`x-kubernetes-list-type`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ListKind {
    /// Replaced and owned as a whole.
    Atomic,
    /// Scalars, each item identified by its value.
    Set,
    /// Objects identified by the values of their key fields (`x-kubernetes-list-map-keys`).
    Map(Vec<KeyField>),
}

/// A key field of an associative list and the default used when an item leaves it out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeyField {
    pub(crate) name: String,
    pub(crate) default: Option<Value>,
}

/// A list type: its items, merge rule, and strategic merge patch directives.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct List {
    pub(crate) items: TypeId,
    pub(crate) kind: ListKind,
    /// `x-kubernetes-patch-merge-key`.
    pub(crate) patch_merge_key: Option<String>,
    /// `x-kubernetes-patch-strategy` (`merge`, `retainKeys`, `merge,retainKeys`, `replace`).
    pub(crate) patch_strategy: Option<String>,
}

/// One compiled type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Type {
    /// A string, number, boolean, int-or-string or other leaf.
    Scalar,
    /// An object with declared fields; `atomic` (`x-kubernetes-map-type: atomic`) is owned and
    /// replaced as a whole; `open` (`x-kubernetes-preserve-unknown-fields`) keeps undeclared
    /// fields too.
    Struct {
        fields: BTreeMap<String, TypeId>,
        atomic: bool,
        open: bool,
    },
    /// An object with arbitrary keys (`additionalProperties`).
    Map { values: TypeId, atomic: bool },
    /// An array.
    List(List),
    /// Anything (no schema, or `x-kubernetes-preserve-unknown-fields`): maps granular, lists
    /// atomic.
    Untyped,
}

/// Group, version and kind of a root type.
pub(crate) type Gvk = (String, String, String);

/// Compiled types and the root type of each kind.
#[derive(Debug)]
pub(crate) struct Schema {
    types: Vec<Type>,
    roots: HashMap<Gvk, TypeId>,
}

/// What [`Schema::type_of`] chose: a custom resource's compiled schema, or the built-in one.
#[derive(Debug)]
pub(crate) struct TypeOf {
    compiled: Option<Schema>,
    gvk: Gvk,
}

impl TypeOf {
    /// The resource's type (untyped when its schema does not have it).
    pub(crate) fn ty(&self) -> Ty<'_> {
        let schema = self.compiled.as_ref().unwrap_or_else(|| Schema::builtin());
        let (group, version, kind) = &self.gvk;
        schema
            .root(group, version, kind)
            .unwrap_or_else(|| schema.untyped())
    }
}

/// The untyped type, present in every schema at index 0.
const UNTYPED: TypeId = TypeId(0);

/// The built-in schema and the raw definitions it was compiled from.
struct Builtin {
    definitions: Map<String, Value>,
    schema: Schema,
}

static BUILTIN: LazyLock<Builtin> = LazyLock::new(|| {
    let definitions = match serde_json::from_str::<Value>(BUILTIN_DEFINITIONS) {
        Ok(Value::Object(map)) => map,
        // The vendored file is checked by the tests; an unreadable one leaves kinds untyped.
        _ => {
            tracing::error!("the vendored OpenAPI definitions are not a JSON object");
            Map::new()
        }
    };
    let schema = compile::from_definitions(&definitions);
    Builtin {
        definitions,
        schema,
    }
});

impl Schema {
    /// The schema of Kubernetes' built-in kinds.
    pub(crate) fn builtin() -> &'static Schema {
        &BUILTIN.schema
    }

    /// Adds the `x-kubernetes-*` extensions of built-in definition `name` (and of its
    /// properties, items and map values, recursively) to `target`, a schema of the same type
    /// generated elsewhere; what `target` already says is kept.
    pub(crate) fn add_builtin_extensions(name: &str, target: &mut Value) {
        if let Some(source) = BUILTIN.definitions.get(name) {
            add_extensions(source, target);
        }
    }

    /// A schema with one root `gvk` compiled from a custom resource's structural schema
    /// (`openAPIV3Schema`).
    pub(crate) fn from_structural(gvk: Gvk, schema: &Value) -> Schema {
        compile::from_root(gvk, schema)
    }

    /// The root type of a kind, if the schema has it.
    pub(crate) fn root(&self, group: &str, version: &str, kind: &str) -> Option<Ty<'_>> {
        let key = (group.to_owned(), version.to_owned(), kind.to_owned());
        self.roots.get(&key).map(|&id| Ty { schema: self, id })
    }

    /// The type of `resource`'s objects: its CRD version's `structural` schema (compiled
    /// here) if it has one, else its built-in definition, else untyped. The one place a
    /// resource's type is chosen; [`TypeOf::ty`] is the type.
    pub(crate) fn type_of(resource: &kube_core::ApiResource, structural: Option<&Value>) -> TypeOf {
        let gvk = (
            resource.group.clone(),
            resource.version.clone(),
            resource.kind.clone(),
        );
        let compiled = structural.map(|schema| Self::from_structural(gvk.clone(), schema));
        TypeOf { compiled, gvk }
    }

    /// The untyped type (objects without a schema).
    pub(crate) fn untyped(&self) -> Ty<'_> {
        Ty {
            schema: self,
            id: UNTYPED,
        }
    }
}

fn add_extensions(source: &Value, target: &mut Value) {
    let (Value::Object(source), Value::Object(target)) = (source, target) else {
        return;
    };
    for (key, value) in source {
        if key.starts_with("x-kubernetes-") && !target.contains_key(key) {
            target.insert(key.clone(), value.clone());
        }
    }
    for nested in ["items", "additionalProperties"] {
        if let (Some(s), Some(t)) = (source.get(nested), target.get_mut(nested)) {
            add_extensions(s, t);
        }
    }
    if let (Some(Value::Object(s)), Some(Value::Object(t))) =
        (source.get("properties"), target.get_mut("properties"))
    {
        for (name, property) in s {
            if let Some(t) = t.get_mut(name) {
                add_extensions(property, t);
            }
        }
    }
}

/// A type within its schema.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ty<'a> {
    schema: &'a Schema,
    id: TypeId,
}

impl<'a> Ty<'a> {
    /// What this type is.
    pub(crate) fn get(self) -> &'a Type {
        self.schema.types.get(self.id.0).unwrap_or(&Type::Untyped)
    }

    fn at(self, id: TypeId) -> Ty<'a> {
        Ty {
            schema: self.schema,
            id,
        }
    }

    /// The type of field or map key `name` (untyped when not declared).
    pub(crate) fn field(self, name: &str) -> Ty<'a> {
        match self.get() {
            Type::Struct { fields, .. } => self.at(fields.get(name).copied().unwrap_or(UNTYPED)),
            Type::Map { values, .. } => self.at(*values),
            _ => self.at(UNTYPED),
        }
    }

    /// The type of a list's items (untyped for anything but a list).
    pub(crate) fn items(self) -> Ty<'a> {
        match self.get() {
            Type::List(list) => self.at(list.items),
            _ => self.at(UNTYPED),
        }
    }

    /// The list type, if this is a list.
    pub(crate) fn list(self) -> Option<&'a List> {
        match self.get() {
            Type::List(list) => Some(list),
            _ => None,
        }
    }

    /// Whether values of this type are owned and replaced as a whole: scalars, atomic lists,
    /// maps and structs. Untyped values are atomic unless they are objects.
    pub(crate) fn is_atomic(self, value: &Value) -> bool {
        match self.get() {
            Type::Scalar => true,
            Type::Struct { atomic, .. } | Type::Map { atomic, .. } => *atomic,
            Type::List(list) => list.kind == ListKind::Atomic,
            Type::Untyped => !value.is_object(),
        }
    }
}

#[cfg(test)]
mod tests;
