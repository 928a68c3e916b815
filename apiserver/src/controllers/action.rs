//! What a controller writes, through the registry's write path.

use std::sync::Arc;

use kube_core::Resource;
use serde_json::Value;

use crate::deletion::DeleteOptions;
use crate::error::ApiError;
use crate::object::Object;
use crate::registry::{DeleteRequest, Target};
use crate::resource::ResourceDef;
use crate::shared::Shared;
use crate::storage::{Preconditions, UpdateFn};

/// One write of a controller, addressed by resource, namespace and name, guarded by uid.
pub(super) struct Action {
    pub(super) def: Arc<ResourceDef>,
    pub(super) namespace: Option<String>,
    pub(super) name: String,
    pub(super) uid: Option<String>,
    pub(super) change: Change,
}

/// What an [`Action`] does.
pub(super) enum Change {
    /// Deletes the object with these options.
    Delete(DeleteOptions),
    /// Changes the object (its owner references, finalizers or namespace status).
    Update(Box<dyn Fn(&mut Object) + Send + Sync>),
}

impl Action {
    /// The action on `object` of `def`.
    pub(super) fn on(def: &Arc<ResourceDef>, object: &Object, change: Change) -> Self {
        let meta = object.meta();
        Self {
            def: Arc::clone(def),
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone(),
            change,
        }
    }

    /// Writes it, through the resource as served now (a snapshot may predate a change of a
    /// CRD's storage version).
    pub(super) async fn run(self, shared: &Shared) -> Result<(), ApiError> {
        let served = shared.served();
        let def = served
            .stored(&self.def.api.group, &self.def.api.plural)
            .unwrap_or(&self.def);
        let target = Target {
            shared,
            def,
            namespace: self.namespace.as_deref(),
            dry_run: false,
        };
        match self.change {
            Change::Delete(options) => {
                let request = DeleteRequest {
                    preconditions: Preconditions {
                        resource_version: None,
                        uid: self.uid,
                    },
                    options,
                    dry_run: false,
                };
                crate::registry::delete(&target, &self.name, request)
                    .await
                    .map(drop)
            }
            Change::Update(change) => {
                let uid = self.uid;
                let def = Arc::clone(&self.def);
                let name = self.name.clone();
                let f: UpdateFn = Box::new(move |cur| {
                    let cur = cur.filter(|c| c.meta().uid == uid).ok_or_else(|| {
                        ApiError::not_found(&def.api.group, &def.api.plural, &name)
                    })?;
                    let mut next = (**cur).clone();
                    change(&mut next);
                    Ok(next)
                });
                crate::registry::guaranteed_update(&target, &self.name, f)
                    .await
                    .map(drop)
            }
        }
    }
}

/// Removes `finalizer` from an object.
pub(super) fn without_finalizer(finalizer: &'static str) -> Change {
    Change::Update(Box::new(move |obj| {
        let meta = obj.meta_mut();
        if let Some(f) = meta.finalizers.as_mut() {
            f.retain(|x| x != finalizer);
        }
        if meta.finalizers.as_ref().is_some_and(Vec::is_empty) {
            meta.finalizers = None;
        }
    }))
}

/// Sets a field of the object's data (`spec`, `status`).
pub(super) fn set_data(field: &'static str, value: Value) -> Change {
    Change::Update(Box::new(move |obj| {
        let mut data = obj.data();
        data.insert(field.to_owned(), value.clone());
        obj.set_data(data);
    }))
}
