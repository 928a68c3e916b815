//! Create (`rest.BeforeCreate`): namespace and name, identity fields, the kind's strategy,
//! validation, then storage.

use std::sync::Arc;

use kube_core::Resource;
use rand::Rng;
use serde_json::Value;

use super::builtin::strategy_for;
use super::decode::{body_object, check_type};
use super::managed::{FieldManager, track_update};
use super::{Body, Target, Written, node_ports, now, service_ip};
use crate::error::ApiError;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::resource_version;
use crate::shared::Shared;
use crate::validation;

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// The longest prefix a generated name keeps (`maxGeneratedNameLength`: 63 less the suffix).
const MAX_GENERATED_PREFIX: usize = 58;

/// A name from `prefix` (cut to [`MAX_GENERATED_PREFIX`] bytes) and five random characters, as
/// `names.SimpleNameGenerator` makes it.
fn generate_name(prefix: &str) -> String {
    let mut end = prefix.len().min(MAX_GENERATED_PREFIX);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{}", &prefix[..end], random_suffix())
}

/// Sets the namespace of a new object from the request's (`namespace`): they must agree, and a
/// namespaced object without either goes to `default`; cluster-scoped objects have none.
fn set_namespace(
    def: &ResourceDef,
    namespace: Option<&str>,
    obj: &mut Object,
) -> Result<(), ApiError> {
    let meta = obj.meta_mut();
    if !def.namespaced {
        meta.namespace = None;
        return Ok(());
    }
    match (namespace, meta.namespace.as_deref()) {
        (Some(path_ns), Some(obj_ns)) if !obj_ns.is_empty() && obj_ns != path_ns => {
            Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ))
        }
        (Some(path_ns), _) => {
            meta.namespace = Some(path_ns.to_owned());
            Ok(())
        }
        (None, Some(ns)) if !ns.is_empty() => Ok(()),
        (None, _) => {
            meta.namespace = Some("default".into());
            Ok(())
        }
    }
}

/// Fills in the server-set fields of a new object and validates it. `keep_identity` (seeding)
/// keeps a given uid and creation timestamp.
pub(super) fn prepare_create(
    def: &ResourceDef,
    namespace: Option<&str>,
    mut obj: Object,
    keep_identity: bool,
) -> Result<Object, ApiError> {
    set_namespace(def, namespace, &mut obj)?;
    let meta = obj.meta_mut();
    if meta.name.as_deref().unwrap_or("").is_empty() {
        match meta.generate_name.as_deref().filter(|g| !g.is_empty()) {
            Some(prefix) => meta.name = Some(generate_name(prefix)),
            None => {
                return Err(validation::invalid(
                    def,
                    "",
                    &[(
                        "metadata.name".to_owned(),
                        "Required value: name or generateName is required".to_owned(),
                    )],
                ));
            }
        }
    }
    // As etcd3's store: a numeric resourceVersion other than 0 is refused, with an error the
    // API server does not convert into a Status (500, no reason); anything else is dropped.
    if !keep_identity
        && meta
            .resource_version
            .as_deref()
            .and_then(|rv| resource_version::parse(rv).ok())
            .is_some_and(|rv| rv != 0)
    {
        return Err(ApiError::unconverted(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    if !keep_identity || meta.uid.is_none() {
        meta.uid = Some(uuid::Uuid::new_v4().to_string());
    }
    if !keep_identity || meta.creation_timestamp.is_none() {
        meta.creation_timestamp = Some(now());
    }
    meta.generation = def.generation.then_some(1);
    meta.resource_version = None;
    meta.deletion_timestamp = None;
    meta.deletion_grace_period_seconds = None;
    let strategy = strategy_for(def);
    strategy.prepare_for_create(def, &mut obj);
    let name = obj.meta().name.clone().unwrap_or_default();
    let mut causes = match obj.meta().generate_name.as_deref() {
        Some(prefix) if !prefix.is_empty() => validation::generate_name_causes(def, prefix),
        _ => Vec::new(),
    };
    causes.extend(validation::name_causes(def, &name));
    if let Some(ns) = obj.meta().namespace.as_deref() {
        causes.extend(validation::namespace_causes(ns));
    }
    causes.extend(validation::meta_causes(obj.meta()));
    causes.extend(validation::kube_finalizers(def, obj.meta()));
    causes.extend(strategy.validate(def, &obj));
    validation::check(def, &name, &causes)?;
    strategy.canonicalize(&mut obj);
    Ok(obj)
}

/// Creates `obj` of `def` directly (seeding keeps given uids and timestamps).
pub(crate) async fn create_object(
    shared: &Shared,
    def: &Arc<ResourceDef>,
    mut obj: Object,
) -> Result<Arc<Object>, ApiError> {
    check_type(def, &mut obj)?;
    let obj = prepare_create(def, None, obj, true)?;
    let target = Target {
        shared,
        def,
        namespace: None,
        dry_run: false,
    };
    store_new(&target, obj).await
}

/// Stores a new object in the storage version (or with a dry run, checks that none of its
/// name exists).
async fn store_new(target: &Target<'_>, obj: Object) -> Result<Arc<Object>, ApiError> {
    let obj = crate::convert::stored(target.def, obj);
    let name = obj.meta().name.clone().unwrap_or_default();
    let key = target
        .def
        .storage_key(obj.meta().namespace.as_deref(), &name);
    let storage = &target.shared.storage;
    if target.dry_run {
        let existing = storage
            .get(key)
            .await
            .map_err(|e| target.status(&name, e))?;
        if existing.is_some() {
            let api = &target.def.api;
            return Err(ApiError::already_exists(&api.group, &api.plural, &name));
        }
        return Ok(Arc::new(obj));
    }
    storage
        .create(key, obj)
        .await
        .map_err(|e| target.status(&name, e))
}

/// Creates an object from a request body (a service gets its cluster IP and node ports).
pub(crate) async fn create(
    target: &Target<'_>,
    body: Body,
    manager: &FieldManager,
) -> Result<Written, ApiError> {
    let (mut obj, mut decoded) = body_object(target.def, body, manager.validation())?;
    decoded.extend(validation::dedup_owner_references(obj.meta_mut(), false));
    let mut obj = prepare_create(target.def, target.namespace, obj, false)?;
    let name = obj.meta().name.clone().unwrap_or_default();
    crate::admission::admit_create(
        target.shared,
        target.def,
        obj.meta().namespace.as_deref(),
        &name,
    )
    .await?;
    let attributes = crate::webhook::Attributes {
        def: target.def,
        operation: "CREATE",
        name: &name,
        namespace: obj.meta().namespace.as_deref(),
        object: Some(&obj),
        old_object: None,
        dry_run: target.dry_run,
    };
    let webhook_warnings = crate::webhook::validate(target.shared, &attributes).await?;
    crate::quota::admit_create(target.shared, target.def, &obj, &name, target.dry_run).await?;
    if target.def.api.group.is_empty() && target.def.api.kind == "Service" {
        let name = obj.meta().name.clone().unwrap_or_default();
        let mut data = obj.data();
        if let Some(spec) = data.get_mut("spec").and_then(Value::as_object_mut) {
            service_ip::allocate(target, &name, spec).await?;
            node_ports::allocate_create(target, &name, spec).await?;
        }
        obj.set_data(data);
    }
    track_update(target.def, None, &mut obj, manager)?;
    let stored = store_new(target, obj).await?;
    sync_quota(target, &stored).await;
    let mut written = Written::new(target.def, stored, true, &[]).with_decode_warnings(decoded);
    written.warnings.extend(webhook_warnings);
    Ok(written)
}

/// After a quota was written: the quota controller's sync of its status (`hard` and `used`).
pub(super) async fn sync_quota(target: &Target<'_>, quota: &Object) {
    if target.dry_run || !crate::quota::is_quota(target.def) {
        return;
    }
    let meta = quota.meta();
    let (namespace, name) = (
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or(""),
    );
    if let Err(e) = crate::quota::sync(target.shared, namespace, name).await {
        tracing::warn!(namespace, quota = name, error = %e, "quota sync failed");
    }
}
