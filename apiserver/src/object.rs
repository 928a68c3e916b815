//! [`Object`]: how the server holds every object, with its JSON encoding computed once.

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::{ApiResource, DynamicResourceScope, Resource};
use serde_json::{Map, Value};

/// A Kubernetes object of any kind: `apiVersion`, `kind`, typed `metadata` and the other
/// top-level fields as JSON. Its JSON encoding is computed at most once and shared (as
/// [`Bytes`]) by every list and watch response that carries it; [`Resource::meta_mut`] and
/// [`Object::data_mut`] drop the cached encoding.
#[derive(Clone, Default)]
pub struct Object {
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    data: Map<String, Value>,
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

impl PartialEq for Object {
    fn eq(&self, other: &Self) -> bool {
        self.api_version == other.api_version
            && self.kind == other.kind
            && self.metadata == other.metadata
            && self.data == other.data
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
        Self {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: namespace.map(str::to_owned),
                ..ObjectMeta::default()
            },
            data: Map::new(),
            raw: OnceLock::new(),
        }
    }

    /// Parses an object from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, ObjectError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| ObjectError::Json(e.to_string()))?;
        Self::from_value(value)
    }

    /// Builds an object from a JSON value (which must be a JSON object).
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
        let metadata = match map.remove("metadata") {
            Some(Value::Null) | None => ObjectMeta::default(),
            Some(v) => {
                serde_json::from_value(v).map_err(|e| ObjectError::Metadata(e.to_string()))?
            }
        };
        Ok(Self {
            api_version,
            kind,
            metadata,
            data: map,
            raw: OnceLock::new(),
        })
    }

    /// Converts any serializable object (for example a typed k8s-openapi object).
    pub fn from_serializable<T: serde::Serialize>(obj: &T) -> Result<Self, ObjectError> {
        Self::from_value(serde_json::to_value(obj).map_err(|e| ObjectError::Json(e.to_string()))?)
    }

    /// Converts into a typed object (for example a k8s-openapi `Pod`).
    pub fn to_typed<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(self.raw())
    }

    /// The object as a JSON value.
    pub fn to_value(&self) -> Value {
        let mut map = Map::with_capacity(self.data.len() + 3);
        map.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        map.insert("kind".into(), Value::String(self.kind.clone()));
        map.insert(
            "metadata".into(),
            serde_json::to_value(&self.metadata).unwrap_or(Value::Null),
        );
        for (k, v) in &self.data {
            map.insert(k.clone(), v.clone());
        }
        Value::Object(map)
    }

    /// `apiVersion`.
    pub fn api_version(&self) -> &str {
        &self.api_version
    }

    /// `kind`.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Sets `apiVersion` and `kind`.
    pub fn set_type(&mut self, api_version: &str, kind: &str) {
        self.raw = OnceLock::new();
        api_version.clone_into(&mut self.api_version);
        kind.clone_into(&mut self.kind);
    }

    /// The top-level fields other than `apiVersion`, `kind` and `metadata`.
    pub fn data(&self) -> &Map<String, Value> {
        &self.data
    }

    /// Mutable access to the other top-level fields (drops the cached encoding).
    pub fn data_mut(&mut self) -> &mut Map<String, Value> {
        self.raw = OnceLock::new();
        &mut self.data
    }

    /// The value at a dotted path such as `spec.nodeName` (`metadata.*` paths read the metadata).
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
        let mut parts = path.split('.');
        let mut cur = self.data.get(parts.next()?)?;
        for part in parts {
            cur = cur.get(part)?;
        }
        match cur {
            Value::String(s) => Some(Cow::Borrowed(s)),
            Value::Bool(b) => Some(Cow::Owned(b.to_string())),
            Value::Number(n) => Some(Cow::Owned(n.to_string())),
            _ => None,
        }
    }

    /// `metadata.resourceVersion` as a number (0 if absent or not a number).
    pub fn resource_version_u64(&self) -> u64 {
        self.metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok())
            .unwrap_or(0)
    }

    /// A copy with `metadata.resourceVersion` set to `rv` (fields shared by clone; the encoding
    /// is recomputed).
    pub fn with_resource_version(&self, rv: u64) -> Self {
        let mut copy = self.clone();
        copy.meta_mut().resource_version = Some(rv.to_string());
        copy
    }

    /// The JSON encoding, computed on first use and then shared.
    pub fn raw(&self) -> &Bytes {
        self.raw.get_or_init(|| Bytes::from(self.encode()))
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1024);
        out.extend_from_slice(b"{\"apiVersion\":");
        write_json(&mut out, &self.api_version);
        out.extend_from_slice(b",\"kind\":");
        write_json(&mut out, &self.kind);
        out.extend_from_slice(b",\"metadata\":");
        write_json(&mut out, &self.metadata);
        for (k, v) in &self.data {
            out.push(b',');
            write_json(&mut out, k);
            out.push(b':');
            write_json(&mut out, v);
        }
        out.push(b'}');
        out
    }
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
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.raw = OnceLock::new();
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
