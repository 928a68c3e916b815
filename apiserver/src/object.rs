//! [`Object`]: how the server holds every object: its JSON encoding, shared, plus the few fields
//! the server reads often, decoded once.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};
use kube_core::{ApiResource, DynamicResourceScope, Resource};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::fields::{Selected, builtin_field_paths, intern, lookup};

/// A Kubernetes object of any kind, held as its JSON encoding.
///
/// At rest an object is its encoding ([`Object::raw`], shared as [`Bytes`] by every list and
/// watch response that carries it) plus what the server reads often, decoded once when the
/// object is built:
///
/// - `apiVersion`, `kind` and the metadata ([`Resource::meta`]) **without `managedFields`**, which
///   stay encoded (they are most of the metadata of a real object; [`Object::managed_fields`]
///   decodes them on demand);
/// - the values of the selectable fields (field selectors such as pods' `spec.nodeName` or
///   `status.phase`), so that filtering never parses; see [`Object::field`].
///
/// The other top-level fields (`spec`, `status`, `data`, ...) are only encoded: [`Object::data`]
/// parses them on demand and [`Object::set_data`] replaces them (writes are rare compared with
/// reads). Changing the metadata ([`Resource::meta_mut`], [`Object::set_resource_version`]) does
/// not parse anything: the new encoding is the re-encoded metadata spliced with the unchanged
/// bytes of the other fields.
///
/// Every constructor and [`Object::set_resource_version`] encode at once and keep the pieces as
/// slices of that one buffer, so an object costs about its encoded size plus its decoded
/// metadata. The other mutators drop the encoding, which is recomputed on the next
/// [`Object::raw`] (storage stamps the resource version of every write, so stored objects are
/// always compact).
#[derive(Clone, Default)]
pub struct Object {
    api_version: String,
    kind: String,
    /// `managed_fields` is `None` here unless set through `meta_mut`.
    metadata: ObjectMeta,
    /// The JSON array of `metadata.managedFields`; empty when there are none.
    managed_fields: Bytes,
    /// The other top-level fields as JSON object members (`"spec":{..},"status":{..}`).
    body: Bytes,
    selected: Selected,
    raw: OnceLock<Bytes>,
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Object")
            .field("api_version", &self.api_version)
            .field("kind", &self.kind)
            .field("namespace", &self.metadata.namespace)
            .field("name", &self.metadata.name)
            .field("resource_version", &self.metadata.resource_version)
            .finish_non_exhaustive()
    }
}

/// Objects are equal when their encodings are.
impl PartialEq for Object {
    fn eq(&self, other: &Self) -> bool {
        self.raw() == other.raw()
    }
}

/// Why JSON could not be turned into an [`Object`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ObjectError {
    /// The JSON is malformed or is not an object.
    #[error("{0}")]
    Json(String),
    /// `metadata` is not valid object metadata.
    #[error("invalid metadata: {0}")]
    Metadata(String),
}

impl Object {
    /// An object of `resource`'s kind named `name` (in `namespace` if given), without other fields.
    pub fn new(resource: &ApiResource, namespace: Option<&str>, name: &str) -> Self {
        let mut obj = Self {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: namespace.map(str::to_owned),
                ..ObjectMeta::default()
            },
            ..Self::default()
        };
        let paths = builtin_field_paths(&obj.api_version, &obj.kind);
        obj.selected = Selected::extract(paths, &Map::new());
        obj.compact();
        obj
    }

    /// Parses an object from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, ObjectError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| ObjectError::Json(e.to_string()))?;
        Self::from_value(value)
    }

    /// Builds an object from a JSON value (which must be a JSON object). The field values of
    /// the built-in resource of its `apiVersion` and `kind` are extracted (for other field paths
    /// see [`Object::select_fields`]).
    pub fn from_value(value: Value) -> Result<Self, ObjectError> {
        let Value::Object(mut map) = value else {
            return Err(ObjectError::Json("the body is not a JSON object".into()));
        };
        let take_str = |map: &mut Map<String, Value>, key: &str| match map.remove(key) {
            Some(Value::String(s)) => Ok(s),
            None | Some(Value::Null) => Ok(String::new()),
            Some(_) => Err(ObjectError::Json(format!("{key} must be a string"))),
        };
        let api_version = take_str(&mut map, "apiVersion")?;
        let kind = take_str(&mut map, "kind")?;
        let (metadata, managed_fields) = match map.remove("metadata") {
            Some(Value::Null) | None => (ObjectMeta::default(), Bytes::new()),
            Some(mut v) => {
                let managed = match v.as_object_mut().and_then(|m| m.remove("managedFields")) {
                    None | Some(Value::Null) => Bytes::new(),
                    Some(entries) => {
                        let entries = Vec::<ManagedFieldsEntry>::deserialize(&entries)
                            .map_err(|e| ObjectError::Metadata(e.to_string()))?;
                        Bytes::from(to_json(&entries))
                    }
                };
                let meta =
                    serde_json::from_value(v).map_err(|e| ObjectError::Metadata(e.to_string()))?;
                (meta, managed)
            }
        };
        let paths = builtin_field_paths(&api_version, &kind);
        let mut obj = Self {
            selected: Selected::extract(paths, &map),
            body: Bytes::from(encode_members(&map)),
            api_version,
            kind,
            metadata,
            managed_fields,
            raw: OnceLock::new(),
        };
        obj.compact();
        Ok(obj)
    }

    /// Converts any serializable object (for example a typed k8s-openapi object).
    pub fn from_serializable<T: serde::Serialize>(obj: &T) -> Result<Self, ObjectError> {
        Self::from_value(serde_json::to_value(obj).map_err(|e| ObjectError::Json(e.to_string()))?)
    }

    /// Converts into a typed object (for example a k8s-openapi `Pod`).
    pub fn to_typed<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(self.raw())
    }

    /// The object as a JSON value (parses the encoding).
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(self.raw()).unwrap_or_else(|e| {
            tracing::error!(error = %e, "an object's own encoding does not parse");
            Value::Null
        })
    }

    /// `apiVersion`.
    pub fn api_version(&self) -> &str {
        &self.api_version
    }

    /// `kind`.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Sets `apiVersion` and `kind` (nothing happens when they are already these).
    pub fn set_type(&mut self, api_version: &str, kind: &str) {
        if self.api_version != api_version || self.kind != kind {
            self.raw = OnceLock::new();
            api_version.clone_into(&mut self.api_version);
            kind.clone_into(&mut self.kind);
        }
    }

    /// The top-level fields other than `apiVersion`, `kind` and `metadata`, parsed from the
    /// encoding on every call (meant for writes).
    pub fn data(&self) -> Map<String, Value> {
        parse_members(&self.body)
    }

    /// Replaces the top-level fields other than `apiVersion`, `kind` and `metadata` (any of
    /// those three keys in `data` is ignored); the selected field values are extracted again.
    pub fn set_data(&mut self, mut data: Map<String, Value>) {
        for key in ["apiVersion", "kind", "metadata"] {
            data.remove(key);
        }
        self.selected = Selected::extract(Arc::clone(&self.selected.paths), &data);
        self.body = Bytes::from(encode_members(&data));
        self.raw = OnceLock::new();
    }

    /// The encoded top-level fields other than `apiVersion`, `kind` and `metadata`, as JSON
    /// object members without braces (`"spec":{...},"status":{...}`; empty when there are none).
    pub fn data_json(&self) -> &[u8] {
        &self.body
    }

    /// `metadata.managedFields`, decoded from their encoding (the metadata returned by
    /// [`Resource::meta`] does not hold them).
    pub fn managed_fields(&self) -> Option<Vec<ManagedFieldsEntry>> {
        if let Some(entries) = &self.metadata.managed_fields {
            return Some(entries.clone());
        }
        if self.managed_fields.is_empty() {
            return None;
        }
        serde_json::from_slice(&self.managed_fields).ok()
    }

    /// The whole metadata, `managedFields` included (a decoded copy).
    pub fn full_meta(&self) -> ObjectMeta {
        let mut meta = self.metadata.clone();
        meta.managed_fields = self.managed_fields();
        meta
    }

    /// The object as `meta.k8s.io`'s `PartialObjectMetadata` of `version` (`v1`, `v1beta1`):
    /// its metadata alone, as metadata-only answers and Table rows carry it.
    pub(crate) fn partial_metadata(&self, version: &str) -> Value {
        serde_json::json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": format!("meta.k8s.io/{version}"),
            "metadata": self.full_meta(),
        })
    }

    /// Extracts the values at `paths` (dotted field paths such as `spec.nodeName`) once, so
    /// that [`Object::field`] answers them without parsing. Nothing is parsed when the object
    /// already holds exactly these paths (objects built from JSON hold the field selectors of
    /// the built-in resource of their kind).
    pub fn select_fields(&mut self, paths: &[String]) {
        if *self.selected.paths == *paths {
            return;
        }
        self.selected = Selected::extract(intern(paths), &self.data());
    }

    /// The value at a dotted path such as `spec.nodeName` (`metadata.name` and
    /// `metadata.namespace` read the metadata). Selected fields (see [`Object::select_fields`])
    /// are answered without parsing; other paths parse the encoding.
    pub fn field(&self, path: &str) -> Option<Cow<'_, str>> {
        match path {
            "metadata.name" => return self.metadata.name.as_deref().map(Cow::Borrowed),
            "metadata.namespace" => {
                return Some(Cow::Borrowed(
                    self.metadata.namespace.as_deref().unwrap_or(""),
                ));
            }
            _ => {}
        }
        if let Some(i) = self.selected.paths.iter().position(|p| p == path) {
            return self
                .selected
                .values
                .get(i)
                .and_then(|v| v.as_deref())
                .map(Cow::Borrowed);
        }
        lookup(&self.data(), path).map(Cow::Owned)
    }

    /// `metadata.resourceVersion` as a number (0 if absent or not a number).
    pub fn resource_version_u64(&self) -> u64 {
        self.metadata
            .resource_version
            .as_deref()
            .map_or(0, crate::resource_version::parse_or_zero)
    }

    /// Sets `metadata.resourceVersion` and re-encodes at once: the new encoding is the
    /// re-encoded metadata spliced with the unchanged bytes of the other fields (nothing is
    /// parsed), and the object's pieces become slices of it.
    pub fn set_resource_version(&mut self, rv: u64) {
        self.metadata.resource_version = Some(rv.to_string());
        self.compact();
    }

    /// A copy with `metadata.resourceVersion` set to `rv` (see
    /// [`Object::set_resource_version`]).
    pub fn with_resource_version(&self, rv: u64) -> Self {
        let mut copy = self.clone();
        copy.set_resource_version(rv);
        copy
    }

    /// The JSON encoding, shared (computed again only after a mutation).
    pub fn raw(&self) -> &Bytes {
        self.raw.get_or_init(|| Bytes::from(self.encode().bytes))
    }

    /// Encodes now and keeps every piece as a slice of the one new buffer.
    fn compact(&mut self) {
        if let Some(entries) = self.metadata.managed_fields.take() {
            self.managed_fields = Bytes::from(to_json(&entries));
        }
        let encoded = self.encode();
        let raw = Bytes::from(encoded.bytes);
        self.managed_fields = raw.slice(encoded.managed_fields);
        self.body = raw.slice(encoded.body);
        self.raw = OnceLock::from(raw);
    }

    /// `{"apiVersion":..,"kind":..,"metadata":{..,"managedFields":[..]},BODY}` in a buffer of
    /// exactly its size.
    fn encode(&self) -> Encoded {
        let mut head = Vec::with_capacity(512);
        head.extend_from_slice(b"{\"apiVersion\":");
        write_json(&mut head, &self.api_version);
        head.extend_from_slice(b",\"kind\":");
        write_json(&mut head, &self.kind);
        head.extend_from_slice(b",\"metadata\":");
        write_json(&mut head, &self.metadata);
        // Managed fields set through `meta_mut` were encoded with the metadata.
        let managed: &[u8] = if self.metadata.managed_fields.is_some() {
            &[]
        } else {
            &self.managed_fields
        };
        let splice_managed = !managed.is_empty() && head.last() == Some(&b'}');
        if splice_managed {
            head.pop();
            if head.last() != Some(&b'{') {
                head.push(b',');
            }
            head.extend_from_slice(b"\"managedFields\":");
        }
        let len = head.len()
            + if splice_managed { managed.len() + 1 } else { 0 }
            + if self.body.is_empty() {
                0
            } else {
                self.body.len() + 1
            }
            + 1;
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&head);
        let managed_start = out.len();
        if splice_managed {
            out.extend_from_slice(managed);
        }
        let managed_fields = managed_start..out.len();
        if splice_managed {
            out.push(b'}');
        }
        if !self.body.is_empty() {
            out.push(b',');
        }
        let body_start = out.len();
        out.extend_from_slice(&self.body);
        let body = body_start..out.len();
        out.push(b'}');
        Encoded {
            bytes: out,
            managed_fields,
            body,
        }
    }
}

/// An encoding and where the managed fields and the other fields are in it.
struct Encoded {
    bytes: Vec<u8>,
    managed_fields: Range<usize>,
    body: Range<usize>,
}

/// `"k":v,"k2":v2` (no braces).
fn encode_members(map: &Map<String, Value>) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json(&mut out, k);
        out.push(b':');
        write_json(&mut out, v);
    }
    out
}

/// The inverse of [`encode_members`].
fn parse_members(members: &[u8]) -> Map<String, Value> {
    if members.is_empty() {
        return Map::new();
    }
    let mut buf = Vec::with_capacity(members.len() + 2);
    buf.push(b'{');
    buf.extend_from_slice(members);
    buf.push(b'}');
    serde_json::from_slice(&buf).unwrap_or_else(|e| {
        tracing::error!(error = %e, "an object's own encoding does not parse");
        Map::new()
    })
}

fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    write_json(&mut out, value);
    out
}

/// Appends the JSON of `value` (strings, maps, metadata: nothing here can fail to serialize).
pub(crate) fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
    }
}

impl serde::Serialize for Object {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl Resource for Object {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }
    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }
    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }
    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }
    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }
    /// The metadata without `managedFields` (see [`Object::managed_fields`]).
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    /// Drops the encoding. `managed_fields` is `None` here; setting it replaces the managed
    /// fields.
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.raw = OnceLock::new();
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture_pod() -> Object {
        Object::from_value(kcache_store::testing::pod_json(7, 3, 5)).unwrap()
    }

    #[test]
    fn encoding_round_trips_and_is_dropped_on_mutation() {
        let obj = Object::from_json(br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"n"},"spec":{"nodeName":"x"}}"#).unwrap();
        let raw = obj.raw().clone();
        let back: Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(back["spec"]["nodeName"], "x");
        assert_eq!(obj.field("spec.nodeName").as_deref(), Some("x"));
        let newer = obj.with_resource_version(7);
        let back: Value = serde_json::from_slice(newer.raw()).unwrap();
        assert_eq!(back["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn encoding_keeps_every_field_of_the_fixture_pod() {
        let value = kcache_store::testing::pod_json(7, 3, 5);
        let obj = Object::from_value(value.clone()).unwrap();
        assert_eq!(obj.to_value(), value);
        assert!(obj.meta().managed_fields.is_none());
        assert_eq!(obj.managed_fields().map(|m| m.len()), Some(2));
        assert_eq!(obj.full_meta().managed_fields.map(|m| m.len()), Some(2));
    }

    #[test]
    fn resource_version_stamp_splices_the_unchanged_fields() {
        let obj = fixture_pod();
        let stamped = obj.with_resource_version(42);
        let mut expected = obj.to_value();
        expected["metadata"]["resourceVersion"] = "42".into();
        assert_eq!(stamped.to_value(), expected);
        assert_eq!(stamped.data_json(), obj.data_json());
        assert_eq!(stamped.resource_version_u64(), 42);
    }

    #[test]
    fn pieces_of_a_compact_object_share_its_encoding() {
        let obj = fixture_pod().with_resource_version(9);
        let raw = obj.raw();
        let inside = |piece: &[u8]| {
            let range = raw.as_ptr_range();
            piece.is_empty() || range.contains(&piece.as_ptr())
        };
        assert!(inside(obj.data_json()));
        assert!(inside(&obj.managed_fields));
        assert_eq!(raw.len(), obj.encode().bytes.len());
    }

    #[test]
    fn selected_fields_are_answered_and_follow_data_changes() {
        let mut obj = fixture_pod();
        assert_eq!(obj.field("spec.nodeName").as_deref(), Some("node-7"));
        assert_eq!(obj.field("status.phase").as_deref(), Some("Running"));
        let mut data = obj.data();
        data["status"]["phase"] = "Succeeded".into();
        obj.set_data(data);
        assert_eq!(obj.field("status.phase").as_deref(), Some("Succeeded"));
        assert_eq!(obj.to_value()["status"]["phase"], "Succeeded");
        // A path outside the selected ones is read by parsing.
        assert_eq!(obj.field("spec.containers").as_deref(), None);
        assert_eq!(
            obj.field("spec.dnsPolicy").as_deref(),
            obj.to_value()["spec"]["dnsPolicy"].as_str()
        );
    }

    #[test]
    fn select_fields_adds_paths_of_custom_resources() {
        let mut obj = Object::from_json(
            br#"{"apiVersion":"x.io/v1","kind":"W","metadata":{"name":"w"},"spec":{"size":3,"on":true}}"#,
        )
        .unwrap();
        obj.select_fields(&["spec.size".to_owned(), "spec.on".to_owned()]);
        assert_eq!(obj.field("spec.size").as_deref(), Some("3"));
        assert_eq!(obj.field("spec.on").as_deref(), Some("true"));
    }

    #[test]
    fn managed_fields_set_through_meta_mut_replace_the_encoded_ones() {
        let mut obj = fixture_pod();
        obj.meta_mut().managed_fields = Some(Vec::new());
        assert_eq!(
            obj.to_value()["metadata"]["managedFields"],
            serde_json::json!([])
        );
        obj.set_resource_version(3);
        assert!(obj.meta().managed_fields.is_none());
        assert_eq!(obj.managed_fields(), Some(Vec::new()));
        assert_eq!(
            obj.to_value()["metadata"]["managedFields"],
            serde_json::json!([])
        );
    }

    #[test]
    fn objects_without_other_fields_or_metadata_encode() {
        let obj = Object::from_json(br#"{"apiVersion":"v1","kind":"ConfigMap"}"#).unwrap();
        assert_eq!(
            obj.to_value(),
            serde_json::json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{}})
        );
        assert!(obj.data().is_empty());
        let bad = Object::from_json(br#"{"metadata":{"managedFields":3}}"#);
        assert!(matches!(bad, Err(ObjectError::Metadata(_))));
    }
}
