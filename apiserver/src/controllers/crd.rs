//! The CustomResourceDefinition controller: for each CRD in the watch cache, the resources its
//! served versions declare are served (discovery, CRUD, list/watch through their own watch
//! cache), its `NamesAccepted` and `Established` conditions and `acceptedNames` are set through
//! `/status`; a CRD marked for deletion has its objects deleted, stops being served and loses
//! the `customresourcecleanup.apiextensions.k8s.io` finalizer, which lets the write path
//! delete it. At start (and after every rewatch) the stored CRDs come in as the initial state,
//! so a server restarted over the same storage serves them again.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::cache::{Msg, WatchHandle, WatchKind, WatchRequest, WatchStart};
use crate::crd::{self, CLEANUP_FINALIZER, Crd};
use crate::error::ApiError;
use crate::filter::Filter;
use crate::object::Object;
use crate::patch::PatchKind;
use crate::registry::{
    FieldManager, PatchRequest, Subresource, Target, create_object, delete_collection, patch,
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
        Ok(())
    } else if crd.metadata.deletion_timestamp.is_some() {
        finalize(shared, &crd, &name).await
    } else {
        establish(shared, &crd, &name).await
    };
    if let Err(err) = result {
        tracing::warn!(crd = %name, error = &err as &dyn std::error::Error, "crd controller");
    }
}

/// Serves the CRD's versions (when they changed) and sets its conditions.
async fn establish(shared: &Shared, crd: &Crd, name: &str) -> Result<(), ApiError> {
    let (group, plural) = (&crd.spec.group, &crd.spec.names.plural);
    let defs = crd::served_defs(crd);
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
    if let Some(status) = crd::established_status(crd) {
        write_crd(shared, name, status, Subresource::Status).await?;
    }
    Ok(())
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
        let (_, rev) = delete_collection(&target, None).await?;
        if let Some(cache) = shared.cache(&def) {
            cache.wait_fresh(rev).await?;
        }
        shared.serve(group, plural, Vec::new());
    }
    let rest: Vec<Value> = finalizers
        .iter()
        .filter(|f| *f != CLEANUP_FINALIZER)
        .map(|f| Value::String(f.clone()))
        .collect();
    let body = json!({"metadata": {"finalizers": rest}});
    write_crd(shared, name, body, Subresource::Main).await
}

/// A merge patch of a CRD through the write path.
async fn write_crd(
    shared: &Shared,
    name: &str,
    body: Value,
    subresource: Subresource,
) -> Result<(), ApiError> {
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
    };
    let manager = FieldManager::controller(MANAGER, subresource == Subresource::Status);
    patch(&target, name, request, subresource, &manager).await?;
    Ok(())
}
