//! What a DELETE does to an object, as Kubernetes' generic registry store decides it
//! (`store.go`'s `Delete`, `BeforeDelete` and `deletionFinalizersForGarbageCollection`, the pod
//! strategy's `CheckGracefulDeleteStrategy`, the namespace REST `Delete`): delete it at once,
//! or mark it (`deletionTimestamp`, finalizers of the propagation policy, grace period, a
//! namespace's `Terminating` phase) for the controllers (controllers/) to finish.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube_core::Resource;
use serde_json::{Value, json};

use crate::object::Object;
use crate::resource::ResourceDef;

/// The finalizer of Orphan deletion: dependents lose their owner reference, then the owner goes.
pub(crate) const ORPHAN: &str = "orphan";
/// The finalizer of Foreground deletion: the dependents go first, then the owner.
pub(crate) const FOREGROUND: &str = "foregroundDeletion";
/// The namespace finalizer (in `spec.finalizers`) the namespace controller removes.
pub(crate) const KUBERNETES: &str = "kubernetes";
/// A pod's grace period when neither the request nor the pod names one.
const DEFAULT_POD_GRACE_SECONDS: i64 = 30;

/// `DeleteOptions.propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Propagation {
    /// Dependents keep existing without the owner reference.
    Orphan,
    /// The owner goes at once, the garbage collector deletes the dependents after.
    Background,
    /// The dependents go first (blocking ones waited for), then the owner.
    Foreground,
}

impl Propagation {
    /// The policy named `name` (validated before).
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "Orphan" => Some(Self::Orphan),
            "Background" => Some(Self::Background),
            "Foreground" => Some(Self::Foreground),
            _ => None,
        }
    }
}

/// The parts of `DeleteOptions` that decide what a delete does.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct DeleteOptions {
    /// `propagationPolicy`.
    pub(crate) propagation: Option<Propagation>,
    /// The deprecated `orphanDependents`.
    pub(crate) orphan_dependents: Option<bool>,
    /// `gracePeriodSeconds`.
    pub(crate) grace_period_seconds: Option<i64>,
}

/// What a delete does.
#[derive(Debug)]
pub(crate) enum Decision {
    /// Remove the object from storage now.
    Delete,
    /// Store this marked object instead.
    Mark(Box<Object>),
    /// Nothing changes (already marked alike).
    Unchanged,
}

pub(crate) fn is_namespace(def: &ResourceDef) -> bool {
    def.api.group.is_empty() && def.api.kind == "Namespace"
}

fn is_pod(def: &ResourceDef) -> bool {
    def.api.group.is_empty() && def.api.kind == "Pod"
}

/// The finalizers `obj` keeps under `options`: its own, with [`ORPHAN`] and [`FOREGROUND`] as
/// the policy says (without a policy, those it has already).
fn gc_finalizers(obj: &Object, options: &DeleteOptions) -> Vec<String> {
    let current = obj.meta().finalizers.clone().unwrap_or_default();
    let policy = options.propagation.or(match options.orphan_dependents {
        Some(true) => Some(Propagation::Orphan),
        Some(false) => Some(Propagation::Background),
        None => None,
    });
    let Some(policy) = policy else {
        return current;
    };
    let mut out: Vec<String> = current
        .into_iter()
        .filter(|f| f != ORPHAN && f != FOREGROUND)
        .collect();
    match policy {
        Propagation::Orphan => out.push(ORPHAN.to_owned()),
        Propagation::Foreground => out.push(FOREGROUND.to_owned()),
        Propagation::Background => {}
    }
    out
}

/// The grace period of deleting `obj` (pods bound to a node and still running: the request's,
/// else the pod's `terminationGracePeriodSeconds`, else 30 s; anything else: 0).
fn grace_seconds(def: &ResourceDef, obj: &Object, options: &DeleteOptions) -> i64 {
    if !is_pod(def) {
        return 0;
    }
    let bound = obj.field("spec.nodeName").is_some_and(|n| !n.is_empty());
    let finished = matches!(
        obj.field("status.phase").as_deref(),
        Some("Succeeded" | "Failed")
    );
    if !bound || finished {
        return 0;
    }
    options
        .grace_period_seconds
        .unwrap_or_else(|| {
            obj.to_value()["spec"]["terminationGracePeriodSeconds"]
                .as_i64()
                .unwrap_or(DEFAULT_POD_GRACE_SECONDS)
        })
        .max(0)
}

fn set_finalizers(obj: &mut Object, finalizers: Vec<String>) {
    obj.meta_mut().finalizers = (!finalizers.is_empty()).then_some(finalizers);
}

/// What deleting `current` of `def` under `options` does; without garbage collection
/// (`gc` false, as `--enable-garbage-collector=false`) the propagation policy adds no finalizer.
pub(crate) fn decide(
    def: &ResourceDef,
    current: &Object,
    options: &DeleteOptions,
    gc: bool,
) -> Decision {
    let finalizers = if gc {
        gc_finalizers(current, options)
    } else {
        current.meta().finalizers.clone().unwrap_or_default()
    };
    let meta = current.meta();
    if is_namespace(def) {
        return decide_namespace(current, finalizers);
    }
    let grace = grace_seconds(def, current, options);
    if meta.deletion_timestamp.is_some() {
        let same = meta.finalizers.clone().unwrap_or_default() == finalizers;
        let shorter = meta
            .deletion_grace_period_seconds
            .is_some_and(|g| grace < g);
        return match (same, finalizers.is_empty() && grace == 0) {
            (_, true) => Decision::Delete,
            (true, false) if !shorter => Decision::Unchanged,
            _ => Decision::Mark(Box::new(mark(current, finalizers, grace))),
        };
    }
    if finalizers.is_empty() && grace == 0 {
        return Decision::Delete;
    }
    Decision::Mark(Box::new(mark(current, finalizers, grace)))
}

/// `current` marked for deletion in `grace` seconds with `finalizers`.
fn mark(current: &Object, finalizers: Vec<String>, grace: i64) -> Object {
    let mut next = current.clone();
    let now = Timestamp::now();
    let at = now
        .checked_add(SignedDuration::from_secs(grace))
        .unwrap_or(now);
    let meta = next.meta_mut();
    meta.deletion_timestamp = Some(Time(at));
    meta.deletion_grace_period_seconds = Some(grace);
    set_finalizers(&mut next, finalizers);
    next
}

/// The namespace REST `Delete`: a namespace with `spec.finalizers` left is marked
/// `Terminating` (with the [`KUBERNETES`] finalizer) for the namespace controller, and deleted
/// once they and its metadata finalizers are gone.
fn decide_namespace(current: &Object, finalizers: Vec<String>) -> Decision {
    let value = current.to_value();
    let spec_finalizers = value["spec"]["finalizers"].as_array().map_or(0, Vec::len);
    if current.meta().deletion_timestamp.is_some() {
        return if spec_finalizers == 0 && finalizers.is_empty() {
            Decision::Delete
        } else {
            Decision::Unchanged
        };
    }
    let mut next = current.clone();
    let mut data = next.data();
    let spec = data.entry("spec").or_insert_with(|| json!({}));
    if spec_finalizers == 0 {
        spec["finalizers"] = json!([KUBERNETES]);
    }
    let status = data.entry("status").or_insert_with(|| json!({}));
    if let Value::Object(status) = status {
        status.insert("phase".into(), json!("Terminating"));
    }
    next.set_data(data);
    let meta = next.meta_mut();
    meta.deletion_timestamp = Some(Time(Timestamp::now()));
    meta.deletion_grace_period_seconds = Some(0);
    set_finalizers(&mut next, finalizers);
    Decision::Mark(Box::new(next))
}

/// Whether the registry of `def` sets `ReturnDeletedObject`: a delete that removes one of its
/// objects answers the object, where other kinds (custom resources and CRDs among them) answer
/// [`deleted_status`]. These are the stores of `pkg/registry/**/storage/storage.go` that set
/// it, among the kinds served here.
pub(crate) fn returns_deleted_object(def: &ResourceDef) -> bool {
    const RETURNED: [(&str, &str); 8] = [
        ("", "Pod"),
        ("", "Namespace"),
        ("", "Service"),
        ("", "ServiceAccount"),
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("", "ResourceQuota"),
        ("storage.k8s.io", "StorageClass"),
    ];
    RETURNED
        .iter()
        .any(|(group, kind)| def.api.group == *group && def.api.kind == *kind)
}

/// The answer of a delete that removed `obj` of a kind whose store does not return deleted
/// objects (`store.go`'s `finalizeDelete`): a `Status` Success naming it, with the resource
/// (not the kind) as `kind`, so that a client can tell it is gone rather than still
/// waiting for finalizers.
pub(crate) fn deleted_status(def: &ResourceDef, obj: &Object) -> Value {
    let meta = obj.meta();
    let mut details = json!({"name": meta.name.as_deref().unwrap_or_default()});
    if !def.api.group.is_empty() {
        details["group"] = json!(def.api.group);
    }
    details["kind"] = json!(def.api.plural);
    if let Some(uid) = &meta.uid {
        details["uid"] = json!(uid);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

/// Whether an update leaves `obj` to be deleted: marked, its grace period over (0) and no
/// finalizers left (`ShouldDeleteDuringUpdate`).
/// A namespace also needs its `spec.finalizers` gone.
pub(crate) fn should_delete_after_update(obj: &Object) -> bool {
    let meta = obj.meta();
    let namespace_finalizers = obj.api_version() == "v1"
        && obj.kind() == "Namespace"
        && obj.to_value()["spec"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
    meta.deletion_timestamp.is_some()
        && meta.finalizers.as_ref().is_none_or(Vec::is_empty)
        && meta.deletion_grace_period_seconds.unwrap_or(0) == 0
        && !namespace_finalizers
}
