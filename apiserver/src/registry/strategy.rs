//! Per-kind write strategies, as each kind's `pkg/registry/<group>/<kind>/strategy.go` in
//! Kubernetes.
//!
//! A [`Strategy`] is a trait whose methods all have the behaviour of Kubernetes' generic
//! strategy as default bodies: a kind's strategy is a unit struct that overrides only the hooks
//! it has rules for (as Kubernetes' strategies embed the defaults), and custom resources without
//! a schema and kinds without special rules use [`DefaultStrategy`] (CRDs and custom objects
//! with a schema: custom.rs). `builtin::strategy_for` picks the
//! strategy of a resource at run time (a `&'static dyn Strategy`: strategies hold no state).

use kube_core::Resource;
use serde_json::{Map, Value};

use crate::object::Object;
use crate::resource::ResourceDef;
use crate::validation::Cause;

/// Which part of an object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subresource {
    /// The object itself.
    Main,
    /// The `status` subresource: only the status changes.
    Status,
    /// The `ephemeralcontainers` subresource of pods: only `spec.ephemeralContainers` changes.
    EphemeralContainers,
    /// The `approval` subresource of CertificateSigningRequests: only the status changes
    /// (the strategy keeps all of it but the conditions).
    Approval,
}

impl Subresource {
    /// Whether a write through it changes only the status (`status`, a CSR's `approval`): its
    /// managedFields entries are the status's.
    pub(crate) fn writes_status(self) -> bool {
        matches!(self, Subresource::Status | Subresource::Approval)
    }
}

/// The hooks of the write path for one kind. Every method has the generic behaviour as its
/// default.
pub(crate) trait Strategy: Sync {
    /// Fills in defaults (Kubernetes' defaulting functions, run when a body is decoded, before
    /// any other hook): `value` is the whole object as JSON. By default, the built-in kinds'
    /// defaults (custom resources have none yet).
    fn default(&self, def: &ResourceDef, value: &mut Value) {
        crate::defaults::apply(&def.api.api_version, &def.api.kind, value);
    }

    /// Server-set fields of a new object (after its identity fields are set, before it is
    /// validated).
    fn prepare_for_create(&self, _def: &ResourceDef, _obj: &mut Object) {}

    /// The state to store after writing `new` over `old` through `subresource`: by default,
    /// status reset rules and generation (see [`prepare_update`]).
    fn prepare_for_update(
        &self,
        def: &ResourceDef,
        new: &mut Object,
        old: &Object,
        subresource: Subresource,
    ) {
        prepare_update(def, new, old, subresource);
    }

    /// The kind's own validation of a new object (object metadata is validated by the write
    /// path for every kind).
    fn validate(&self, _def: &ResourceDef, _obj: &Object) -> Vec<Cause> {
        Vec::new()
    }

    /// The kind's own validation of an update, immutable fields included.
    fn validate_update(&self, _def: &ResourceDef, _new: &Object, _old: &Object) -> Vec<Cause> {
        Vec::new()
    }

    /// The kind's validation of an update through `subresource` (by default
    /// [`Strategy::validate_update`] for every subresource).
    fn validate_subresource_update(
        &self,
        def: &ResourceDef,
        new: &Object,
        old: &Object,
        _subresource: Subresource,
    ) -> Vec<Cause> {
        self.validate_update(def, new, old)
    }

    /// Normalizes a validated object before it is stored.
    fn canonicalize(&self, _obj: &mut Object) {}

    /// Warnings to send with the response of a write of `obj` (`Warning` headers).
    fn warnings(&self, _obj: &Object) -> Vec<String> {
        Vec::new()
    }

    /// Changes a DELETE makes to the object before it is deleted (a finalizer added here holds
    /// it, marked with a `deletionTimestamp`, until the finalizer is removed).
    fn prepare_for_delete(&self, _obj: &mut Object) {}

    /// Whether a PUT to an absent object creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether an update without `metadata.resourceVersion` is allowed (else 422 Invalid).
    fn allow_unconditional_update(&self) -> bool {
        true
    }
}

/// The generic strategy: custom resources without a schema and kinds without special rules. A
/// new object of a resource with a status subresource has no status (as custom resources).
pub(crate) struct DefaultStrategy;

impl Strategy for DefaultStrategy {
    fn prepare_for_create(&self, def: &ResourceDef, obj: &mut Object) {
        if def.status_subresource {
            set_status(obj, None);
        }
    }
}

/// Replaces the status of `obj` (None: removes it).
pub(crate) fn set_status(obj: &mut Object, status: Option<Value>) {
    let mut data = obj.data();
    set_field(&mut data, "status", status);
    obj.set_data(data);
}

/// The top-level fields a write through `subresource` does not change, so that no field
/// manager owns them: the status on the main resource of kinds with a status subresource, the
/// spec through `/status`.
pub(crate) fn reset_fields(def: &ResourceDef, subresource: Subresource) -> &'static [&'static str] {
    match subresource {
        Subresource::Main | Subresource::EphemeralContainers if def.status_subresource => {
            &["status"]
        }
        Subresource::Main | Subresource::EphemeralContainers => &[],
        Subresource::Status | Subresource::Approval => &["spec"],
    }
}

/// The generic update rules: through `/status` only the status of `new` is taken (the rest,
/// metadata included, stays `old`'s, as Kubernetes' `ResetObjectMetaForStatus`); on the main
/// resource the [`reset_fields`] stay `old`'s, and the generation goes up when anything but metadata and status changed.
pub(crate) fn prepare_update(
    def: &ResourceDef,
    new: &mut Object,
    old: &Object,
    subresource: Subresource,
) {
    let mut old_data = old.data();
    let mut new_data = new.data();
    if subresource == Subresource::EphemeralContainers {
        // As `dropNonEphemeralContainerUpdates`: the stored pod with the sent containers.
        let sent = new_data
            .get("spec")
            .and_then(|s| s.get("ephemeralContainers"))
            .cloned();
        *new = old.clone();
        if let Some(spec) = old_data.get_mut("spec").and_then(Value::as_object_mut) {
            set_field(spec, "ephemeralContainers", sent);
        }
        new.set_data(old_data);
        return;
    }
    if subresource.writes_status() {
        let status = new_data.remove("status");
        *new = old.clone();
        set_field(&mut old_data, "status", status);
        new.set_data(old_data);
        return;
    }
    let changed = old_data
        .iter()
        .chain(&new_data)
        .any(|(k, _)| k != "status" && old_data.get(k) != new_data.get(k));
    for field in reset_fields(def, subresource) {
        set_field(&mut new_data, field, old_data.remove(*field));
    }
    new.set_data(new_data);
    let generation = def
        .generation
        .then(|| old.meta().generation.unwrap_or(1) + i64::from(changed));
    new.meta_mut().generation = generation;
}

fn set_field(data: &mut Map<String, Value>, field: &str, value: Option<Value>) {
    match value {
        Some(value) => data.insert(field.to_owned(), value),
        None => data.remove(field),
    };
}
