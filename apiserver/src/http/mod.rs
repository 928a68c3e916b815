//! The HTTP API: routing, reads (get, list, watch), discovery, and the entry of writes. It
//! parses requests and encodes answers; it decides nothing about objects.
//!
//! - route.rs: what a path addresses;
//! - context.rs: [`RequestCtx`], what a handler knows of its request;
//! - response.rs: JSON, `Status` and streamed responses;
//! - options.rs: the query options of reads and their validation;
//! - get.rs, list.rs, watch.rs: the reads;
//! - discovery.rs: version, groups, resource lists and OpenAPI documents;
//! - body.rs and write.rs: the writes' bodies and handlers, which call the write path
//!   (module `registry`), where every decision about an object is made.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, Method, header};

use crate::encode::Format;
use crate::error::ApiError;
use crate::printers::IncludeObject;
use crate::query::Query;
use crate::registry::Subresource;
use crate::resource::ResourceDef;
use crate::shared::Shared;

mod body;
mod context;
mod discovery;
mod get;
mod list;
mod options;
mod response;
mod route;
mod watch;
mod write;

pub(crate) use context::RequestCtx;
pub(crate) use response::error_response;
use response::json_response;

use route::{Route, route};

pub(crate) fn router(shared: Arc<Shared>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(shared)
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let delay = *shared.faults.delay.lock();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let health = health_request(&req);
    // Anonymous requests may read the health endpoints and the version, as
    // system:public-info-viewer allows.
    let public = health.is_some() || matches!(req.uri().path(), "/version" | "/version/");
    let anonymous_public = public && !req.headers().contains_key(header::AUTHORIZATION);
    if shared.config.token.is_some()
        && !anonymous_public
        && crate::authn::user_of(&shared, req.headers())
            .await
            .is_none()
    {
        return error_response(&ApiError::new(401, "Unauthorized", "Unauthorized"));
    }
    if let Some((endpoint, check)) = health {
        let query = Query::parse(req.uri().query());
        return crate::health::serve(&shared, endpoint, check.as_deref(), &query)
            .await
            .unwrap_or_else(crate::health::not_found_page);
    }
    if let Some(err) = shared.faults.take_failure() {
        return error_response(&err);
    }
    match handle_inner(&shared, req).await {
        Ok(resp) => resp,
        Err(err) => error_response(&err),
    }
}

/// The health endpoint and check (`None`: all of them) a GET addresses.
fn health_request(req: &Request) -> Option<(crate::health::Endpoint, Option<String>)> {
    if !matches!(*req.method(), Method::GET | Method::HEAD) {
        return None;
    }
    let path = req.uri().path().trim_start_matches('/');
    let (first, check) = match path.split_once('/') {
        Some((first, check)) => (first, Some(check.to_owned())),
        None => (path, None),
    };
    crate::health::Endpoint::parse(first).map(|e| (e, check))
}

async fn handle_inner(shared: &Arc<Shared>, req: Request) -> Result<Response, ApiError> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_owned();
    let query = Query::parse(parts.uri.query());
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let include = IncludeObject::parse(query.get("includeObject")).ok_or_else(|| {
        ApiError::invalid(
            "meta.k8s.io",
            "TableOptions",
            "",
            &[(
                "includeObject".to_owned(),
                "Unsupported value: must be 'Metadata', 'Object', 'None', or empty".to_owned(),
            )],
        )
    })?;
    let format = Format::from_accept(
        parts
            .headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
        include,
    );
    let route = route(shared, &segs);
    if matches!(route, Route::Unhandled) {
        return Ok(crate::health::not_found_page());
    }
    let Route::Resource(rp) = route else {
        if parts.method != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
        return discovery::discovery(shared, route, &parts.headers);
    };
    if let Some(review) = crate::reviews::find(rp.group, rp.version, rp.plural) {
        if parts.method != Method::POST || rp.name.is_some() {
            return Err(ApiError::method_not_allowed());
        }
        if rp.namespace.is_some() != review.namespaced {
            return Err(ApiError::no_route());
        }
        let body = read_body(&parts.headers, body, shared.config.max_body_bytes).await?;
        let object = body::decode(&parts.headers, &body)?;
        let user = crate::authn::user_of(shared, &parts.headers)
            .await
            .unwrap_or_else(crate::access::User::admin);
        let answer = crate::reviews::answer(shared, review, rp.namespace, &user, object).await?;
        return Ok(json_response(201, Bytes::from(answer.to_string())));
    }
    let Some(def) = shared.find(rp.group, rp.version, rp.plural) else {
        if !route::group_served(shared, rp.group) {
            return Ok(crate::health::not_found_page());
        }
        return Err(ApiError::no_route());
    };
    if rp.namespace.is_some() && !def.namespaced {
        return Err(ApiError::no_route());
    }
    let body = if matches!(
        parts.method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        read_body(&parts.headers, body, shared.config.max_body_bytes).await?
    } else {
        Bytes::new()
    };
    let ctx = RequestCtx {
        shared,
        def: &def,
        path: &rp,
        query: &query,
        format,
        headers: &parts.headers,
        body,
    };
    if let Format::Metadata { list, .. } = format {
        let answers_list = rp.name.is_none()
            && rp.sub.is_none()
            && (parts.method == Method::DELETE
                || (parts.method == Method::GET && !query.flag("watch")));
        // handlers/response.go's transformObject (its messages end with the Go type of the
        // object, which has no equal here).
        if list != answers_list {
            return Err(ApiError::not_acceptable(if list {
                "you requested PartialObjectMetadataList, but the requested object is not a list"
            } else {
                "you requested PartialObjectMetadata, but the requested object is a list"
            }));
        }
    }
    let result = dispatch(&ctx, &parts.method, &query).await;
    let Some(warning) = &def.deprecation_warning else {
        return result;
    };
    // A deprecated version's requests all carry its warning, failed ones too.
    let mut resp = result.unwrap_or_else(|err| error_response(&err));
    response::prepend_warning(&mut resp, warning);
    Ok(resp)
}

/// Runs the handler of a request to a resource.
async fn dispatch(
    ctx: &RequestCtx<'_>,
    method: &Method,
    query: &Query,
) -> Result<Response, ApiError> {
    let (rp, def) = (ctx.path, ctx.def);
    let options = match *method {
        Method::POST => Some("CreateOptions"),
        Method::PUT => Some("UpdateOptions"),
        Method::PATCH => Some("PatchOptions"),
        Method::DELETE => Some("DeleteOptions"),
        _ => None,
    };
    if let Some(options) = options {
        let dry_run: Vec<&str> = query.all("dryRun").collect();
        crate::validation::dry_run(options, &dry_run)?;
    }
    match (method, rp.name, rp.sub) {
        (&Method::GET, None, None) => {
            if query.flag("watch") {
                watch::watch(ctx, None).await
            } else {
                list::list(ctx).await
            }
        }
        (&Method::GET, Some(name), None) if query.flag("watch") => {
            watch::watch(ctx, Some(name)).await
        }
        (method, Some(name), Some(sub @ ("binding" | "eviction" | "ephemeralcontainers")))
            if def.api.group.is_empty() && def.api.kind == "Pod" =>
        {
            pod_subresource(ctx, method, name, sub).await
        }
        (&Method::GET, Some(name), None | Some("status")) => get::get(ctx, name).await,
        (method, Some(name), Some("approval")) if has_approval(def) => match *method {
            Method::GET => get::get(ctx, name).await,
            Method::PUT => write::update(ctx, name, Subresource::Approval).await,
            Method::PATCH => write::patch(ctx, name, Subresource::Approval).await,
            _ => Err(ApiError::method_not_allowed()),
        },
        (&Method::POST, Some(name), Some("token"))
            if def.api.group.is_empty() && def.api.kind == "ServiceAccount" =>
        {
            write::create_token(ctx, name).await
        }
        (method, Some(name), Some("scale")) if def.scale_subresource => match *method {
            Method::GET => write::get_scale(ctx, name).await,
            Method::PUT => write::write_scale(ctx, name, false).await,
            Method::PATCH => write::write_scale(ctx, name, true).await,
            _ => Err(ApiError::method_not_allowed()),
        },
        (&Method::POST, None, None) if def.namespaced == rp.namespace.is_some() => {
            write::create(ctx).await
        }
        (&Method::PUT, Some(name), sub @ (None | Some("status"))) => {
            write::update(ctx, name, status_or_main(sub)).await
        }
        (&Method::PATCH, Some(name), sub @ (None | Some("status"))) => {
            write::patch(ctx, name, status_or_main(sub)).await
        }
        (&Method::DELETE, Some(name), None) => write::delete(ctx, name).await,
        (&Method::DELETE, None, None) => write::delete_collection(ctx).await,
        (_, _, Some(_)) => Err(ApiError::no_route()),
        _ => Err(ApiError::method_not_allowed()),
    }
}

fn status_or_main(sub: Option<&str>) -> Subresource {
    match sub {
        Some(_) => Subresource::Status,
        None => Subresource::Main,
    }
}

/// The subresources of pods: `binding` and `eviction` (POST), `ephemeralcontainers` (GET,
/// PUT, PATCH: the pod).
async fn pod_subresource(
    ctx: &RequestCtx<'_>,
    method: &Method,
    name: &str,
    sub: &str,
) -> Result<Response, ApiError> {
    match (method, sub) {
        (&Method::POST, "binding") => write::bind(ctx, name).await,
        (&Method::POST, "eviction") => write::evict(ctx, name).await,
        (&Method::GET, "ephemeralcontainers") => get::get(ctx, name).await,
        (&Method::PUT, "ephemeralcontainers") => {
            write::update(ctx, name, Subresource::EphemeralContainers).await
        }
        (&Method::PATCH, "ephemeralcontainers") => {
            write::patch(ctx, name, Subresource::EphemeralContainers).await
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// Whether `def` has an `approval` subresource (CertificateSigningRequests).
pub(crate) fn has_approval(def: &ResourceDef) -> bool {
    def.api.group == "certificates.k8s.io" && def.api.kind == "CertificateSigningRequest"
}

async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        return Err(ApiError::too_large_body(limit));
    }
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| ApiError::too_large_body(limit))
}
