//! [`RequestCtx`]: everything a handler needs about one request, and what handlers ask of the
//! server for it (its watch cache, the storage's revision).

use std::sync::Arc;

use axum::response::Response;
use bytes::Bytes;
use http::HeaderMap;

use super::response::json_response;
use super::route::ResourcePath;
use crate::cache::WatchCache;
use crate::cacher::storage_status;
use crate::encode::{Format, ListMeta, TableForm, table};
use crate::error::ApiError;
use crate::object::Object;
use crate::query::Query;
use crate::resource::ResourceDef;
use crate::shared::Shared;

/// Everything a handler needs about one request.
pub(crate) struct RequestCtx<'a> {
    pub(crate) shared: &'a Arc<Shared>,
    pub(crate) def: &'a Arc<ResourceDef>,
    pub(crate) path: &'a ResourcePath<'a>,
    pub(crate) query: &'a Query,
    pub(crate) format: Format,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) body: Bytes,
}

impl RequestCtx<'_> {
    /// Whether the request is a dry run (`dryRun=All`): validated and answered, not stored.
    pub(crate) fn dry_run(&self) -> bool {
        self.query.get("dryRun") == Some("All")
    }

    /// The storage key of `name` in the request's namespace.
    pub(crate) fn key(&self, name: &str) -> String {
        self.def.storage_key(self.path.namespace, name)
    }

    /// Encodes one object in the asked format and the request's version.
    pub(crate) fn object_response(&self, code: u16, obj: &Arc<Object>) -> Response {
        match self.format {
            Format::Json => {
                json_response(code, crate::convert::served(self.def, obj).raw().clone())
            }
            Format::Table(version, include) => {
                let meta = ListMeta {
                    resource_version: obj.resource_version_u64(),
                    ..ListMeta::default()
                };
                let form = TableForm {
                    version,
                    include,
                    columns: true,
                };
                json_response(
                    code,
                    table(self.def, &meta, std::slice::from_ref(obj), form),
                )
            }
            Format::Metadata { version, .. } => {
                json_response(code, obj.partial_metadata(version).to_string().into())
            }
        }
    }
}

pub(super) fn cache_of(ctx: &RequestCtx<'_>) -> Result<Arc<WatchCache>, ApiError> {
    ctx.shared
        .cache(ctx.def)
        .ok_or_else(|| ApiError::internal("no watch cache for the resource"))
}

pub(super) async fn current_revision(ctx: &RequestCtx<'_>) -> Result<u64, ApiError> {
    ctx.shared
        .storage
        .revision()
        .await
        .map_err(|e| storage_status(ctx.def, "", e))
}
