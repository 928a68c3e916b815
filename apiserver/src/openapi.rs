//! The OpenAPI documents of the built-in kinds (`/openapi/v2`, `/openapi/v3` and
//! `/openapi/v3/{api/v1,apis/<group>/<version>}`), generated once from the schemas k8s-openapi
//! ships (its `schemars` feature: generated from the Kubernetes OpenAPI spec, descriptions
//! included), with the `x-kubernetes-group-version-kind` of every kind and one `get` path per
//! resource, which is what `kubectl explain` looks for. The `x-kubernetes-*` extensions (list
//! and map types, patch merge keys and strategies) come from the vendored Kubernetes
//! definitions (`crate::schema`), as kubectl's client-side apply reads them. Custom resources
//! have no schema and are left out.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use bytes::Bytes;
use k8s_openapi::schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::resource::ResourceDef;
use crate::schema::Schema;

/// The generated documents.
#[derive(Debug)]
pub(crate) struct OpenApi {
    /// The Swagger 2.0 document of every built-in kind.
    pub(crate) v2: Bytes,
    /// `/openapi/v3`: the group-versions and the URLs of their documents.
    pub(crate) v3_index: Bytes,
    /// The OpenAPI 3.0 document of each group-version, by path (`api/v1`, `apis/apps/v1`).
    pub(crate) v3: BTreeMap<String, Bytes>,
}

/// `api/v1` or `apis/<group>/<version>`.
fn gv_path(def: &ResourceDef) -> String {
    if def.api.group.is_empty() {
        format!("api/{}", def.api.version)
    } else {
        format!("apis/{}/{}", def.api.group, def.api.version)
    }
}

/// The path of one object of `def` and its `get` operation answering `schema_ref`.
fn get_path(def: &ResourceDef, schema_ref: &str) -> (String, Value) {
    let scope = if def.namespaced {
        "namespaces/{namespace}/"
    } else {
        ""
    };
    let path = format!("/{}/{scope}{}/{{name}}", gv_path(def), def.api.plural);
    let op = json!({"get": {
        "operationId": format!("read{}", def.api.kind),
        "x-kubernetes-action": "get",
        "x-kubernetes-group-version-kind": gvk(def),
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": schema_ref}}}}},
    }});
    (path, op)
}

fn gvk(def: &ResourceDef) -> Value {
    json!({"group": def.api.group, "version": def.api.version, "kind": def.api.kind})
}

/// The definitions of `defs`' kinds (and of every type they reference) made with `settings`,
/// each kind's marked with its group, version and kind, plus the paths reading them.
fn definitions(
    defs: &[&ResourceDef],
    settings: SchemaSettings,
    ref_prefix: &str,
) -> (Map<String, Value>, Map<String, Value>) {
    let mut generator = settings.into_generator();
    let mut kinds = Vec::new();
    for def in defs {
        if let Some(kind) = crate::kinds::find(&def.api.api_version, &def.api.kind) {
            let reference = (kind.schema)(&mut generator);
            if let Some(name) = reference
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(ref_prefix))
            {
                kinds.push((*def, name.to_owned()));
            }
        }
    }
    let mut definitions = generator.take_definitions(true);
    for (name, schema) in &mut definitions {
        Schema::add_builtin_extensions(name, schema);
    }
    let mut paths = Map::new();
    for (def, name) in kinds {
        if let Some(schema) = definitions.get_mut(&name).and_then(Value::as_object_mut) {
            schema.insert("x-kubernetes-group-version-kind".into(), json!([gvk(def)]));
        }
        let (path, op) = get_path(def, &format!("{ref_prefix}{name}"));
        paths.insert(path, op);
    }
    (definitions, paths)
}

fn hash_of(bytes: &[u8]) -> String {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    format!("{:016X}", h.finish())
}

impl OpenApi {
    /// Generates the documents of the built-in kinds among `resources`.
    pub(crate) fn generate(resources: &[Arc<ResourceDef>], version: &str) -> Self {
        let info = json!({"title": "Kubernetes", "version": version});
        let builtin: Vec<&ResourceDef> = resources
            .iter()
            .map(AsRef::as_ref)
            .filter(|d| crate::kinds::find(&d.api.api_version, &d.api.kind).is_some())
            .collect();

        let (defs, paths) = definitions(&builtin, SchemaSettings::draft07(), "#/definitions/");
        let v2 = json!({"swagger": "2.0", "info": info, "paths": paths, "definitions": defs});

        let mut groups: BTreeMap<String, Vec<&ResourceDef>> = BTreeMap::new();
        for def in &builtin {
            groups.entry(gv_path(def)).or_default().push(def);
        }
        let mut v3 = BTreeMap::new();
        let mut index = Map::new();
        for (gv, defs) in groups {
            let (schemas, paths) =
                definitions(&defs, SchemaSettings::openapi3(), "#/components/schemas/");
            let doc = json!({
                "openapi": "3.0.0", "info": info, "paths": paths,
                "components": {"schemas": schemas},
            });
            let bytes = Bytes::from(doc.to_string());
            index.insert(
                gv.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash={}", hash_of(&bytes))}),
            );
            v3.insert(gv, bytes);
        }
        Self {
            v2: Bytes::from(v2.to_string()),
            v3_index: Bytes::from(json!({"paths": index}).to_string()),
            v3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_describe_the_builtin_kinds_with_their_gvk() {
        let resources: Vec<Arc<ResourceDef>> = crate::resource::builtin_resources()
            .into_iter()
            .map(Arc::new)
            .collect();
        let docs = OpenApi::generate(&resources, "v1.34.0");
        let core: Value = serde_json::from_slice(&docs.v3["api/v1"]).unwrap();
        let cm = &core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"];
        assert_eq!(
            cm["x-kubernetes-group-version-kind"],
            json!([{"group": "", "version": "v1", "kind": "ConfigMap"}])
        );
        assert!(cm["properties"]["data"]["description"].is_string());
        let containers = &core["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"]
            ["containers"];
        assert_eq!(containers["x-kubernetes-list-type"], "map");
        assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        assert!(
            core["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
                .is_object()
        );
        assert!(
            core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["get"].is_object()
        );
        let v2: Value = serde_json::from_slice(&docs.v2).unwrap();
        assert!(
            v2["definitions"]["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"].is_object()
        );
        let index: Value = serde_json::from_slice(&docs.v3_index).unwrap();
        assert!(
            index["paths"]["apis/apps/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/apis/apps/v1?hash=")
        );
    }
}
