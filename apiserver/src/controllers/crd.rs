//! The CustomResourceDefinition controller: for each CRD in the watch cache, the resources its
//! served versions declare are served (discovery, CRUD, list/watch through their own watch
//! cache) under the names it was given, its `NamesAccepted` and `Established` conditions and
//! `acceptedNames` are set through `/status` (`crd/naming.rs` decides them; a change of one
//! CRD's names decides the others of its group again); a CRD marked for deletion has its
//! objects deleted, stops being served and loses the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer, which lets the write path delete
//! it. At start (and after every rewatch) the stored CRDs come in as the initial state,
//! so a server restarted over the same storage serves them again.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::time::Duration;

use kube_core::Resource;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::cache::{Msg, WatchHandle, WatchKind, WatchRequest, WatchStart};
use crate::crd::{self, CLEANUP_FINALIZER, Crd};
use crate::error::ApiError;
use crate::filter::Filter;
use crate::object::Object;
use crate::patch::PatchKind;
use crate::registry::{
    DeleteRequest, FieldManager, PatchRequest, Subresource, Target, create_object,
    delete_collection, patch,
};
use crate::resource::ResourceDef;
use crate::shared::Shared;

/// The field manager of the controller's writes.
const MANAGER: &str = "kube-apiserver";

/// Starts the controller, which first creates the `registered` CRDs that are not stored yet;
/// it ends when the server shuts down.
pub(super) fn spawn(shared: &Arc<Shared>, registered: Vec<Value>) {
    let weak = Arc::downgrade(shared);
    let stop = shared.shutdown.child_token();
    tokio::spawn(async move {
        tokio::select! {
            () = stop.cancelled() => {}
            () = async {
                register(&weak, registered).await;
                run(weak).await;
            } => {}
        }
    });
}

/// Creates the CRDs registered with the builder (those already stored stay as they are).
async fn register(weak: &Weak<Shared>, registered: Vec<Value>) {
    let Some(shared) = weak.upgrade() else { return };
    for value in registered {
        let result = match (crd_def(&shared), Object::from_value(value)) {
            (Ok(def), Ok(obj)) => create_object(&shared, &def, obj).await.map(drop),
            (Err(err), _) => Err(err),
            (_, Err(err)) => Err(ApiError::bad_request(err.to_string())),
        };
        match result {
            Err(err) if err.code != 409 => {
                tracing::warn!(
                    error = &err as &dyn std::error::Error,
                    "cannot register a CRD"
                );
            }
            _ => {}
        }
    }
}

/// Watches CRDs (rewatching when a watch ends) until the server is gone.
async fn run(weak: Weak<Shared>) {
    loop {
        let Some(shared) = weak.upgrade() else { return };
        let handle = match watch_crds(&shared).await {
            Ok(handle) => handle,
            Err(err) => {
                tracing::warn!(
                    error = &err as &dyn std::error::Error,
                    "crd controller: cannot watch"
                );
                drop(shared);
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let (initial, mut rx) = (handle.initial, handle.rx);
        for msg in initial {
            handle_msg(&shared, msg).await;
        }
        shared.crds_served.send_replace(true);
        drop(shared);
        while let Some(msg) = rx.recv().await {
            let Some(shared) = weak.upgrade() else { return };
            handle_msg(&shared, msg).await;
        }
    }
}

/// The CRD resource.
fn crd_def(shared: &Shared) -> Result<Arc<ResourceDef>, ApiError> {
    shared
        .find(crd::GROUP, "v1", "customresourcedefinitions")
        .ok_or_else(|| ApiError::internal("CustomResourceDefinitions are not served"))
}

async fn watch_crds(shared: &Shared) -> Result<WatchHandle, ApiError> {
    let def = crd_def(shared)?;
    let cache = shared
        .cache(&def)
        .ok_or_else(|| ApiError::internal("no watch cache for CustomResourceDefinitions"))?;
    let rev = shared
        .storage
        .revision()
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    cache.wait_fresh(rev).await?;
    cache.watch(WatchRequest {
        start: WatchStart::State,
        filter: Filter::default(),
        bookmarks: false,
        deadline: Instant::now() + Duration::from_secs(365 * 24 * 3600),
    })
}

async fn handle_msg(shared: &Shared, msg: Msg) {
    let (obj, deleted) = match msg {
        Msg::Initial(obj) => (obj, false),
        Msg::Event(kind, event) => (
            Arc::clone(event.object_for(kind)),
            kind == WatchKind::Deleted,
        ),
        _ => return,
    };
    let Some(crd) = crd::typed(&obj) else { return };
    let name = crd.metadata.name.clone().unwrap_or_default();
    let result = if deleted {
        shared.serve(&crd.spec.group, &crd.spec.names.plural, Vec::new());
        // The deleted CRD has freed its names: the others of its group are decided again.
        sync_group(shared, &crd.spec.group, &name).await
    } else if crd.metadata.deletion_timestamp.is_some() {
        finalize(shared, &crd, &name).await
    } else {
        match establish(shared, &crd, &name).await {
            Ok(true) => sync_group(shared, &crd.spec.group, &name).await,
            other => other.map(drop),
        }
    };
    if let Err(err) = result {
        tracing::warn!(crd = %name, error = &err as &dyn std::error::Error, "crd controller");
    }
}

/// The CRDs in the watch cache.
fn cached_crds(shared: &Shared) -> Result<Vec<Crd>, ApiError> {
    let def = crd_def(shared)?;
    let cache = shared
        .cache(&def)
        .ok_or_else(|| ApiError::internal("no watch cache for CustomResourceDefinitions"))?;
    let (objects, _) = cache.list(&Filter::default());
    Ok(objects.iter().filter_map(|o| crd::typed(o)).collect())
}

/// `requeueAllOtherGroupCRDs`: after `changed` freed or took names, the other CRDs of `group`
/// are decided again, and so on while their status changes.
async fn sync_group(shared: &Shared, group: &str, changed: &str) -> Result<(), ApiError> {
    let mut pending: VecDeque<String> = VecDeque::new();
    let others = |pending: &mut VecDeque<String>, done: &str| -> Result<(), ApiError> {
        for other in cached_crds(shared)? {
            let other_name = other.metadata.name.unwrap_or_default();
            if other.spec.group == group && other_name != done && !pending.contains(&other_name) {
                pending.push_back(other_name);
            }
        }
        Ok(())
    };
    others(&mut pending, changed)?;
    while let Some(name) = pending.pop_front() {
        let current = cached_crds(shared)?
            .into_iter()
            .find(|c| c.metadata.name.as_deref() == Some(name.as_str()));
        let Some(current) = current else { continue };
        if current.metadata.deletion_timestamp.is_none()
            && establish(shared, &current, &name).await?
        {
            others(&mut pending, &name)?;
        }
    }
    Ok(())
}

/// Decides the CRD's names and conditions, serves its versions under its accepted names (when
/// they changed) and writes its status; true when the status was written.
async fn establish(shared: &Shared, crd: &Crd, name: &str) -> Result<bool, ApiError> {
    let (group, plural) = (&crd.spec.group, &crd.spec.names.plural);
    // The other CRDs are read (decoded) only when there are names to decide.
    let others = match crd::names_settled(crd) {
        true => Vec::new(),
        false => cached_crds(shared)?,
    };
    let naming = crd::decide_names(crd, &others);
    let defs = if naming.served {
        crd::served_defs(crd, &naming.accepted)
    } else {
        Vec::new()
    };
    let served = shared.served();
    let current: Vec<&Arc<ResourceDef>> = served
        .resources
        .iter()
        .filter(|r| &r.api.group == group && &r.api.plural == plural)
        .collect();
    let same = current.len() == defs.len() && current.iter().zip(&defs).all(|(a, b)| a == &b);
    if !same {
        tracing::info!(crd = %name, versions = defs.len(), "serving custom resource");
        shared.serve(group, plural, defs);
    }
    let Some(status) = naming.patch else {
        return Ok(false);
    };
    let written = write_crd(shared, name, status, Subresource::Status).await?;
    // The next decision of this group must see the names just written.
    let rv = written
        .meta()
        .resource_version
        .as_deref()
        .unwrap_or_default();
    let rv = crate::resource_version::parse_or_zero(rv);
    let def = crd_def(shared)?;
    if let Some(cache) = shared.cache(&def) {
        cache.wait_fresh(rv).await?;
    }
    Ok(true)
}

/// Deletes the objects of a CRD marked for deletion, stops serving it and removes the cleanup
/// finalizer.
async fn finalize(shared: &Shared, crd: &Crd, name: &str) -> Result<(), ApiError> {
    let finalizers = crd.metadata.finalizers.clone().unwrap_or_default();
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        return Ok(());
    }
    let (group, plural) = (&crd.spec.group, &crd.spec.names.plural);
    let storage_def = shared
        .served()
        .resources
        .iter()
        .find(|r| &r.api.group == group && &r.api.plural == plural)
        .cloned();
    if let Some(def) = storage_def {
        let target = Target {
            shared,
            def: &def,
            namespace: None,
            dry_run: false,
        };
        let deleted = delete_collection(&target, None, &DeleteRequest::default()).await?;
        if let Some(cache) = shared.cache(&def) {
            cache.wait_fresh(deleted.last_revision).await?;
        }
        shared.serve(group, plural, Vec::new());
    }
    let rest: Vec<Value> = finalizers
        .iter()
        .filter(|f| *f != CLEANUP_FINALIZER)
        .map(|f| Value::String(f.clone()))
        .collect();
    let body = json!({"metadata": {"finalizers": rest}});
    write_crd(shared, name, body, Subresource::Main)
        .await
        .map(drop)
}

/// A merge patch of a CRD through the write path.
async fn write_crd(
    shared: &Shared,
    name: &str,
    body: Value,
    subresource: Subresource,
) -> Result<Arc<Object>, ApiError> {
    let def = crd_def(shared)?;
    let target = Target {
        shared,
        def: &def,
        namespace: None,
        dry_run: false,
    };
    let request = PatchRequest {
        kind: PatchKind::Merge,
        patch: body,
        duplicates: Vec::new(),
    };
    let manager = FieldManager::controller(MANAGER, subresource == Subresource::Status);
    Ok(patch(&target, name, request, subresource, &manager)
        .await?
        .object)
}
