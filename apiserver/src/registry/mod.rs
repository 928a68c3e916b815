//! The write path: every create, update (of an object or its `status`), patch, delete,
//! delete-collection and dry run goes through here, as through Kubernetes' generic registry
//! store (`k8s.io/apiserver/pkg/registry/generic/registry/store.go` with `rest.BeforeCreate`
//! and `rest.BeforeUpdate`). The HTTP layer (module `http`) only parses requests and encodes
//! answers; every decision about an object is made here.
//!
//! - [`Target`]: what a write addresses (server, resource, namespace, dry run);
//! - decode.rs: an object of the resource's kind from JSON (type check, defaulting);
//! - create.rs, update.rs, delete.rs: the verbs, with identity fields, generation,
//!   finalizers and `deletionTimestamp`, preconditions and conflicts;
//! - strategy.rs: the per-kind `Strategy` hooks (`prepare_for_create`,
//!   `prepare_for_update`, `default`, `validate`, `validate_update`, `canonicalize`,
//!   `warnings`, `prepare_for_delete`, `allow_create_on_update`,
//!   `allow_unconditional_update`) and `reset_fields`; builtin.rs: the built-in kinds'
//!   strategies and `strategy_for`, which picks a resource's; custom.rs: the strategies of
//!   CustomResourceDefinitions and of custom objects with a schema;
//! - scale.rs and token.rs: the `scale` and `token` subresources; binding.rs and eviction.rs:
//!   pods' `binding` and `eviction` (`ephemeralcontainers` is an update through
//!   `Subresource::EphemeralContainers`); service_ip.rs and node_ports.rs: services' cluster
//!   IPs and node ports;
//! - managed.rs: **the server-side apply seam**.
//!
//! # Server-side apply and managed fields
//!
//! Two functions in managed.rs are where field management plugs in; nothing else in the write
//! path knows about apply:
//!
//! - `managed::apply(def, live, applied, &FieldManager) -> Result<Value, ApiError>` computes
//!   the object an `application/apply-patch+yaml` patch produces from the live object (`None`
//!   when the object does not exist yet: apply then creates it), the applied configuration,
//!   the field manager and `force`. Today it is a JSON merge patch of the applied
//!   configuration over the live object.
//! - `managed::track_update(def, live, new, &FieldManager)` runs for every other write
//!   (create, update, non-apply patch) before the object is stored, to update
//!   `metadata.managedFields` with an `Update` operation of the manager. Today it does nothing.
//!
//! The fields a manager must not own (the status on the main resource, the spec on `/status`)
//! are `strategy::reset_fields(def, subresource)`.

use std::sync::Arc;

use kube_core::Resource;
use serde_json::Value;

use crate::cacher::storage_status;
use crate::error::ApiError;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::shared::Shared;
use crate::storage::StorageError;

mod binding;
mod builtin;
mod cluster;
mod create;
mod custom;
mod decode;
mod delete;
mod eviction;
mod managed;
mod node_ports;
mod scale;
mod service;
mod service_ip;
mod strategy;
mod token;
mod update;

pub(crate) use binding::bind;
pub(crate) use create::{create, create_object};
pub(crate) use delete::{DeleteRequest, delete, delete_collection};
pub(crate) use eviction::evict;
pub(crate) use managed::FieldManager;
pub(crate) use scale::{ScaleWrite, get_scale, write_scale};
pub(crate) use strategy::Subresource;
pub(crate) use token::create_token;
pub(crate) use update::{guaranteed_update, patch, update};

/// What a write stored (or with a dry run, would have stored), with the strategy's warnings.
#[derive(Debug)]
pub(crate) struct Written {
    /// The object as stored.
    pub(crate) object: Arc<Object>,
    /// Warnings for the client (`Warning` headers).
    pub(crate) warnings: Vec<String>,
    /// Whether the write created the object (201 Created).
    pub(crate) created: bool,
}

impl Written {
    /// The answer of a write that stored `object`; `old_finalizers` are those of the object it
    /// replaced (none for a create).
    fn new(
        def: &ResourceDef,
        object: Arc<Object>,
        created: bool,
        old_finalizers: &[String],
    ) -> Self {
        let mut warnings = builtin::strategy_for(def).warnings(&object);
        warnings.extend(crate::validation::finalizer_warnings(
            def,
            object.meta(),
            old_finalizers,
        ));
        Self {
            object,
            warnings,
            created,
        }
    }

    /// The write's answer with the decoder's `warnings` before the strategy's (the order in
    /// which the API server records them).
    fn with_decode_warnings(mut self, mut warnings: Vec<String>) -> Self {
        warnings.append(&mut self.warnings);
        self.warnings = warnings;
        self
    }
}

/// The object of a create or update request, with the duplicate fields its JSON had
/// (module `validation`).
pub(crate) struct Body {
    /// The object.
    pub(crate) value: serde_json::Value,
    /// The paths of the fields given twice.
    pub(crate) duplicates: Vec<String>,
}

/// A PATCH request's patch.
pub(crate) struct PatchRequest {
    /// The patch type.
    pub(crate) kind: crate::patch::PatchKind,
    /// The patch (an apply patch: the applied configuration).
    pub(crate) patch: serde_json::Value,
    /// The paths of the fields the patch's JSON gave twice (module `validation`).
    pub(crate) duplicates: Vec<String>,
}

/// What a write addresses.
pub(crate) struct Target<'a> {
    /// The server's storage and resources.
    pub(crate) shared: &'a Shared,
    /// The resource written.
    pub(crate) def: &'a Arc<ResourceDef>,
    /// The namespace of the request path (None: cluster-scoped or all namespaces).
    pub(crate) namespace: Option<&'a str>,
    /// `dryRun=All`: everything is decided and answered, nothing is stored.
    pub(crate) dry_run: bool,
}

impl Target<'_> {
    /// The storage key of `name` in the target's namespace.
    fn key(&self, name: &str) -> String {
        self.def.storage_key(self.namespace, name)
    }

    /// A storage error as the API server's status for `name`.
    fn status(&self, name: &str, err: StorageError) -> ApiError {
        storage_status(self.def, name, err)
    }

    /// The stored object `name` of the target, if any.
    async fn get(&self, name: &str) -> Result<Option<Arc<Object>>, ApiError> {
        self.shared
            .storage
            .get(self.key(name))
            .await
            .map_err(|e| self.status(name, e))
    }

    fn not_found(&self, name: &str) -> ApiError {
        not_found(self.def, name)
    }
}

fn not_found(def: &ResourceDef, name: &str) -> ApiError {
    ApiError::not_found(&def.api.group, &def.api.plural, name)
}

/// 409 Conflict for a write based on a stale resource version or uid.
fn conflict_stale(def: &ResourceDef, name: &str) -> ApiError {
    ApiError::conflict(
        &def.api.group,
        &def.api.plural,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// The string at `object.field` of `value` (`""` when absent).
fn field_text<'a>(value: &'a Value, object: &str, field: &str) -> &'a str {
    value
        .get(object)
        .and_then(|o| o.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// A subresource POST's body must name the object of the URL (`BindingREST` and
/// `EvictionREST`: 400 `name in URL does not match name in <kind> object`).
fn check_body_name(body: &Value, name: &str, kind: &str) -> Result<(), ApiError> {
    if field_text(body, "metadata", "name") == name {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "name in URL does not match name in {kind} object"
    )))
}

/// The `Status` Success a subresource POST answers (its code the create's 201).
fn created_status() -> Value {
    serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201
    })
}

fn now() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now())
}
