//! The strategies of CustomResourceDefinitions (`pkg/registry/customresourcedefinition` in
//! Kubernetes' apiextensions-apiserver) and of custom objects with a schema (its
//! `pkg/registry/customresource`): defaults, validation, pruning and schema defaults.

use serde_json::{Value, json};

use super::strategy::{DefaultStrategy, Strategy, Subresource, prepare_update, set_status};
use crate::crd;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::validation::Cause;

/// CustomResourceDefinitions.
pub(super) struct CrdStrategy;

fn decode_causes(obj: &Object) -> Result<crd::Crd, Vec<Cause>> {
    crd::typed(obj).ok_or_else(|| vec![("spec".to_owned(), "Required value".to_owned())])
}

impl Strategy for CrdStrategy {
    /// `SetDefaults_CustomResourceDefinitionSpec`: singular, listKind and the `None`
    /// conversion.
    fn default(&self, _def: &ResourceDef, value: &mut Value) {
        let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        if !spec.contains_key("conversion") {
            spec.insert("conversion".into(), json!({"strategy": "None"}));
        }
        let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) else {
            return;
        };
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if !names.contains_key("singular") {
            names.insert("singular".into(), kind.to_ascii_lowercase().into());
        }
        if !names.contains_key("listKind") && !kind.is_empty() {
            names.insert("listKind".into(), format!("{kind}List").into());
        }
    }

    /// A new CRD has no status: the controller sets its conditions.
    fn prepare_for_create(&self, _def: &ResourceDef, obj: &mut Object) {
        set_status(obj, None);
    }

    /// The generic update rules, and the storage version added to `status.storedVersions`.
    fn prepare_for_update(
        &self,
        def: &ResourceDef,
        new: &mut Object,
        old: &Object,
        subresource: Subresource,
    ) {
        prepare_update(def, new, old, subresource);
        let Some(typed) = crd::typed(new) else {
            return;
        };
        let stored = crd::stored_versions(&typed);
        if typed
            .status
            .as_ref()
            .and_then(|s| s.stored_versions.as_ref())
            != Some(&stored)
        {
            let mut status = new.data().remove("status").unwrap_or_else(|| json!({}));
            status["storedVersions"] = json!(stored);
            set_status(new, Some(status));
        }
    }

    fn validate(&self, _def: &ResourceDef, obj: &Object) -> Vec<Cause> {
        decode_causes(obj).map_or_else(|c| c, |crd| crd::validate(&crd))
    }

    fn validate_update(&self, _def: &ResourceDef, new: &Object, old: &Object) -> Vec<Cause> {
        match (decode_causes(new), crd::typed(old)) {
            (Ok(new), Some(old)) => crd::validate_update(&new, &old),
            (Ok(new), None) => crd::validate(&new),
            (Err(causes), _) => causes,
        }
    }

    fn prepare_for_delete(&self, obj: &mut Object) {
        crd::mark_terminating(obj);
    }

    /// As every custom resource (and CRD) strategy: an update must name the resource version.
    fn allow_unconditional_update(&self) -> bool {
        false
    }
}

/// Custom objects whose version has a schema.
pub(super) struct CustomStrategy;

fn prune_and_default(def: &ResourceDef, obj: &mut Object) {
    if let Some(schema) = def.schema.as_deref() {
        let mut data = obj.data();
        crd::prune_and_default(schema, &mut data);
        obj.set_data(data);
    }
}

/// The schema's causes for `obj` (`old` on an update: what transition rules compare with).
fn check(def: &ResourceDef, obj: &Object, old: Option<&Object>) -> Vec<Cause> {
    def.schema
        .as_deref()
        .map(|schema| {
            crd::check_custom(
                schema,
                &obj.data(),
                || obj.to_value(),
                || old.map(Object::to_value),
            )
        })
        .unwrap_or_default()
}

impl Strategy for CustomStrategy {
    /// Pruned and defaulted; with a status subresource, the status is not the client's to set.
    fn prepare_for_create(&self, def: &ResourceDef, obj: &mut Object) {
        prune_and_default(def, obj);
        DefaultStrategy.prepare_for_create(def, obj);
    }

    fn prepare_for_update(
        &self,
        def: &ResourceDef,
        new: &mut Object,
        old: &Object,
        subresource: Subresource,
    ) {
        prune_and_default(def, new);
        prepare_update(def, new, old, subresource);
    }

    fn validate(&self, def: &ResourceDef, obj: &Object) -> Vec<Cause> {
        check(def, obj, None)
    }

    fn validate_update(&self, def: &ResourceDef, new: &Object, old: &Object) -> Vec<Cause> {
        check(def, new, Some(old))
    }

    /// As every custom resource (and CRD) strategy: an update must name the resource version.
    fn allow_unconditional_update(&self) -> bool {
        false
    }
}

/// Custom objects without a schema: the generic rules, but as every custom resource
/// (apiextensions-apiserver's `customResourceStrategy`), an update must name the resource
/// version.
pub(super) struct SchemalessStrategy;

impl Strategy for SchemalessStrategy {
    fn prepare_for_create(&self, def: &ResourceDef, obj: &mut Object) {
        DefaultStrategy.prepare_for_create(def, obj);
    }

    fn allow_unconditional_update(&self) -> bool {
        false
    }
}
