//! Field sets: trees of path elements whose nodes may be members, encoded as `fieldsV1`
//! (structured-merge-diff `fieldpath/set.go` and `serialize.go`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::path::{Path, PathElement};

/// A set of paths. A node is a member when its own path is in the set (`.` in `fieldsV1`, or a
/// leaf `{}`); it may also have member descendants. Nodes without members below are pruned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    member: bool,
    children: BTreeMap<PathElement, FieldSet>,
}

/// `fieldsV1` that is not a tree of path elements.
#[derive(Debug, thiserror::Error)]
#[error("invalid fieldsV1: {0}")]
pub(crate) struct DecodeError(String);

impl FieldSet {
    /// Whether the set has no members.
    pub(crate) fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    /// Adds `path`.
    pub(crate) fn insert(&mut self, path: &[PathElement]) {
        match path.split_first() {
            None => self.member = true,
            Some((first, rest)) => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is a member.
    pub(crate) fn contains(&self, path: &[PathElement]) -> bool {
        match path.split_first() {
            None => self.member,
            Some((first, rest)) => self.children.get(first).is_some_and(|c| c.contains(rest)),
        }
    }

    /// The node at `path` (its members and descendants), if any.
    pub(crate) fn at(&self, path: &[PathElement]) -> Option<&FieldSet> {
        match path.split_first() {
            None => Some(self),
            Some((first, rest)) => self.children.get(first)?.at(rest),
        }
    }

    /// Whether this node is a member.
    pub(crate) fn is_member(&self) -> bool {
        self.member
    }

    /// The child nodes.
    pub(crate) fn children(&self) -> impl Iterator<Item = (&PathElement, &FieldSet)> {
        self.children.iter()
    }

    /// Adds every member of `other`.
    pub(crate) fn union(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (element, child) in &other.children {
            self.children
                .entry(element.clone())
                .or_default()
                .union(child);
        }
    }

    /// The members of `self` that are not members of `other`.
    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        self.combine(other, |a, b| a && !b, false)
    }

    /// The members of `self` that are neither members of `other` nor below one.
    pub(crate) fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        self.combine(other, |a, b| a && !b, true)
    }

    /// The members of both.
    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            if let Some(theirs) = other.children.get(element) {
                out.put(element, child.intersection(theirs));
            }
        }
        out
    }

    fn combine(&self, other: &FieldSet, keep: fn(bool, bool) -> bool, subtree: bool) -> FieldSet {
        if subtree && other.member {
            return FieldSet::default();
        }
        let mut out = FieldSet {
            member: keep(self.member, other.member),
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            match other.children.get(element) {
                Some(theirs) => out.put(element, child.combine(theirs, keep, subtree)),
                None => out.put(element, child.clone()),
            }
        }
        out
    }

    fn put(&mut self, element: &PathElement, child: FieldSet) {
        if !child.is_empty() {
            self.children.insert(element.clone(), child);
        }
    }

    /// Every member path, in `fieldsV1` order.
    pub(crate) fn members(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        if self.member {
            out.push(prefix.clone());
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The `fieldsV1` encoding.
    pub(crate) fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        if self.member && !self.children.is_empty() {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for (element, child) in &self.children {
            map.insert(element.encode(), child.to_fields_v1());
        }
        Value::Object(map)
    }

    /// Decodes `fieldsV1` (the root is never a member).
    pub(crate) fn from_fields_v1(value: &Value) -> Result<FieldSet, DecodeError> {
        let mut set = Self::decode_node(value)?;
        set.member = false;
        Ok(set)
    }

    fn decode_node(value: &Value) -> Result<FieldSet, DecodeError> {
        let Value::Object(map) = value else {
            return Err(DecodeError(format!("expected an object, got {value}")));
        };
        let mut set = FieldSet {
            member: map.is_empty(),
            children: BTreeMap::new(),
        };
        for (key, child) in map {
            if key == "." {
                set.member = true;
                continue;
            }
            let element = PathElement::decode(key)
                .ok_or_else(|| DecodeError(format!("unknown path element {key:?}")))?;
            set.children.insert(element, Self::decode_node(child)?);
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    //! Encodings from structured-merge-diff `fieldpath/serialize_test.go` and the
    //! managedFields Kubernetes writes (`util/managedfields/internal/managedfields_test.go`).
    use super::*;
    use serde_json::json;

    fn set(fields_v1: Value) -> FieldSet {
        FieldSet::from_fields_v1(&fields_v1).unwrap()
    }

    #[test]
    fn fields_v1_round_trips() {
        let encoded = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}}},
            "f:finalizers": {"v:\"example.com/x\"": {}},
        });
        let decoded = set(encoded.clone());
        assert_eq!(decoded.to_fields_v1(), encoded);
        assert_eq!(decoded.members().len(), 7);
    }

    #[test]
    fn empty_objects_are_leaf_members_and_dot_marks_inner_members() {
        let s = set(json!({"f:a": {}, "f:b": {".": {}, "f:c": {}}}));
        let a = [PathElement::Field("a".into())];
        let b = [PathElement::Field("b".into())];
        assert!(s.contains(&a) && s.contains(&b));
        assert!(!s.contains(&[]));
    }

    #[test]
    fn unknown_path_elements_are_refused() {
        assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
    }

    #[test]
    fn difference_removes_members_only_and_prunes() {
        let a = set(json!({"f:spec": {".": {}, "f:a": {}, "f:b": {}}}));
        let b = set(json!({"f:spec": {"f:a": {}}}));
        assert_eq!(
            a.difference(&b).to_fields_v1(),
            json!({"f:spec": {".": {}, "f:b": {}}})
        );
        let all = set(json!({"f:spec": {}}));
        assert_eq!(
            a.difference(&all).to_fields_v1(),
            json!({"f:spec": {"f:a": {}, "f:b": {}}})
        );
        assert!(a.recursive_difference(&all).is_empty());
    }

    #[test]
    fn intersection_and_union() {
        let a = set(json!({"f:x": {}, "f:y": {"f:z": {}}}));
        let b = set(json!({"f:y": {"f:z": {}, "f:w": {}}}));
        assert_eq!(
            a.intersection(&b).to_fields_v1(),
            json!({"f:y": {"f:z": {}}})
        );
        let mut u = a.clone();
        u.union(&b);
        assert_eq!(
            u.to_fields_v1(),
            json!({"f:x": {}, "f:y": {"f:w": {}, "f:z": {}}})
        );
    }
}
