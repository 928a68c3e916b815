//! Update and patch (`rest.BeforeUpdate`): preconditions, identity fields kept, the kind's
//! strategy (status rules, generation, validation), then a guaranteed update of storage.

use std::sync::Arc;

use kube_core::Resource;
use parking_lot::Mutex;
use serde_json::Value;

use super::builtin::strategy_for;
use super::create::{create, prepare_create};
use super::decode::{body_object, object_of, patched_object};
use super::managed::{FieldManager, apply, keep_applied, track_update};
use super::strategy::Subresource;
use super::{Body, PatchRequest, Target, Written, conflict_stale, node_ports, not_found};
use crate::convert;
use crate::error::ApiError;
use crate::object::Object;
use crate::patch::{PatchKind, apply_patch};
use crate::resource::ResourceDef;
use crate::resource_version;
use crate::schema::Schema;
use crate::storage::{Preconditions, StorageError, UpdateFn};
use crate::validation;

/// The state after writing `new` over `old` through `subresource`: identity fields from `old`,
/// then the strategy's update rules and validation.
fn prepare_update(
    def: &ResourceDef,
    name: &str,
    old: &Object,
    mut new: Object,
    subresource: Subresource,
) -> Result<Object, ApiError> {
    let mut causes = validation::meta_causes(new.meta());
    causes.extend(validation::meta_update(new.meta(), old.meta()));
    causes.extend(validation::kube_finalizers(def, new.meta()));
    validation::check(def, name, &causes)?;
    let om = old.meta();
    let meta = new.meta_mut();
    meta.name.clone_from(&om.name);
    meta.namespace.clone_from(&om.namespace);
    meta.uid.clone_from(&om.uid);
    meta.creation_timestamp.clone_from(&om.creation_timestamp);
    meta.deletion_timestamp.clone_from(&om.deletion_timestamp);
    let strategy = strategy_for(def);
    strategy.prepare_for_update(def, &mut new, old, subresource);
    validation::check(
        def,
        name,
        &strategy.validate_subresource_update(def, &new, old, subresource),
    )?;
    strategy.canonicalize(&mut new);
    Ok(new)
}

/// What an update that emptied the finalizers made, and the uid of the object it replaces.
type Emptied = (Object, Option<String>);

/// Runs `f` on the current object (in the target's version) and stores the result (in the
/// storage version; a dry run only computes it). An update that leaves an object marked for
/// deletion without finalizers deletes it instead of writing it, as `store.go`'s `Update`
/// (`errEmptiedFinalizers`, `deleteWithoutFinalizers`): watchers see one DELETED event (the
/// last stored state), and the answer is the object the update made.
pub(crate) async fn guaranteed_update(
    target: &Target<'_>,
    name: &str,
    mut f: UpdateFn,
) -> Result<Arc<Object>, ApiError> {
    let storage = &target.shared.storage;
    let key = target.key(name);
    let def = Arc::clone(target.def);
    // The object of the last run of the update function when it emptied the finalizers, with
    // the uid of the object it would have replaced.
    let emptied: Arc<Mutex<Option<Emptied>>> = Arc::default();
    let emptied_in_update = Arc::clone(&emptied);
    let mut f: UpdateFn = Box::new(move |cur| {
        *emptied_in_update.lock() = None;
        let served = cur.map(|c| convert::served(&def, c));
        let new = convert::stored(&def, f(served.as_ref())?);
        if let Some(cur) = cur
            && crate::deletion::should_delete_after_update(&new)
        {
            *emptied_in_update.lock() = Some((new, cur.meta().uid.clone()));
            return Err(ApiError::internal("emptied finalizers"));
        }
        Ok(new)
    });
    let result = if target.dry_run {
        let cur = target.get(name).await?;
        f(cur.as_ref()).map(Arc::new)
    } else {
        storage
            .guaranteed_update(key.clone(), f)
            .await
            .map_err(|e| target.status(name, e))
    };
    let taken = emptied.lock().take();
    let Some((new, uid)) = taken else {
        return result;
    };
    if target.dry_run {
        return Ok(Arc::new(new));
    }
    let pre = Preconditions {
        resource_version: None,
        uid,
    };
    match storage.delete(key, pre).await {
        // Deletes race: another update may have deleted it first.
        Ok(_) | Err(StorageError::NotFound(_)) => {
            crate::quota::replenish(target.shared, target.def, target.namespace).await;
            Ok(Arc::new(new))
        }
        Err(e) => Err(target.status(name, e)),
    }
}

/// [`guaranteed_update`] with the validating admission webhooks of a write through the main
/// resource: the write is computed on the current object, admitted (UPDATE, or CREATE when
/// it creates), then stored if the object has not changed meanwhile (409 otherwise, where
/// Kubernetes admits its retry again). Without webhook configurations: `guaranteed_update`.
async fn admitted_update(
    target: &Target<'_>,
    name: &str,
    mut f: UpdateFn,
    subresource: Subresource,
) -> Result<(Arc<Object>, Vec<String>), ApiError> {
    if subresource != Subresource::Main || !crate::webhook::configured(target.shared) {
        return Ok((guaranteed_update(target, name, f).await?, Vec::new()));
    }
    let current = target.get(name).await?;
    let served = current.as_ref().map(|c| convert::served(target.def, c));
    let candidate = f(served.as_ref())?;
    let attributes = crate::webhook::Attributes {
        def: target.def,
        operation: if current.is_some() {
            "UPDATE"
        } else {
            "CREATE"
        },
        name,
        namespace: candidate.meta().namespace.as_deref(),
        object: Some(&candidate),
        old_object: served.as_deref(),
        dry_run: target.dry_run,
    };
    let warnings = crate::webhook::validate(target.shared, &attributes).await?;
    let seen = current.as_ref().map(|c| c.resource_version_u64());
    let (def, owned_name) = (Arc::clone(target.def), name.to_owned());
    let store: UpdateFn = Box::new(move |now| {
        if now.map(|o| o.resource_version_u64()) != seen {
            return Err(conflict_stale(&def, &owned_name));
        }
        Ok(candidate.clone())
    });
    Ok((guaranteed_update(target, name, store).await?, warnings))
}

/// Checks a name given in a body against the request's.
fn check_name(new: &Object, name: &str) -> Result<(), ApiError> {
    let new_name = new.meta().name.as_deref().unwrap_or("");
    if new_name == name {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "the name of the object ({new_name}) does not match the name on the URL ({name})"
    )))
}

/// PUT of an object or its status.
pub(crate) async fn update(
    target: &Target<'_>,
    name: &str,
    body: Body,
    subresource: Subresource,
    manager: &FieldManager,
) -> Result<Written, ApiError> {
    let def = Arc::clone(target.def);
    let (mut new, mut decoded) = body_object(&def, body, manager.validation())?;
    decoded.extend(validation::dedup_owner_references(new.meta_mut(), false));
    if new.meta().name.is_some() {
        check_name(&new, name)?;
    }
    if let (Some(path_ns), Some(obj_ns)) = (target.namespace, new.meta().namespace.as_deref())
        && !obj_ns.is_empty()
        && obj_ns != path_ns
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let expected_rv = match new
        .meta()
        .resource_version
        .as_deref()
        .filter(|rv| !rv.is_empty())
    {
        Some(rv) => Some(resource_version::parse(rv).map_err(|_| {
            validation::invalid(
                &def,
                name,
                &[(
                    "metadata.resourceVersion".to_owned(),
                    format!("Invalid value: \"{rv}\": must be a valid resource version"),
                )],
            )
        })?),
        None => None,
    };
    // A kind that creates on update creates through the create path once the update found
    // nothing (and updates what was created meanwhile); only such a kind keeps a copy of the
    // body for that.
    let creates = strategy_for(&def).allow_create_on_update();
    let kept = creates.then(|| new.clone());
    // The finalizers of the object the update replaced, for the warnings about new ones.
    let old_finalizers: Arc<Mutex<Vec<String>>> = Arc::default();
    // A service's node ports (and cluster IP) are allocated from what the others use.
    let ports = node_ports::for_update(target, name, subresource == Subresource::Main)
        .await?
        .map(Arc::new);
    let f = |new| {
        let seen = UpdateSeen {
            old_finalizers: Arc::clone(&old_finalizers),
            ports: ports.clone(),
        };
        update_fn(&def, name, new, expected_rv, subresource, manager, seen)
    };
    let (stored, admitted) = match (
        admitted_update(target, name, f(new), subresource).await,
        kept,
    ) {
        (Err(e), Some(new)) if e.code == 404 => {
            if let Some(written) = create_on_update(target, name, &new, manager).await? {
                return Ok(written.with_decode_warnings(decoded));
            }
            admitted_update(target, name, f(new), subresource).await?
        }
        (stored, _) => stored?,
    };
    if subresource == Subresource::Main {
        super::create::sync_quota(target, &stored).await;
    }
    let old = std::mem::take(&mut *old_finalizers.lock());
    let mut written = Written::new(target.def, stored, false, &old).with_decode_warnings(decoded);
    written.warnings.extend(admitted);
    Ok(written)
}

/// The storage update of a PUT of `new` (`expected_rv`: the resource version it names).
fn update_fn(
    def: &Arc<ResourceDef>,
    name: &str,
    new: Object,
    expected_rv: Option<u64>,
    subresource: Subresource,
    manager: &FieldManager,
    seen: UpdateSeen,
) -> UpdateFn {
    let UpdateSeen {
        old_finalizers,
        ports,
    } = seen;
    let def = Arc::clone(def);
    let owned_name = name.to_owned();
    let manager = manager.clone();
    let strategy = strategy_for(&def);
    Box::new(move |cur| {
        *old_finalizers.lock() = finalizers_of(cur);
        let cur = cur.ok_or_else(|| not_found(&def, &owned_name))?;
        match expected_rv {
            None if !strategy.allow_unconditional_update() => {
                return Err(rv_required(&def, &owned_name));
            }
            Some(rv) if rv != cur.resource_version_u64() => {
                return Err(conflict_stale(&def, &owned_name));
            }
            _ => {}
        }
        let mut next = prepare_update(&def, &owned_name, cur, new.clone(), subresource)?;
        if let Some(ports) = &ports {
            ports.allocate(&def, &owned_name, &mut next, cur)?;
        }
        track_update(&def, Some(cur), &mut next, &manager)?;
        Ok(next)
    })
}

/// What a PUT's update function shares with its caller: where it records the replaced
/// object's finalizers, and a service's node-port allocation.
struct UpdateSeen {
    old_finalizers: Arc<Mutex<Vec<String>>>,
    ports: Option<Arc<node_ports::ForUpdate>>,
}

/// The finalizers of the object an update replaces (none when it creates).
fn finalizers_of(cur: Option<&Arc<Object>>) -> Vec<String> {
    cur.and_then(|c| c.meta().finalizers.clone())
        .unwrap_or_default()
}

/// 422 for an update without `metadata.resourceVersion` of a kind whose strategy does not
/// `AllowUnconditionalUpdate` (store.go Update): the "kind" of the error is the resource, and
/// the value is the zero resource version, printed as 1.34 prints a uint64.
fn rv_required(def: &ResourceDef, name: &str) -> ApiError {
    ApiError::invalid(
        &def.api.group,
        &def.api.plural,
        name,
        &[(
            "metadata.resourceVersion".to_owned(),
            "Invalid value: 0: must be specified for an update".to_owned(),
        )],
    )
}

/// A PUT to an absent object of a kind whose strategy has `AllowCreateOnUpdate` creates it,
/// through the create path (admission, a service's cluster IP); None when one was created
/// meanwhile. A resource version in the body is dropped, as storage drops it.
async fn create_on_update(
    target: &Target<'_>,
    name: &str,
    new: &Object,
    manager: &FieldManager,
) -> Result<Option<Written>, ApiError> {
    let mut value = new.to_value();
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        meta.insert("name".into(), Value::String(name.to_owned()));
    }
    create_absent(target, value, manager).await
}

/// Creates `value` through the create path; None when an object of its name was created
/// meanwhile (the caller then updates it).
async fn create_absent(
    target: &Target<'_>,
    value: Value,
    manager: &FieldManager,
) -> Result<Option<Written>, ApiError> {
    let body = Body {
        value,
        duplicates: Vec::new(),
    };
    match create(target, body, manager).await {
        Ok(written) => Ok(Some(written)),
        Err(e) if e.reason == "AlreadyExists" => Ok(None),
        Err(e) => Err(e),
    }
}

/// An apply patch of an absent object creates it, through the create path (a service gets its
/// cluster IP); None when the object exists (or was created meanwhile).
async fn apply_create(
    target: &Target<'_>,
    name: &str,
    request: &PatchRequest,
    manager: &FieldManager,
) -> Result<Option<Written>, ApiError> {
    let live = target.get(name).await?;
    if live.is_some() {
        return Ok(None);
    }
    let mut value = apply(target.def, None, &request.patch, manager)?;
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        match meta.get("name").and_then(Value::as_str) {
            Some(given) if given != name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({given}) does not match the name on the URL ({name})"
                )));
            }
            _ => {
                meta.insert("name".into(), Value::String(name.to_owned()));
            }
        }
    }
    create_absent(target, value, manager).await
}

/// PATCH of an object or its status. An apply patch of an absent object creates it.
pub(crate) async fn patch(
    target: &Target<'_>,
    name: &str,
    request: PatchRequest,
    subresource: Subresource,
    manager: &FieldManager,
) -> Result<Written, ApiError> {
    if request.kind == PatchKind::Apply
        && subresource == Subresource::Main
        && let Some(written) = apply_create(target, name, &request, manager).await?
    {
        return Ok(written);
    }
    let ports = node_ports::for_update(target, name, subresource == Subresource::Main).await?;
    let def = Arc::clone(target.def);
    let owned_name = name.to_owned();
    let namespace = target.namespace.map(str::to_owned);
    let manager = manager.clone();
    // The unknown-field warnings of the last run of the update function.
    let decoded = Arc::new(Mutex::new(Vec::new()));
    let decoded_in_update = Arc::clone(&decoded);
    let old_finalizers = Arc::new(Mutex::new(Vec::new()));
    let old_in_update = Arc::clone(&old_finalizers);
    let f: UpdateFn = Box::new(move |cur| {
        *old_in_update.lock() = finalizers_of(cur);
        let is_apply = request.kind == PatchKind::Apply;
        let Some(cur) = cur else {
            if !is_apply {
                return Err(not_found(&def, &owned_name));
            }
            let value = apply(&def, None, &request.patch, &manager)?;
            let mut obj = object_of(&def, value)?;
            obj.meta_mut().name = Some(owned_name.clone());
            return prepare_create(&def, namespace.as_deref(), obj, false);
        };
        let applied = match is_apply {
            true => Some(apply(&def, Some(cur), &request.patch, &manager)?),
            false => None,
        };
        decoded_in_update.lock().clear();
        let mut new = match &applied {
            Some(value) => object_of(&def, value.clone())?,
            None => {
                let mut value = cur.to_value();
                apply_patch(
                    request.kind,
                    &mut value,
                    &request.patch,
                    Schema::type_of(&def.api, def.schema.as_deref()).ty(),
                )?;
                let (new, warnings) = patched_object(&def, value, &request, manager.validation())?;
                *decoded_in_update.lock() = warnings;
                new
            }
        };
        let duplicates = validation::dedup_owner_references(new.meta_mut(), true);
        decoded_in_update.lock().extend(duplicates);
        // As the API server's patch handler (checkName): the patched object must keep the
        // name and namespace of the request.
        check_name(&new, &owned_name)?;
        if let (Some(ns), Some(obj_ns)) = (namespace.as_deref(), new.meta().namespace.as_deref())
            && !obj_ns.is_empty()
            && obj_ns != ns
        {
            return Err(ApiError::bad_request(format!(
                "the namespace of the object ({obj_ns}) does not match the namespace on the request ({ns})"
            )));
        }
        // A patch that removes the resource version makes an unconditional update, which
        // kinds without `AllowUnconditionalUpdate` refuse (store.go Update).
        match new
            .meta()
            .resource_version
            .as_deref()
            .filter(|rv| !rv.is_empty())
        {
            None if strategy_for(&def).allow_unconditional_update() => {}
            None => return Err(rv_required(&def, &owned_name)),
            Some(rv) if resource_version::parse(rv).ok() != Some(cur.resource_version_u64()) => {
                return Err(conflict_stale(&def, &owned_name));
            }
            Some(_) => {}
        }
        let mut next = prepare_update(&def, &owned_name, cur, new, subresource)?;
        if let Some(ports) = &ports {
            ports.allocate(&def, &owned_name, &mut next, cur)?;
        }
        match &applied {
            Some(value) => keep_applied(&def, &mut next, value)?,
            None => track_update(&def, Some(cur), &mut next, &manager)?,
        }
        Ok(next)
    });
    let (stored, admitted) = admitted_update(target, name, f, subresource).await?;
    let decoded = std::mem::take(&mut *decoded.lock());
    let old = std::mem::take(&mut *old_finalizers.lock());
    let mut written = Written::new(target.def, stored, false, &old).with_decode_warnings(decoded);
    written.warnings.extend(admitted);
    Ok(written)
}
