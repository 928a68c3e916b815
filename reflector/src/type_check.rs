//! Kind checks for objects that carry their type at run time.

use kube_core::{DynamicObject, PartialObjectMeta, TypeMeta};

/// Objects that carry their `apiVersion` and `kind` at run time.
pub trait ObjectTypeMeta {
    /// The object's type fields, if it has them.
    fn type_meta(&self) -> Option<&TypeMeta>;
}

impl ObjectTypeMeta for DynamicObject {
    fn type_meta(&self) -> Option<&TypeMeta> {
        self.types.as_ref()
    }
}

impl<K> ObjectTypeMeta for PartialObjectMeta<K> {
    fn type_meta(&self) -> Option<&TypeMeta> {
        self.types.as_ref()
    }
}

/// A check for [`ReflectorBuilder::expected_type`](crate::ReflectorBuilder::expected_type):
/// objects whose `apiVersion` or `kind` differ from the given ones are rejected (objects without
/// type fields pass).
pub fn expect_kind<K: ObjectTypeMeta>(
    api_version: impl Into<String>,
    kind: impl Into<String>,
) -> impl Fn(&K) -> Result<(), String> + Send + Sync + 'static {
    let (api_version, kind) = (api_version.into(), kind.into());
    move |obj: &K| match obj.type_meta() {
        Some(t) if t.api_version != api_version || t.kind != kind => Err(format!(
            "expected {api_version} {kind}, got {} {}",
            t.api_version, t.kind
        )),
        _ => Ok(()),
    }
}
