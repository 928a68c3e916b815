//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`), as Kubernetes' apiextensions-apiserver
//! reads them: which resources a CRD serves ([`served_defs`]) under which names
//! (`naming.rs`, as the naming and establishing controllers), its validation
//! (`validation.rs`, as `pkg/apis/apiextensions/validation`), and the checks, pruning and
//! defaults of custom objects against a version's `openAPIV3Schema` (`schema.rs`, as
//! `pkg/apiserver/schema/{pruning,defaulting}` and the OpenAPI schema validator; `formats.rs`
//! its `pattern` and `format` checks, `lists.rs` the list-type set/map invariants, `rules.rs` the CEL `x-kubernetes-validations`).
//!
//! The controller that serves what a CRD declares is `controllers/crd.rs`; the write rules of
//! CRDs and custom objects are `registry/custom.rs`.

use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionVersion,
};
use kube_core::{ApiResource, Resource};
use serde_json::Value;

use crate::object::Object;
use crate::resource::ResourceDef;

mod cel_env;
mod columns;
mod deprecation;
mod formats;
mod lists;
mod naming;
mod rules;
mod schema;
#[cfg(test)]
mod tests;
mod validation;

pub(crate) use naming::{decide_names, names_settled};
#[cfg(test)]
pub(crate) use schema::check_object;
pub(crate) use schema::{check_custom, prune_and_default, pruned_paths};
pub(crate) use validation::{validate, validate_update};

/// The group of CustomResourceDefinitions.
pub(crate) const GROUP: &str = "apiextensions.k8s.io";
/// The kind of CustomResourceDefinitions.
pub(crate) const KIND: &str = "CustomResourceDefinition";
/// The finalizer that holds a deleted CRD until its objects are deleted.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Whether `def` is the CustomResourceDefinition resource.
pub(crate) fn is_crd(def: &ResourceDef) -> bool {
    def.api.group == GROUP && def.api.kind == KIND
}

/// The k8s-openapi type of CRDs.
pub(crate) type Crd = CustomResourceDefinition;

/// The typed CRD of an object (None when it does not decode: the write path has validated it).
pub(crate) fn typed(obj: &Object) -> Option<CustomResourceDefinition> {
    obj.to_typed().ok()
}

/// The served versions of a CRD as resources, the storage version first (the one stored and
/// cached); none for a CRD marked for deletion.
pub(crate) fn served_defs(
    crd: &CustomResourceDefinition,
    names: &CustomResourceDefinitionNames,
) -> Vec<Arc<ResourceDef>> {
    if crd.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    let mut versions: Vec<&CustomResourceDefinitionVersion> =
        crd.spec.versions.iter().filter(|v| v.served).collect();
    versions.sort_by_key(|v| !v.storage);
    let storage = crd.spec.versions.iter().find(|v| v.storage);
    let storage = storage.map_or("", |v| v.name.as_str());
    versions
        .into_iter()
        .map(|v| Arc::new(version_def(crd, names, v, storage)))
        .collect()
}

/// The resource of one served version under the CRD's accepted `names` (its plural, the path
/// it is served at, is the one of the CRD's name); objects are stored in `storage` (with the
/// `None` conversion, module `convert`).
fn version_def(
    crd: &CustomResourceDefinition,
    names: &CustomResourceDefinitionNames,
    v: &CustomResourceDefinitionVersion,
    storage: &str,
) -> ResourceDef {
    let spec = &crd.spec;
    let api = ApiResource {
        group: spec.group.clone(),
        version: v.name.clone(),
        api_version: format!("{}/{}", spec.group, v.name),
        kind: names.kind.clone(),
        plural: spec.names.plural.clone(),
    };
    let subresources = v.subresources.as_ref();
    let mut def = ResourceDef::new(api, spec.scope == "Namespaced");
    def.singular = names
        .singular
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| names.kind.to_ascii_lowercase());
    def.short_names = names.short_names.clone().unwrap_or_default();
    def.categories = names.categories.clone().unwrap_or_default();
    def.fields = v
        .selectable_fields
        .iter()
        .flatten()
        .map(|f| f.json_path.trim_start_matches('.').to_owned())
        .collect();
    def.status_subresource = subresources.is_some_and(|s| s.status.is_some());
    def.scale_subresource = subresources.is_some_and(|s| s.scale.is_some());
    def.generation = true;
    def.schema = v
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| serde_json::to_value(s).ok())
        .map(Arc::new);
    def.printer_columns =
        columns::printer_columns(v.additional_printer_columns.as_deref().unwrap_or_default());
    storage.clone_into(&mut def.storage_version);
    def.deprecation_warning = deprecation::warning(crd, v);
    def
}

/// `status.storedVersions` after a write of `crd`: the versions stored so far and the current
/// storage version (as the CRD strategy's PrepareForCreate and PrepareForUpdate append it).
pub(crate) fn stored_versions(crd: &CustomResourceDefinition) -> Vec<String> {
    let mut stored = crd
        .status
        .as_ref()
        .and_then(|s| s.stored_versions.clone())
        .unwrap_or_default();
    if let Some(v) = crd.spec.versions.iter().find(|v| v.storage)
        && !stored.contains(&v.name)
    {
        stored.push(v.name.clone());
    }
    stored
}

/// The CRD that [`ApiServerBuilder::custom_resource`](crate::ApiServerBuilder::custom_resource)
/// registers: one served storage version with a status subresource and a schema that keeps
/// every field.
pub(crate) fn for_api_resource(api: &ApiResource, namespaced: bool) -> Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": KIND,
        "metadata": {"name": format!("{}.{}", api.plural, api.group)},
        "spec": {
            "group": api.group,
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "names": {
                "plural": api.plural, "kind": api.kind,
                "singular": api.kind.to_ascii_lowercase(), "listKind": format!("{}List", api.kind),
            },
            "versions": [{
                "name": api.version, "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    })
}

/// Marks a CRD being deleted as Kubernetes' CRD store does: with the cleanup finalizer (its
/// objects are deleted by the controller, which then removes the finalizer).
pub(crate) fn mark_terminating(obj: &mut Object) {
    let meta = obj.meta_mut();
    let finalizers = meta.finalizers.get_or_insert_with(Vec::new);
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        finalizers.push(CLEANUP_FINALIZER.to_owned());
    }
}
