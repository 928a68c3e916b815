//! Field management: who owns which field of an object (`metadata.managedFields`) and
//! server-side apply, as k8s.io/apimachinery `util/managedfields` over structured-merge-diff.
//!
//! [`apply`] merges an applied configuration into the live object by the kind's schema
//! ([`crate::schema`]), removes what the manager stopped applying unless another manager owns
//! it, and refuses to change fields other managers own unless forced (409 with one cause per
//! field). [`update`] records any other write (create, update, non-apply patch) as an `Update`
//! entry that takes over the fields it changed. Both leave out the fields Kubernetes never
//! tracks (`apiVersion`, `kind`, identity metadata) and the caller's reset fields.

mod conflict;
mod managers;
mod path;
mod request;
mod set;
mod typed;

use std::sync::LazyLock;

use serde_json::Value;

pub(crate) use conflict::Conflicts;
use managers::{Entry, Managers, Operation, empty_object, without_managed_fields};
use path::PathElement;
pub(crate) use request::{FieldManager, Verb, with_managed_fields};
pub(crate) use set::FieldSet;
pub(crate) use typed::MergeError;

use crate::schema::Ty;

/// Fields never recorded in a set (`internal/stripmeta.go`): the type, the metadata node and
/// its identity and system fields.
static STRIPPED: LazyLock<FieldSet> = LazyLock::new(|| {
    let mut set = FieldSet::default();
    set.insert(&[PathElement::Field("apiVersion".into())]);
    set.insert(&[PathElement::Field("kind".into())]);
    set.insert(&[PathElement::Field("metadata".into())]);
    for field in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[
            PathElement::Field("metadata".into()),
            PathElement::Field(field.into()),
        ]);
    }
    set
});

/// The manager a first apply attributes an untracked object's fields to.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// Who writes, through which endpoint, and what the endpoint leaves out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Writer<'a> {
    /// The field manager.
    pub(crate) manager: &'a str,
    /// The group/version of the endpoint (`v1`, `apps/v1`).
    pub(crate) api_version: &'a str,
    /// `""` for the main resource, else `status`, `scale`...
    pub(crate) subresource: &'a str,
    /// The object's schema type.
    pub(crate) ty: Ty<'a>,
    /// Fields the endpoint's strategy resets (left out of every set, with their subtrees).
    pub(crate) reset: &'a FieldSet,
    /// The time of the write (RFC 3339, whole seconds, UTC).
    pub(crate) now: &'a str,
}

impl Writer<'_> {
    fn entry(&self, operation: Operation) -> Entry {
        Entry {
            manager: self.manager.to_owned(),
            operation,
            api_version: self.api_version.to_owned(),
            time: Some(self.now.to_owned()),
            subresource: self.subresource.to_owned(),
            fields: FieldSet::default(),
        }
    }

    /// `set` without untracked fields.
    fn tracked(&self, set: &FieldSet) -> FieldSet {
        set.difference(&STRIPPED).recursive_difference(self.reset)
    }
}

/// Why an apply failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApplyError {
    /// Fields other managers own would change.
    #[error(transparent)]
    Conflicts(#[from] Conflicts),
    /// The applied configuration does not merge.
    #[error(transparent)]
    Merge(#[from] MergeError),
}

/// Applies `config` (the request body) for `writer` to `live` (`None`: apply-create) and
/// returns the new object with its managedFields. `force` takes conflicting fields over.
pub(crate) fn apply(
    live: Option<&Value>,
    config: &Value,
    writer: &Writer<'_>,
    force: bool,
) -> Result<Value, ApplyError> {
    let live_obj = live.map_or_else(empty_object, without_managed_fields);
    // Undecodable managedFields are dropped, as the API server resets them.
    let mut managers = live.and_then(|l| Managers::of(l).ok()).unwrap_or_default();
    if live.is_some() && managers.0.is_empty() {
        let mut before = writer.entry(Operation::Update);
        before.manager = BEFORE_FIRST_APPLY.to_owned();
        before.fields = writer.tracked(&typed::to_set(&live_obj, writer.ty));
        managers.0.push(before);
    }
    typed::undeclared(config, writer.ty)?;
    let merged = typed::merge(&live_obj, config, writer.ty)?;
    let me = writer.entry(Operation::Apply);
    let mine = managers.entry(&me);
    let previous_time = mine.time.take();
    let last = std::mem::replace(
        &mut mine.fields,
        writer.tracked(&typed::to_set(config, writer.ty)),
    );
    mine.api_version.clone_from(&me.api_version);
    let mut owned = FieldSet::default();
    for entry in &managers.0 {
        owned.union(&entry.fields);
    }
    let mut new = merged;
    typed::remove(&mut new, writer.ty, &prune_set(&last, Some(&owned)));
    let cmp = typed::compare(&live_obj, &new, writer.ty);
    let changed = writer.tracked(&cmp.changed());
    let removed = writer.tracked(&cmp.removed);
    let mut conflicts = Conflicts::default();
    for entry in managers.0.iter_mut().filter(|e| !e.is(&me)) {
        let taken = entry.fields.intersection(&changed);
        conflicts.add(entry, &taken);
        entry.fields = entry.fields.difference(&taken).difference(&removed);
    }
    if !force && !conflicts.is_empty() {
        return Err(conflicts.into());
    }
    // The entry's time moves only when a field it can own changed: a change the strategy resets
    // (a pod's status applied to the pod) is dropped after this, and the write with it, so it
    // must not leave a new time behind to be written (`managedfieldsupdater.go` stamps the
    // time only when the object changed, the reset fields stripped from the applied config).
    let mine = managers.entry(&me);
    mine.time = if changed.is_empty() && removed.is_empty() {
        previous_time.or(me.time)
    } else {
        me.time
    };
    managers.write(&mut new);
    if writer.manager == "kubectl" {
        sync_last_applied(&mut new, config);
    }
    Ok(new)
}

/// The annotation client-side `kubectl apply` keeps its last configuration in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// When `kubectl` applies server-side to an object that has a client-side apply annotation,
/// the annotation becomes the applied configuration (without the annotation), so a later
/// client-side apply starts from it (`internal/lastappliedupdater.go`).
fn sync_last_applied(new: &mut Value, config: &Value) {
    let Some(Value::String(annotation)) = new.pointer_mut(&format!(
        "/metadata/annotations/{}",
        LAST_APPLIED.replace('/', "~1")
    )) else {
        return;
    };
    let mut last = config.clone();
    if let Some(Value::Object(annotations)) = last.pointer_mut("/metadata/annotations") {
        annotations.remove(LAST_APPLIED);
        if annotations.is_empty()
            && let Some(Value::Object(meta)) = last.get_mut("metadata")
        {
            meta.remove("annotations");
        }
    }
    *annotation = last.to_string();
}

/// What pruning removes: the members of the manager's last applied set that no manager owns
/// now, unless something below them is still owned.
fn prune_set(last: &FieldSet, owned: Option<&FieldSet>) -> FieldSet {
    let mut out = FieldSet::default();
    let mut path = Vec::new();
    collect_prune(last, owned, &mut path, &mut out);
    out
}

fn collect_prune(
    last: &FieldSet,
    owned: Option<&FieldSet>,
    path: &mut Vec<PathElement>,
    out: &mut FieldSet,
) {
    for (element, child) in last.children() {
        let owned_child = owned.and_then(|o| o.at(std::slice::from_ref(element)));
        path.push(element.clone());
        if child.is_member() && owned_child.is_none_or(FieldSet::is_empty) {
            out.insert(path);
        } else {
            collect_prune(child, owned_child, path, out);
        }
        path.pop();
    }
}

/// Records a non-apply write of `new` over `live` (`None`: a create) by `writer` in `new`'s
/// managedFields: the fields it added or changed move to the writer's Update entry, removed
/// fields leave every entry. managedFields sent by the client replace the live ones when they
/// are a valid non-empty list (not on subresources); an empty list resets them, and an existing
/// object without managedFields stays untracked.
pub(crate) fn update(live: Option<&Value>, new: &mut Value, writer: &Writer<'_>) {
    let sent = new.pointer("/metadata/managedFields").cloned();
    let live_managers = live.and_then(|l| Managers::of(l).ok()).unwrap_or_default();
    let mut managers = match sent {
        Some(Value::Array(entries)) if writer.subresource.is_empty() => {
            let reset = entries.is_empty() || entries.iter().all(|e| e == &empty_object());
            if reset {
                Managers::default().write(new);
                return;
            }
            Managers::of(new).unwrap_or(live_managers)
        }
        _ => live_managers,
    };
    if live.is_some() && managers.0.is_empty() {
        Managers::default().write(new);
        return;
    }
    let live_obj = live.map_or_else(empty_object, without_managed_fields);
    let cmp = typed::compare(&live_obj, &without_managed_fields(new), writer.ty);
    let changed = writer.tracked(&cmp.changed());
    let removed = writer.tracked(&cmp.removed);
    let me = writer.entry(Operation::Update);
    for entry in managers.0.iter_mut().filter(|e| !e.is(&me)) {
        entry.fields = entry.fields.difference(&changed).difference(&removed);
    }
    let mine = managers.entry(&me);
    mine.fields = mine.fields.difference(&removed);
    mine.fields.union(&changed);
    if !changed.is_empty() {
        mine.time = me.time;
    }
    managers.write(new);
}

/// A set of whole subtrees from dotted field paths (`["status"]`, `["metadata", "labels"]`).
pub(crate) fn field_set(paths: &[&[&str]]) -> FieldSet {
    let mut set = FieldSet::default();
    for path in paths {
        let elements: Vec<PathElement> = path
            .iter()
            .map(|f| PathElement::Field((*f).to_owned()))
            .collect();
        set.insert(&elements);
    }
    set
}

#[cfg(test)]
mod tests;
