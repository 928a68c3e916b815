//! Field sets, comparisons, merges and removals of JSON objects by their schema type
//! (structured-merge-diff `typed/tofieldset.go`, `typed/compare.go`, `typed/merge.go`,
//! `typed/remove.go`).

use serde_json::{Map, Value};

use super::path::{Path, PathElement};
use super::set::FieldSet;
use crate::schema::{ListKind, Ty, Type};

/// A merge that cannot be done.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MergeError {
    /// Two items of an applied associative list or set have the same key.
    #[error(".{path}: duplicate entries for key {key}")]
    DuplicateKey { path: String, key: String },
    /// Fields of the applied configuration its type does not declare (structured-merge-diff's
    /// validation errors, printed as its `ValidationErrors`).
    #[error("{}", undeclared_message(.0))]
    Undeclared(Vec<String>),
}

fn undeclared_message(paths: &[String]) -> String {
    let errors: Vec<String> = paths
        .iter()
        .map(|p| format!("{p}: field not declared in schema"))
        .collect();
    match errors.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    }
}

/// The fields of `config` (an applied configuration) that `ty` does not declare, as
/// structured-merge-diff's conversion to a typed value refuses them; `apiVersion`, `kind` and
/// `metadata` at the root are always known (a custom resource's schema may leave them out).
pub(crate) fn undeclared(config: &Value, ty: Ty<'_>) -> Result<(), MergeError> {
    let mut out = Vec::new();
    walk_undeclared(config, ty, &mut Vec::new(), &mut out);
    if out.is_empty() {
        Ok(())
    } else {
        Err(MergeError::Undeclared(out))
    }
}

fn walk_undeclared(value: &Value, ty: Ty<'_>, path: &mut Path, out: &mut Vec<String>) {
    match (value, ty.get()) {
        (Value::Object(map), Type::Struct { fields, open, .. }) => {
            for (k, v) in map {
                path.push(PathElement::Field(k.clone()));
                let root_field =
                    path.len() == 1 && ["apiVersion", "kind", "metadata"].contains(&k.as_str());
                if fields.contains_key(k) {
                    walk_undeclared(v, ty.field(k), path, out);
                } else if !*open && !root_field {
                    out.push(super::path::display(path));
                }
                path.pop();
            }
        }
        (Value::Object(map), Type::Map { .. }) => {
            for (k, v) in map {
                path.push(PathElement::Field(k.clone()));
                walk_undeclared(v, ty.field(k), path, out);
                path.pop();
            }
        }
        (Value::Array(items), Type::List(list)) => {
            for (i, item) in items.iter().enumerate() {
                let element = match list.kind {
                    ListKind::Atomic => PathElement::Index(i),
                    _ => item_element(&list.kind, item),
                };
                path.push(element);
                walk_undeclared(item, ty.items(), path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The children of a value that field sets track: `None` for a leaf (scalars and atomic
/// values), else each child's element, value and type.
fn children<'v, 's>(value: &'v Value, ty: Ty<'s>) -> Option<Vec<(PathElement, &'v Value, Ty<'s>)>> {
    if ty.is_atomic(value) {
        return None;
    }
    match (value, ty.get()) {
        (Value::Object(map), Type::Struct { .. } | Type::Map { .. } | Type::Untyped) => Some(
            map.iter()
                .map(|(k, v)| (PathElement::Field(k.clone()), v, ty.field(k)))
                .collect(),
        ),
        (Value::Array(items), Type::List(list)) => Some(
            items
                .iter()
                .map(|item| (item_element(&list.kind, item), item, ty.items()))
                .collect(),
        ),
        _ => None,
    }
}

/// The element naming a list item: its key fields (defaults filled in) or its value.
fn item_element(kind: &ListKind, item: &Value) -> PathElement {
    match (kind, item) {
        (ListKind::Map(keys), Value::Object(fields)) => PathElement::key(
            keys.iter()
                .filter_map(|k| {
                    let v = fields.get(&k.name).cloned().or_else(|| k.default.clone())?;
                    Some((k.name.clone(), v))
                })
                .collect(),
        ),
        _ => PathElement::value(item),
    }
}

fn is_item(element: &PathElement) -> bool {
    matches!(element, PathElement::Key(_) | PathElement::Value(_))
}

/// The fields set in `value` (what an applier owns for it): leaves, list items, and empty or
/// null containers.
pub(crate) fn to_set(value: &Value, ty: Ty<'_>) -> FieldSet {
    let mut out = FieldSet::default();
    walk_set(value, ty, &mut Vec::new(), &mut out);
    out
}

fn walk_set(value: &Value, ty: Ty<'_>, path: &mut Path, out: &mut FieldSet) {
    match children(value, ty) {
        Some(kids) if !kids.is_empty() => {
            for (element, child, child_ty) in kids {
                path.push(element);
                if path.last().is_some_and(is_item) {
                    out.insert(path);
                }
                walk_set(child, child_ty, path, out);
                path.pop();
            }
        }
        _ if !path.is_empty() => out.insert(path),
        _ => {}
    }
}

/// What changed between two versions of an object.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub(crate) added: FieldSet,
    pub(crate) modified: FieldSet,
    pub(crate) removed: FieldSet,
}

impl Comparison {
    /// Added and modified fields together.
    pub(crate) fn changed(&self) -> FieldSet {
        let mut changed = self.added.clone();
        changed.union(&self.modified);
        changed
    }
}

/// Compares `old` with `new`. A node created whole is itself added when it is a list item or a
/// map (not a struct), as Kubernetes records it in Update entries.
pub(crate) fn compare(old: &Value, new: &Value, ty: Ty<'_>) -> Comparison {
    let mut out = Comparison::default();
    walk_compare(Some(old), Some(new), ty, &mut Vec::new(), &mut out);
    out
}

fn walk_compare(
    old: Option<&Value>,
    new: Option<&Value>,
    ty: Ty<'_>,
    path: &mut Path,
    out: &mut Comparison,
) {
    match (old, new) {
        (Some(o), Some(n)) => match (children(o, ty), children(n, ty)) {
            (Some(old_kids), Some(new_kids)) => {
                for (element, n_child, child_ty) in &new_kids {
                    let o_child = old_kids.iter().find(|(e, ..)| e == element).map(|k| k.1);
                    path.push(element.clone());
                    walk_compare(o_child, Some(n_child), *child_ty, path, out);
                    path.pop();
                }
                for (element, o_child, child_ty) in &old_kids {
                    if !new_kids.iter().any(|(e, ..)| e == element) {
                        path.push(element.clone());
                        walk_compare(Some(o_child), None, *child_ty, path, out);
                        path.pop();
                    }
                }
            }
            _ if o != n && !path.is_empty() => out.modified.insert(path),
            _ => {}
        },
        (None, Some(n)) => {
            let kids = children(n, ty).unwrap_or_default();
            let whole = path.last().is_some_and(is_item)
                || matches!(ty.get(), Type::Map { .. })
                || (matches!(ty.get(), Type::Untyped) && n.is_object());
            if (whole || kids.is_empty()) && !path.is_empty() {
                out.added.insert(path);
            }
            for (element, child, child_ty) in kids {
                path.push(element);
                walk_compare(None, Some(child), child_ty, path, out);
                path.pop();
            }
        }
        (Some(o), None) => {
            out.removed.insert(path);
            for (element, child, child_ty) in children(o, ty).unwrap_or_default() {
                path.push(element);
                walk_compare(Some(child), None, child_ty, path, out);
                path.pop();
            }
        }
        (None, None) => {}
    }
}

/// `live` with `config` merged in: scalars and atomic values replaced, granular maps merged
/// by key, associative lists and sets item by item (live items keep their place, new ones
/// follow in the config's order, as merge.go `visitListItems`). `null` in the config removes a
/// field.
pub(crate) fn merge(live: &Value, config: &Value, ty: Ty<'_>) -> Result<Value, MergeError> {
    merge_at(live, config, ty, &mut Vec::new())
}

fn merge_at(
    live: &Value,
    config: &Value,
    ty: Ty<'_>,
    path: &mut Path,
) -> Result<Value, MergeError> {
    if ty.is_atomic(config) {
        return Ok(config.clone());
    }
    match (live, config, ty.get()) {
        (Value::Object(l), Value::Object(c), _) => {
            let mut out = l.clone();
            for (k, v) in c {
                if v.is_null() {
                    out.remove(k);
                    continue;
                }
                path.push(PathElement::Field(k.clone()));
                let merged = match (l.get(k), v) {
                    (Some(lv), _) => merge_at(lv, v, ty.field(k), path)?,
                    (None, Value::Object(_)) => {
                        merge_at(&Value::Object(Map::new()), v, ty.field(k), path)?
                    }
                    (None, Value::Array(_)) => {
                        merge_at(&Value::Array(Vec::new()), v, ty.field(k), path)?
                    }
                    (None, _) => v.clone(),
                };
                path.pop();
                out.insert(k.clone(), merged);
            }
            Ok(Value::Object(out))
        }
        (Value::Array(l), Value::Array(c), Type::List(list)) => {
            let mut out = l.clone();
            let mut seen = Vec::new();
            for item in c {
                let element = item_element(&list.kind, item);
                if seen.contains(&element) {
                    return Err(MergeError::DuplicateKey {
                        path: super::path::display(path)
                            .trim_start_matches('.')
                            .to_owned(),
                        key: element.to_string(),
                    });
                }
                match out
                    .iter()
                    .position(|x| item_element(&list.kind, x) == element)
                {
                    Some(i) => {
                        path.push(element.clone());
                        out[i] = merge_at(&out[i], item, ty.items(), path)?;
                        path.pop();
                    }
                    None => out.push(item.clone()),
                }
                seen.push(element);
            }
            Ok(Value::Array(out))
        }
        _ => Ok(config.clone()),
    }
}

/// Removes every member of `set` from `value` (a removed list item or map entry goes whole);
/// containers emptied by the removal go too. Key fields of kept list items stay.
pub(crate) fn remove(value: &mut Value, ty: Ty<'_>, set: &FieldSet) {
    match value {
        Value::Object(map) => {
            for (element, child_set) in set.children() {
                let PathElement::Field(name) = element else {
                    continue;
                };
                remove_entry(map, name, ty.field(name), child_set);
            }
        }
        Value::Array(items) => {
            let Some(list) = ty.list() else { return };
            let key_names: Vec<&str> = match &list.kind {
                ListKind::Map(keys) => keys.iter().map(|k| k.name.as_str()).collect(),
                _ => Vec::new(),
            };
            items.retain_mut(|item| {
                let Some(child_set) = set.at(&[item_element(&list.kind, item)]) else {
                    return true;
                };
                if child_set.is_member() {
                    return false;
                }
                if let Value::Object(fields) = item {
                    for (element, grandchild) in child_set.children() {
                        match element {
                            PathElement::Field(name) if !key_names.contains(&name.as_str()) => {
                                remove_entry(fields, name, ty.items().field(name), grandchild);
                            }
                            _ => {}
                        }
                    }
                }
                true
            });
        }
        _ => {}
    }
}

fn remove_entry(map: &mut Map<String, Value>, name: &str, ty: Ty<'_>, set: &FieldSet) {
    if set.is_member() {
        map.remove(name);
        return;
    }
    let Some(child) = map.get_mut(name) else {
        return;
    };
    let was_empty = is_empty_container(child);
    remove(child, ty, set);
    if !was_empty && is_empty_container(child) {
        map.remove(name);
    }
}

fn is_empty_container(value: &Value) -> bool {
    match value {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
