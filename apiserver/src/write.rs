//! Writes: create, update (also of the status subresource), patch, delete.

use std::sync::Arc;

use axum::response::Response;
use http::header;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube_core::Resource;
use rand::Rng;
use serde_json::Value;

use crate::cacher::storage_status;
use crate::encode::{ListMeta, list_body};
use crate::error::ApiError;
use crate::filter::Filter;
use crate::http::RequestCtx;
use crate::object::Object;
use crate::patch::{PatchKind, apply_patch};
use crate::resource::ResourceDef;
use crate::resource_version;
use crate::server::Shared;
use crate::storage::{ListRequest, Preconditions, StorageError, UpdateFn};
use crate::validation;

fn invalid(def: &ResourceDef, name: &str, field: &str, message: String) -> ApiError {
    validation::invalid(def, name, &[(field.to_owned(), message)])
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// A request body as JSON (see [`decode_body`]).
pub(crate) fn body_value(ctx: &RequestCtx<'_>) -> Result<Value, ApiError> {
    decode_body(ctx.headers, &ctx.body)
}

/// A request body as JSON: JSON, YAML or Kubernetes' protobuf encoding by Content-Type (absent:
/// JSON); other media types are 415 as the API server answers.
pub(crate) fn decode_body(headers: &http::HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media_type = content_type.split(';').next().unwrap_or("").trim();
    match media_type {
        crate::protobuf::MEDIA_TYPE => crate::protobuf::decode(body),
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            let text = std::str::from_utf8(body)
                .map_err(|_| ApiError::bad_request("the body is not UTF-8"))?;
            serde_saphyr::from_str(text)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
        }
        "" | "*/*" | "application/json" => serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        }),
        _ => Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, {}",
                crate::protobuf::MEDIA_TYPE
            ),
        )),
    }
}

/// Parses a request body into an object of `def`'s kind.
fn parse_object(ctx: &RequestCtx<'_>) -> Result<Object, ApiError> {
    object_of(ctx.def, body_value(ctx)?)
}

/// Builds an object of `def`'s kind from JSON, which must decode into the kind's type.
fn object_of(def: &ResourceDef, value: Value) -> Result<Object, ApiError> {
    validation::decode_builtin(def, &value)?;
    let mut obj = Object::from_value(value).map_err(|e| ApiError::bad_request(e.to_string()))?;
    check_type(def, &mut obj)?;
    Ok(obj)
}

fn check_type(def: &ResourceDef, obj: &mut Object) -> Result<(), ApiError> {
    if !obj.kind().is_empty() && obj.kind() != def.api.kind {
        return Err(ApiError::bad_request(format!(
            "the kind of the object ({}) does not match the kind of the resource ({})",
            obj.kind(),
            def.api.kind
        )));
    }
    if !obj.api_version().is_empty() && obj.api_version() != def.api.api_version {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({})",
            obj.api_version(),
            def.api.api_version
        )));
    }
    obj.set_type(&def.api.api_version, &def.api.kind);
    obj.select_fields(&def.fields);
    Ok(())
}

/// Fills in the server-set fields of a new object and validates its name and namespace.
fn prepare_create(
    def: &ResourceDef,
    namespace: Option<&str>,
    mut obj: Object,
    keep_identity: bool,
) -> Result<Object, ApiError> {
    let meta = obj.meta_mut();
    if def.namespaced {
        match (namespace, meta.namespace.as_deref()) {
            (Some(path_ns), Some(obj_ns)) if !obj_ns.is_empty() && obj_ns != path_ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            (Some(path_ns), _) => meta.namespace = Some(path_ns.to_owned()),
            (None, Some(ns)) if !ns.is_empty() => {}
            (None, _) => meta.namespace = Some("default".into()),
        }
    } else {
        meta.namespace = None;
    }
    if meta.name.as_deref().unwrap_or("").is_empty() {
        match meta.generate_name.as_deref().filter(|g| !g.is_empty()) {
            Some(prefix) => meta.name = Some(format!("{prefix}{}", random_suffix())),
            None => {
                return Err(invalid(
                    def,
                    "",
                    "metadata.name",
                    "Required value: name or generateName is required".into(),
                ));
            }
        }
    }
    let name = meta.name.clone().unwrap_or_default();
    let mut causes = validation::name_causes(def, &name);
    if let Some(ns) = meta.namespace.as_deref() {
        causes.extend(validation::namespace_causes(ns));
    }
    causes.extend(validation::meta_causes(meta));
    validation::check(def, &name, &causes)?;
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
    if def.api.kind == "Namespace" {
        let mut data = obj.data();
        if !data.contains_key("status") {
            data.insert("status".into(), serde_json::json!({"phase": "Active"}));
            obj.set_data(data);
        }
    }
    let meta = obj.meta_mut();
    meta.deletion_timestamp = None;
    meta.deletion_grace_period_seconds = None;
    Ok(obj)
}

/// Creates `obj` of `def` directly (seeding keeps given uids and timestamps).
pub(crate) async fn create_object(
    shared: &Shared,
    def: &ResourceDef,
    obj: Object,
) -> Result<Arc<Object>, ApiError> {
    let mut obj = obj;
    check_type(def, &mut obj)?;
    let obj = prepare_create(def, None, obj, true)?;
    store_new(shared, def, obj).await
}

async fn store_new(
    shared: &Shared,
    def: &ResourceDef,
    obj: Object,
) -> Result<Arc<Object>, ApiError> {
    let name = obj.meta().name.clone().unwrap_or_default();
    let key = def.storage_key(obj.meta().namespace.as_deref(), &name);
    shared
        .storage
        .create(key, obj)
        .await
        .map_err(|e| storage_status(def, &name, e))
}

/// POST to a collection (with `dryRun=All`: everything but storing).
pub(crate) async fn create(ctx: &RequestCtx<'_>) -> Result<Response, ApiError> {
    let obj = parse_object(ctx)?;
    let obj = prepare_create(ctx.def, ctx.path.namespace, obj, false)?;
    if ctx.dry_run() {
        let name = obj.meta().name.clone().unwrap_or_default();
        let key = ctx.def.storage_key(obj.meta().namespace.as_deref(), &name);
        let existing = ctx
            .shared
            .storage
            .get(key)
            .await
            .map_err(|e| storage_status(ctx.def, &name, e))?;
        if existing.is_some() {
            return Err(ApiError::already_exists(
                &ctx.def.api.group,
                &ctx.def.api.plural,
                &name,
            ));
        }
        return Ok(ctx.object_response(201, &Arc::new(obj)));
    }
    let created = store_new(ctx.shared, ctx.def, obj).await?;
    Ok(ctx.object_response(201, &created))
}

/// The state after writing `new` over `cur`: identity fields from `cur`; status kept from `cur`
/// (main resource) or taken alone from `new` (status subresource); generation bumped when
/// anything but metadata and status changed.
fn merge_update(def: &ResourceDef, cur: &Object, mut new: Object, status_only: bool) -> Object {
    let mut cur_data = cur.data();
    let mut new_data = new.data();
    if status_only {
        let mut out = cur.clone();
        match new_data.remove("status") {
            Some(status) => cur_data.insert("status".into(), status),
            None => cur_data.remove("status"),
        };
        out.set_data(cur_data);
        return out;
    }
    let cur_status = cur_data.remove("status");
    let new_status = new_data.remove("status");
    let changed = cur_data != new_data;
    let status = if def.status_subresource {
        cur_status
    } else {
        new_status
    };
    if let Some(status) = status {
        new_data.insert("status".into(), status);
    }
    new.set_data(new_data);
    let cm = cur.meta();
    let generation = def
        .generation
        .then(|| cm.generation.unwrap_or(1) + i64::from(changed));
    let meta = new.meta_mut();
    meta.name.clone_from(&cm.name);
    meta.namespace.clone_from(&cm.namespace);
    meta.uid.clone_from(&cm.uid);
    meta.creation_timestamp.clone_from(&cm.creation_timestamp);
    meta.deletion_timestamp.clone_from(&cm.deletion_timestamp);
    meta.generation = generation;
    new
}

fn conflict_stale(def: &ResourceDef, name: &str) -> ApiError {
    ApiError::conflict(
        &def.api.group,
        &def.api.plural,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// Finishes a write: an object marked for deletion with no finalizers left is deleted.
async fn finish_write(
    ctx: &RequestCtx<'_>,
    name: &str,
    obj: Arc<Object>,
) -> Result<Response, ApiError> {
    let meta = obj.meta();
    if meta.deletion_timestamp.is_some() && meta.finalizers.as_ref().is_none_or(Vec::is_empty) {
        let pre = Preconditions {
            resource_version: Some(obj.resource_version_u64()),
            uid: None,
        };
        let deleted = ctx
            .shared
            .storage
            .delete(ctx.key(name), pre)
            .await
            .map_err(|e| storage_status(ctx.def, name, e))?;
        return Ok(ctx.object_response(200, &deleted));
    }
    Ok(ctx.object_response(200, &obj))
}

async fn update_with(ctx: &RequestCtx<'_>, name: &str, f: UpdateFn) -> Result<Response, ApiError> {
    let obj = guaranteed_update(ctx, name, f).await?;
    if ctx.dry_run() {
        return Ok(ctx.object_response(200, &obj));
    }
    finish_write(ctx, name, obj).await
}

/// Runs `f` on the current object and stores the result, or with `dryRun=All` only answers
/// what would be stored.
pub(crate) async fn guaranteed_update(
    ctx: &RequestCtx<'_>,
    name: &str,
    mut f: UpdateFn,
) -> Result<Arc<Object>, ApiError> {
    let storage = &ctx.shared.storage;
    if ctx.dry_run() {
        let cur = storage
            .get(ctx.key(name))
            .await
            .map_err(|e| storage_status(ctx.def, name, e))?;
        return f(cur.as_ref()).map(Arc::new);
    }
    storage
        .guaranteed_update(ctx.key(name), f)
        .await
        .map_err(|e| storage_status(ctx.def, name, e))
}

/// PUT to an object or its status.
pub(crate) async fn update(
    ctx: &RequestCtx<'_>,
    name: &str,
    status_only: bool,
) -> Result<Response, ApiError> {
    let new = parse_object(ctx)?;
    if new.meta().name.as_deref().is_some_and(|n| n != name) {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            new.meta().name.as_deref().unwrap_or("")
        )));
    }
    if let (Some(path_ns), Some(obj_ns)) = (ctx.path.namespace, new.meta().namespace.as_deref())
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
            invalid(
                ctx.def,
                name,
                "metadata.resourceVersion",
                format!("Invalid value: \"{rv}\": must be a valid resource version"),
            )
        })?),
        None => None,
    };
    let def = Arc::clone(ctx.def);
    let owned_name = name.to_owned();
    let f: UpdateFn = Box::new(move |cur| {
        let cur =
            cur.ok_or_else(|| ApiError::not_found(&def.api.group, &def.api.plural, &owned_name))?;
        if expected_rv.is_some_and(|rv| rv != cur.resource_version_u64()) {
            return Err(conflict_stale(&def, &owned_name));
        }
        validation::check(&def, &owned_name, &validation::meta_causes(new.meta()))?;
        Ok(merge_update(&def, cur, new.clone(), status_only))
    });
    update_with(ctx, name, f).await
}

/// The patch type (from Content-Type) and the patch of a PATCH request.
pub(crate) fn read_patch(ctx: &RequestCtx<'_>) -> Result<(PatchKind, Value), ApiError> {
    let content_type = ctx
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let kind = PatchKind::from_content_type(content_type).ok_or_else(|| {
        ApiError::new(415, "UnsupportedMediaType", format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {content_type:?})"))
    })?;
    let patch_value: Value = if kind == PatchKind::Apply {
        let text = std::str::from_utf8(&ctx.body)
            .map_err(|_| ApiError::bad_request("the body is not UTF-8"))?;
        serde_saphyr::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?
    } else {
        serde_json::from_slice(&ctx.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?
    };
    Ok((kind, patch_value))
}

/// PATCH of an object or its status.
pub(crate) async fn patch(
    ctx: &RequestCtx<'_>,
    name: &str,
    status_only: bool,
) -> Result<Response, ApiError> {
    let (kind, patch_value) = read_patch(ctx)?;
    let def = Arc::clone(ctx.def);
    let owned_name = name.to_owned();
    let namespace = ctx.path.namespace.map(str::to_owned);
    let f: UpdateFn = Box::new(move |cur| {
        let Some(cur) = cur else {
            if kind != PatchKind::Apply {
                return Err(ApiError::not_found(
                    &def.api.group,
                    &def.api.plural,
                    &owned_name,
                ));
            }
            let mut obj = object_of(&def, patch_value.clone())?;
            obj.meta_mut().name = Some(owned_name.clone());
            return prepare_create(&def, namespace.as_deref(), obj, false);
        };
        let mut value = cur.to_value();
        apply_patch(kind, &mut value, &patch_value)?;
        let new = object_of(&def, value)?;
        // As the API server's patch handler (checkName): the patched object must keep the
        // name and namespace of the request.
        let new_name = new.meta().name.as_deref().unwrap_or("");
        if new_name != owned_name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({new_name}) does not match the name on the URL ({owned_name})"
            )));
        }
        if let (Some(ns), Some(obj_ns)) = (namespace.as_deref(), new.meta().namespace.as_deref())
            && !obj_ns.is_empty()
            && obj_ns != ns
        {
            return Err(ApiError::bad_request(format!(
                "the namespace of the object ({obj_ns}) does not match the namespace on the request ({ns})"
            )));
        }
        validation::check(&def, &owned_name, &validation::meta_causes(new.meta()))?;
        if new.meta().resource_version != cur.meta().resource_version {
            let rv = new
                .meta()
                .resource_version
                .as_deref()
                .and_then(|rv| resource_version::parse(rv).ok());
            if rv != Some(cur.resource_version_u64()) {
                return Err(conflict_stale(&def, &owned_name));
            }
        }
        Ok(merge_update(&def, cur, new, status_only))
    });
    update_with(ctx, name, f).await
}

/// The preconditions of a DELETE's `DeleteOptions` body (validated).
fn preconditions(ctx: &RequestCtx<'_>) -> Result<Preconditions, ApiError> {
    if ctx.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Preconditions::default());
    }
    let v = body_value(ctx)?;
    validation::delete_options(v.get("propagationPolicy").and_then(Value::as_str))?;
    let pre = &v["preconditions"];
    let resource_version = match pre.get("resourceVersion").and_then(Value::as_str) {
        Some(rv) => Some(resource_version::parse(rv).map_err(|_| {
            ApiError::bad_request(format!("invalid precondition resourceVersion {rv:?}"))
        })?),
        None => None,
    };
    Ok(Preconditions {
        resource_version,
        uid: pre.get("uid").and_then(Value::as_str).map(str::to_owned),
    })
}

/// DELETE of an object: objects with finalizers get a deletionTimestamp instead.
pub(crate) async fn delete(ctx: &RequestCtx<'_>, name: &str) -> Result<Response, ApiError> {
    validation::delete_options(ctx.query.get("propagationPolicy"))?;
    let pre = preconditions(ctx)?;
    let key = ctx.key(name);
    let current = ctx
        .shared
        .storage
        .get(key.clone())
        .await
        .map_err(|e| storage_status(ctx.def, name, e))?;
    let Some(current) = current else {
        return Err(ApiError::not_found(
            &ctx.def.api.group,
            &ctx.def.api.plural,
            name,
        ));
    };
    if ctx.dry_run() {
        return Ok(ctx.object_response(200, &current));
    }
    if current
        .meta()
        .finalizers
        .as_ref()
        .is_some_and(|f| !f.is_empty())
    {
        if current.meta().deletion_timestamp.is_some() {
            return Ok(ctx.object_response(200, &current));
        }
        let def = Arc::clone(ctx.def);
        let owned_name = name.to_owned();
        let f: UpdateFn = Box::new(move |cur| {
            let cur = cur
                .ok_or_else(|| ApiError::not_found(&def.api.group, &def.api.plural, &owned_name))?;
            let stale = pre
                .resource_version
                .is_some_and(|rv| rv != cur.resource_version_u64())
                || pre
                    .uid
                    .as_deref()
                    .is_some_and(|uid| Some(uid) != cur.meta().uid.as_deref());
            if stale {
                return Err(conflict_stale(&def, &owned_name));
            }
            let mut next = (**cur).clone();
            next.meta_mut().deletion_timestamp = Some(now());
            next.meta_mut().deletion_grace_period_seconds = Some(0);
            Ok(next)
        });
        let obj = ctx
            .shared
            .storage
            .guaranteed_update(key, f)
            .await
            .map_err(|e| storage_status(ctx.def, name, e))?;
        return Ok(ctx.object_response(200, &obj));
    }
    let deleted = ctx
        .shared
        .storage
        .delete(key, pre)
        .await
        .map_err(|e| storage_status(ctx.def, name, e))?;
    if ctx.def.api.kind == "Namespace" && ctx.def.api.group.is_empty() {
        delete_namespace_content(ctx.shared, name).await?;
    }
    Ok(ctx.object_response(200, &deleted))
}

/// Deletes every namespaced object in `namespace` (after the namespace itself: the server has
/// no Terminating phase, and finalizers of the content are not waited for).
async fn delete_namespace_content(shared: &Shared, namespace: &str) -> Result<(), ApiError> {
    for def in shared.resources.iter().filter(|d| d.namespaced) {
        let prefix = format!("{}{namespace}/", def.key_prefix());
        let page = shared
            .storage
            .list(ListRequest {
                prefix,
                ..ListRequest::default()
            })
            .await
            .map_err(|e| storage_status(def, "", e))?;
        for obj in page.items {
            let name = obj.meta().name.clone().unwrap_or_default();
            match shared
                .storage
                .delete(
                    def.storage_key(Some(namespace), &name),
                    Preconditions::default(),
                )
                .await
            {
                Ok(_) | Err(StorageError::NotFound(_)) => {}
                Err(e) => return Err(storage_status(def, &name, e)),
            }
        }
    }
    Ok(())
}

/// DELETE of a collection: deletes every object passing the selectors; answers the list of
/// deleted objects.
pub(crate) async fn delete_collection(ctx: &RequestCtx<'_>) -> Result<Response, ApiError> {
    let filter = Filter::from_query(ctx.def, ctx.path.namespace, ctx.query)?;
    let prefix = match ctx.path.namespace {
        Some(ns) => format!("{}{ns}/", ctx.def.key_prefix()),
        None => ctx.def.key_prefix(),
    };
    let page = ctx
        .shared
        .storage
        .list(ListRequest {
            prefix,
            ..ListRequest::default()
        })
        .await
        .map_err(|e| storage_status(ctx.def, "", e))?;
    let mut deleted = Vec::new();
    let mut last_rv = page.revision;
    for obj in page.items.into_iter().filter(|o| filter.matches(o)) {
        if ctx.dry_run() {
            deleted.push(obj);
            continue;
        }
        let name = obj.meta().name.clone().unwrap_or_default();
        let key = ctx.def.storage_key(obj.meta().namespace.as_deref(), &name);
        match ctx
            .shared
            .storage
            .delete(key, Preconditions::default())
            .await
        {
            Ok(gone) => {
                last_rv = gone.resource_version_u64();
                deleted.push(gone);
            }
            Err(StorageError::NotFound(_)) => {}
            Err(e) => return Err(storage_status(ctx.def, &name, e)),
        }
    }
    let meta = ListMeta {
        resource_version: last_rv,
        ..ListMeta::default()
    };
    let mut resp = Response::new(axum::body::Body::from_stream(list_body(
        ctx.def, &meta, deleted,
    )));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}
