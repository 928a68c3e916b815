//! The HTTP API: routing, reads (get, list, watch), discovery, and the entry of writes.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::cache::{WatchRequest, WatchStart};
use crate::cacher::storage_status;
use crate::encode::{Format, ListMeta, WatchBody, error_frame, list_body, table};
use crate::error::ApiError;
use crate::filter::{FieldRequirement, Filter};
use crate::object::Object;
use crate::query::Query;
use crate::resource::ResourceDef;
use crate::server::Shared;
use crate::storage::ListRequest;

pub(crate) fn router(shared: Arc<Shared>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(shared)
}

/// A response with a JSON body.
pub(crate) fn json_response(code: u16, body: Bytes) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A `Status` error response (with Retry-After when the details ask for it).
pub(crate) fn error_response(err: &ApiError) -> Response {
    let mut resp = json_response(err.code, err.to_body());
    if let Some(secs) = err.retry_after()
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

fn stream_response(
    stream: impl futures::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static,
) -> Response {
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// What a path addresses.
#[derive(Debug)]
enum Route<'a> {
    Version,
    CoreVersions,
    Groups,
    Group(&'a str),
    Resources(&'a str, &'a str),
    Resource(ResourcePath<'a>),
    OpenApiV2,
    OpenApiV3Index,
    OpenApiV3(String),
    NotFound,
}

/// A path to a resource collection, object or subresource.
#[derive(Debug)]
pub(crate) struct ResourcePath<'a> {
    pub(crate) group: &'a str,
    pub(crate) version: &'a str,
    pub(crate) plural: &'a str,
    pub(crate) namespace: Option<&'a str>,
    pub(crate) name: Option<&'a str>,
    pub(crate) sub: Option<&'a str>,
}

fn route<'a>(shared: &Shared, segs: &[&'a str]) -> Route<'a> {
    match segs {
        ["version"] => Route::Version,
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Index,
        ["openapi", "v3", gv @ ..] => Route::OpenApiV3(gv.join("/")),
        ["api"] => Route::CoreVersions,
        ["api", "v1"] => Route::Resources("", "v1"),
        ["apis"] => Route::Groups,
        ["apis", g] => Route::Group(g),
        ["apis", g, v] => Route::Resources(g, v),
        ["api", "v1", rest @ ..] => resource_route(shared, "", "v1", rest),
        ["apis", g, v, rest @ ..] => resource_route(shared, g, v, rest),
        _ => Route::NotFound,
    }
}

fn resource_route<'a>(
    shared: &Shared,
    group: &'a str,
    version: &'a str,
    rest: &[&'a str],
) -> Route<'a> {
    let path = |plural, namespace, name, sub| {
        Route::Resource(ResourcePath {
            group,
            version,
            plural,
            namespace,
            name,
            sub,
        })
    };
    if let ["namespaces", ns, plural, tail @ ..] = rest {
        let namespaced = shared
            .find(group, version, plural)
            .is_some_and(|d| d.namespaced);
        if namespaced {
            return match tail {
                [] => path(plural, Some(*ns), None, None),
                [name] => path(plural, Some(*ns), Some(*name), None),
                [name, sub] => path(plural, Some(*ns), Some(*name), Some(*sub)),
                _ => Route::NotFound,
            };
        }
    }
    match rest {
        [plural] => path(plural, None, None, None),
        [plural, name] => path(plural, None, Some(*name), None),
        [plural, name, sub] => path(plural, None, Some(*name), Some(*sub)),
        _ => Route::NotFound,
    }
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let delay = *shared.faults.delay.lock();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if let Some(token) = &shared.config.token {
        let expected = format!("Bearer {token}");
        let ok = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            == Some(expected.as_str());
        if !ok {
            return error_response(&ApiError::new(401, "Unauthorized", "Unauthorized"));
        }
    }
    if let Some(err) = shared.faults.take_failure() {
        return error_response(&err);
    }
    match handle_inner(&shared, req).await {
        Ok(resp) => resp,
        Err(err) => error_response(&err),
    }
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
    let format = Format::from_accept(
        parts
            .headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
    );
    let route = route(shared, &segs);
    let Route::Resource(rp) = route else {
        if parts.method != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
        return discovery(shared, route, &parts.headers);
    };
    let def = Arc::clone(
        shared
            .find(rp.group, rp.version, rp.plural)
            .ok_or_else(ApiError::no_route)?,
    );
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
    match (&parts.method, rp.name, rp.sub) {
        (&Method::GET, None, None) => {
            if query.flag("watch") {
                watch(&ctx).await
            } else {
                list(&ctx).await
            }
        }
        (&Method::GET, Some(name), None) if query.flag("watch") => watch_named(&ctx, name).await,
        (&Method::GET, Some(name), None | Some("status")) => get(&ctx, name).await,
        (method, Some(name), Some("scale")) if def.scale_subresource => match *method {
            Method::GET => crate::scale::get(&ctx, name).await,
            Method::PUT => crate::scale::write(&ctx, name, false).await,
            Method::PATCH => crate::scale::write(&ctx, name, true).await,
            _ => Err(ApiError::method_not_allowed()),
        },
        (&Method::POST, None, None) if def.namespaced == rp.namespace.is_some() => {
            crate::write::create(&ctx).await
        }
        (&Method::PUT, Some(name), sub @ (None | Some("status"))) => {
            crate::write::update(&ctx, name, sub.is_some()).await
        }
        (&Method::PATCH, Some(name), sub @ (None | Some("status"))) => {
            crate::write::patch(&ctx, name, sub.is_some()).await
        }
        (&Method::DELETE, Some(name), None) => crate::write::delete(&ctx, name).await,
        (&Method::DELETE, None, None) => crate::write::delete_collection(&ctx).await,
        (_, _, Some(_)) => Err(ApiError::no_route()),
        _ => Err(ApiError::method_not_allowed()),
    }
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

    /// Encodes one object in the asked format.
    pub(crate) fn object_response(&self, code: u16, obj: &Arc<Object>) -> Response {
        match self.format {
            Format::Json => json_response(code, obj.raw().clone()),
            Format::Table => {
                let meta = ListMeta {
                    resource_version: obj.resource_version_u64(),
                    ..ListMeta::default()
                };
                json_response(code, table(self.def, &meta, std::slice::from_ref(obj)))
            }
        }
    }
}

async fn get(ctx: &RequestCtx<'_>, name: &str) -> Result<Response, ApiError> {
    read_rv(ctx.query.non_empty("resourceVersion"))?;
    let obj = ctx
        .shared
        .storage
        .get(ctx.key(name))
        .await
        .map_err(|e| storage_status(ctx.def, name, e))?;
    match obj {
        Some(obj) => Ok(ctx.object_response(200, &obj)),
        None => Err(ApiError::not_found(
            &ctx.def.api.group,
            &ctx.def.api.plural,
            name,
        )),
    }
}

fn list_options_invalid(causes: &[(&str, &str)]) -> ApiError {
    let causes: Vec<(String, String)> = causes
        .iter()
        .map(|(f, m)| ((*f).to_owned(), (*m).to_owned()))
        .collect();
    ApiError::invalid("meta.k8s.io", "ListOptions", "", &causes)
}

/// `resourceVersion` as a number (`None` for "" or absent); `Err` holds the field error's
/// message, worded as Kubernetes' (Go's `strconv.ParseUint`).
fn parse_rv(rv: Option<&str>) -> Result<Option<u64>, String> {
    match rv {
        None | Some("") => Ok(None),
        Some(s) => s.parse().map(Some).map_err(|e: std::num::ParseIntError| {
            let why = match e.kind() {
                std::num::IntErrorKind::PosOverflow => "value out of range",
                _ => "invalid syntax",
            };
            let quoted = serde_json::to_string(s).unwrap_or_default();
            format!("Invalid value: {quoted}: strconv.ParseUint: parsing {quoted}: {why}")
        }),
    }
}

/// `resourceVersion` of a get or a list: unparsable is the storage's invalid error, which the
/// API server's get and list handlers do not convert into a Status (500, no reason).
fn read_rv(rv: Option<&str>) -> Result<Option<u64>, ApiError> {
    parse_rv(rv).map_err(|m| ApiError::unconverted(format!("resourceVersion: {m}")))
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    v: String,
    rv: u64,
    start: String,
}

fn encode_continue(rv: u64, start: &str) -> String {
    let token = ContinueToken {
        v: "meta.k8s.io/v1".into(),
        rv,
        start: start.to_owned(),
    };
    let json = serde_json::to_vec(&token).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

fn decode_continue(token: &str) -> Result<ContinueToken, ApiError> {
    let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    let token: ContinueToken =
        serde_json::from_slice(&bytes).map_err(|_| bad("the token is not JSON"))?;
    if token.v != "meta.k8s.io/v1" {
        return Err(bad("server does not recognize this encoded key version"));
    }
    if token.start.contains("..") || token.start.starts_with('/') {
        return Err(bad("the key is invalid"));
    }
    Ok(token)
}

/// Lists from storage at `revision` (None: current) from `start` (relative to the resource
/// prefix), keeping `limit` items passing `filter`.
async fn list_storage(
    ctx: &RequestCtx<'_>,
    filter: &Filter,
    mut revision: Option<u64>,
    mut start: Option<String>,
    limit: Option<usize>,
    from_continue: bool,
) -> Result<(Vec<Arc<Object>>, ListMeta), ApiError> {
    let base = ctx.def.key_prefix();
    let prefix = match ctx.path.namespace {
        Some(ns) => format!("{base}{ns}/"),
        None => base.clone(),
    };
    let mut items = Vec::new();
    let mut meta = ListMeta::default();
    loop {
        let want = limit.map(|l| l.saturating_sub(items.len()));
        let request = ListRequest {
            prefix: prefix.clone(),
            revision,
            start_key: start.as_ref().map(|s| format!("{base}{s}")),
            limit: want,
        };
        let page = ctx
            .shared
            .storage
            .list(request)
            .await
            .map_err(|e| match e {
                crate::storage::StorageError::Compacted { .. } if from_continue => {
                    ApiError::continue_expired()
                }
                e => storage_status(ctx.def, "", e),
            })?;
        revision = Some(page.revision);
        meta.resource_version = page.revision;
        items.extend(page.items.into_iter().filter(|o| filter.matches(o)));
        let Some(last) = page.last_key else { break };
        let relative = format!("{}\u{0}", last.strip_prefix(base.as_str()).unwrap_or(&last));
        if limit.is_some_and(|l| items.len() >= l) {
            meta.continue_token = Some(encode_continue(page.revision, &relative));
            if filter.selects_all() {
                meta.remaining = Some(page.remaining);
            }
            break;
        }
        start = Some(relative);
    }
    Ok((items, meta))
}

fn cache_of<'a>(ctx: &'a RequestCtx<'_>) -> Result<&'a Arc<crate::cache::WatchCache>, ApiError> {
    ctx.shared
        .cache(ctx.def)
        .ok_or_else(|| ApiError::internal("no watch cache for the resource"))
}

async fn current_revision(ctx: &RequestCtx<'_>) -> Result<u64, ApiError> {
    ctx.shared
        .storage
        .revision()
        .await
        .map_err(|e| storage_status(ctx.def, "", e))
}

async fn list_cache(
    ctx: &RequestCtx<'_>,
    filter: &Filter,
    at_least: u64,
) -> Result<(Vec<Arc<Object>>, ListMeta), ApiError> {
    let cache = cache_of(ctx)?;
    cache.wait_fresh(at_least).await?;
    let (items, rv) = cache.list(filter);
    Ok((
        items,
        ListMeta {
            resource_version: rv,
            ..ListMeta::default()
        },
    ))
}

fn request_filter(ctx: &RequestCtx<'_>, extra_name: Option<&str>) -> Result<Filter, ApiError> {
    let mut filter = Filter::parse(
        ctx.def,
        ctx.path.namespace,
        ctx.query.get("labelSelector"),
        ctx.query.get("fieldSelector"),
    )?;
    if let Some(name) = extra_name {
        filter.fields.push(FieldRequirement {
            field: "metadata.name".into(),
            equal: true,
            value: name.to_owned(),
        });
    }
    Ok(filter)
}

fn parse_match(q: &Query) -> Result<Option<&str>, ApiError> {
    match q.non_empty("resourceVersionMatch") {
        None => Ok(None),
        Some(m @ ("Exact" | "NotOlderThan")) => Ok(Some(m)),
        Some(other) => Err(list_options_invalid(&[(
            "resourceVersionMatch",
            &format!(
                "Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\""
            ),
        )])),
    }
}

/// A list's `ListOptions` validation (422 with every cause, as apimachinery's
/// `ValidateListOptions`).
fn validate_list_options(q: &Query) -> Result<(), ApiError> {
    let mut causes: Vec<(&str, String)> = Vec::new();
    if let Some(m) = q.non_empty("resourceVersionMatch") {
        let rv = q.non_empty("resourceVersion");
        if rv.is_none() {
            causes.push((
                "resourceVersionMatch",
                "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
                    .into(),
            ));
        }
        if q.non_empty("continue").is_some() {
            causes.push((
                "resourceVersionMatch",
                "Forbidden: resourceVersionMatch is forbidden when continue is provided".into(),
            ));
        }
        if m != "Exact" && m != "NotOlderThan" {
            causes.push((
                "resourceVersionMatch",
                format!(
                    "Unsupported value: {}: supported values: \"Exact\", \"NotOlderThan\"",
                    serde_json::to_string(m).unwrap_or_default()
                ),
            ));
        }
        if m == "Exact" && rv == Some("0") {
            causes.push((
                "resourceVersionMatch",
                "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""
                    .into(),
            ));
        }
    }
    if q.get("sendInitialEvents").is_some() {
        causes.push((
            "sendInitialEvents",
            "Forbidden: sendInitialEvents is forbidden for list".into(),
        ));
    }
    if causes.is_empty() {
        return Ok(());
    }
    let causes: Vec<(&str, &str)> = causes.iter().map(|(f, m)| (*f, m.as_str())).collect();
    Err(list_options_invalid(&causes))
}

async fn list(ctx: &RequestCtx<'_>) -> Result<Response, ApiError> {
    let q = ctx.query;
    validate_list_options(q)?;
    let rv_str = q.non_empty("resourceVersion");
    let rvm = parse_match(q)?;
    let limit = match q.non_empty("limit") {
        Some(l) => Some(
            l.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
        ),
        None => None,
    }
    .filter(|l| *l > 0)
    .map(|l| usize::try_from(l).unwrap_or(usize::MAX));
    let filter = request_filter(ctx, None)?;
    let rv = read_rv(rv_str)?;
    let (items, meta) = if let Some(token) = q.non_empty("continue") {
        if rv.is_some_and(|r| r != 0) {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let token = decode_continue(token)?;
        list_storage(ctx, &filter, Some(token.rv), Some(token.start), limit, true).await?
    } else {
        match (rv, rvm) {
            (None, _) if limit.is_some() => {
                list_storage(ctx, &filter, None, None, limit, false).await?
            }
            (None, _) => {
                let rev = current_revision(ctx).await?;
                list_cache(ctx, &filter, rev).await?
            }
            (Some(0), _) => list_cache(ctx, &filter, 1).await?,
            (Some(n), Some("Exact")) => {
                list_storage(ctx, &filter, Some(n), None, limit, false).await?
            }
            (Some(n), Some(_)) => {
                let (items, meta) = list_cache(ctx, &filter, n).await?;
                if limit.is_some() {
                    list_storage(ctx, &filter, None, None, limit, false).await?
                } else {
                    (items, meta)
                }
            }
            (Some(n), None) if limit.is_some() => {
                list_storage(ctx, &filter, Some(n), None, limit, false).await?
            }
            (Some(n), None) => list_cache(ctx, &filter, n).await?,
        }
    };
    Ok(match ctx.format {
        Format::Table => json_response(200, table(ctx.def, &meta, &items)),
        Format::Json => stream_response(list_body(ctx.def, &meta, items)),
    })
}

/// `timeoutSeconds` if given and not 0, else the default: minRequestTimeout × (1 + random).
fn watch_deadline(ctx: &RequestCtx<'_>) -> Result<Instant, ApiError> {
    let given = match ctx.query.non_empty("timeoutSeconds") {
        Some(t) => t
            .parse::<u64>()
            .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds {t:?}")))?,
        None => 0,
    };
    let timeout = if given == 0 {
        ctx.shared
            .config
            .min_request_timeout
            .mul_f64(1.0 + rand::random::<f64>())
    } else {
        Duration::from_secs(given)
    };
    Ok(Instant::now() + timeout)
}

async fn watch_named(ctx: &RequestCtx<'_>, name: &str) -> Result<Response, ApiError> {
    watch_with(ctx, Some(name)).await
}

async fn watch(ctx: &RequestCtx<'_>) -> Result<Response, ApiError> {
    watch_with(ctx, None).await
}

async fn watch_with(ctx: &RequestCtx<'_>, name: Option<&str>) -> Result<Response, ApiError> {
    let q = ctx.query;
    let send_initial = q.opt_flag("sendInitialEvents");
    let rvm = parse_match(q)?;
    if rvm.is_some() && send_initial.is_none() {
        return Err(list_options_invalid(&[(
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        )]));
    }
    if send_initial.is_some() && rvm != Some("NotOlderThan") {
        return Err(list_options_invalid(&[(
            "resourceVersionMatch",
            "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        )]));
    }
    let bookmarks = q.flag("allowWatchBookmarks");
    if send_initial == Some(true) && !bookmarks {
        return Err(list_options_invalid(&[(
            "allowWatchBookmarks",
            "Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true",
        )]));
    }
    // An unparsable resourceVersion is the storage's invalid error, which the watch handler
    // converts into 422 Invalid of the resource.
    let rv = parse_rv(q.non_empty("resourceVersion")).map_err(|m| {
        ApiError::invalid(
            &ctx.def.api.group,
            &ctx.def.api.plural,
            "",
            &[("resourceVersion".to_owned(), m)],
        )
    })?;
    let filter = request_filter(ctx, name)?;
    let deadline = watch_deadline(ctx)?;
    let cache = cache_of(ctx)?;
    // As the Cacher: only a watch-list waits for the cache to reach its resource version (a
    // plain watch from a future RV is established at once and gets the events after it), and
    // once the request is valid, errors are an ERROR event inside a 200 stream.
    let error_stream = |err: ApiError| {
        let frame = error_frame(&err.to_status_value());
        stream_response(futures::stream::iter([Ok(frame)]))
    };
    let start = match (send_initial, rv) {
        (Some(true), rv) => {
            let at_least = match rv {
                Some(n) => n,
                None => current_revision(ctx).await?,
            };
            if let Err(err) = cache.wait_fresh(at_least).await {
                return Ok(error_stream(err));
            }
            WatchStart::WatchList
        }
        (Some(false), None | Some(0)) => {
            cache.wait_fresh(1).await?;
            WatchStart::After(cache.resource_version())
        }
        (None, None) => {
            cache.wait_fresh(current_revision(ctx).await?).await?;
            WatchStart::State
        }
        (None, Some(0)) => {
            cache.wait_fresh(1).await?;
            WatchStart::State
        }
        (_, Some(n)) => {
            cache.wait_fresh(1).await?;
            WatchStart::After(n)
        }
    };
    let handle = match cache.watch(WatchRequest {
        start,
        filter,
        bookmarks,
        deadline,
    }) {
        Ok(handle) => handle,
        Err(err) => return Ok(error_stream(err)),
    };
    let body = WatchBody::new(
        Arc::clone(ctx.def),
        ctx.format,
        handle.initial,
        handle.rx,
        deadline,
        ctx.shared.watch_token(),
    );
    Ok(stream_response(body))
}

/// The Kubernetes version the server reports (`/version`, the OpenAPI documents).
pub(crate) const GIT_VERSION: &str = "v1.34.0-kcache";

fn discovery(shared: &Shared, route: Route<'_>, headers: &HeaderMap) -> Result<Response, ApiError> {
    let body = match route {
        Route::Version => json!({
            "major": "1", "minor": "34", "emulationMajor": "1", "emulationMinor": "34",
            "gitVersion": GIT_VERSION, "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.0",
            "compiler": "gc", "platform": "linux/amd64"
        }),
        Route::CoreVersions => json!({
            "kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]
        }),
        Route::Groups => {
            let groups: Vec<Value> = groups(shared)
                .iter()
                .map(|(g, v)| group_json(g, v))
                .collect();
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        }
        Route::Group(g) => {
            let found = groups(shared)
                .into_iter()
                .find(|(name, _)| name == g)
                .ok_or_else(ApiError::no_route)?;
            let mut v = group_json(&found.0, &found.1);
            v["kind"] = json!("APIGroup");
            v["apiVersion"] = json!("v1");
            v
        }
        Route::Resources(g, v) => {
            let mut resources = Vec::new();
            for def in shared
                .resources
                .iter()
                .filter(|d| d.api.group == g && d.api.version == v)
            {
                let mut resource = json!({
                    "name": def.api.plural, "singularName": def.singular, "namespaced": def.namespaced,
                    "kind": def.api.kind,
                    "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                    "shortNames": def.short_names,
                });
                if !def.categories.is_empty() {
                    resource["categories"] = json!(def.categories);
                }
                resources.push(resource);
                if def.scale_subresource {
                    resources.push(json!({
                        "name": format!("{}/scale", def.api.plural), "singularName": "", "namespaced": def.namespaced,
                        "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"],
                    }));
                }
                if def.status_subresource {
                    resources.push(json!({
                        "name": format!("{}/status", def.api.plural), "singularName": "", "namespaced": def.namespaced,
                        "kind": def.api.kind, "verbs": ["get", "patch", "update"],
                    }));
                }
            }
            if resources.is_empty() {
                return Err(ApiError::no_route());
            }
            let gv = if g.is_empty() {
                v.to_owned()
            } else {
                format!("{g}/{v}")
            };
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
        }
        Route::OpenApiV2 if accepts_json(headers) => {
            return Ok(json_response(200, shared.openapi().v2.clone()));
        }
        Route::OpenApiV3Index => return Ok(json_response(200, shared.openapi().v3_index.clone())),
        Route::OpenApiV3(gv) => {
            let doc = shared
                .openapi()
                .v3
                .get(&gv)
                .ok_or_else(ApiError::no_route)?;
            return Ok(json_response(200, doc.clone()));
        }
        Route::OpenApiV2 => {
            // The protobuf form (gnostic's OpenAPIv2 Document) is not generated: an empty
            // document, with which kubectl validates nothing on the client and computes
            // strategic merge patches from its compiled-in types, as before OpenAPI v3.
            let mut resp = Response::new(Body::empty());
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(
                    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                ),
            );
            return Ok(resp);
        }
        Route::Resource(_) | Route::NotFound => return Err(ApiError::no_route()),
    };
    Ok(json_response(200, Bytes::from(body.to_string())))
}

/// Whether the Accept header admits JSON (absent: yes).
fn accepts_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|a| a.contains("json") || a.contains("*/*"))
}

/// The non-core groups and their versions, in order of first appearance.
fn groups(shared: &Shared) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for def in shared.resources.iter().filter(|d| !d.api.group.is_empty()) {
        match out.iter_mut().find(|(g, _)| *g == def.api.group) {
            Some((_, versions)) => {
                if !versions.contains(&def.api.version) {
                    versions.push(def.api.version.clone());
                }
            }
            None => out.push((def.api.group.clone(), vec![def.api.version.clone()])),
        }
    }
    out
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": vs, "preferredVersion": preferred})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let t = encode_continue(42, "ns/a\u{0}");
        let back = decode_continue(&t).unwrap();
        assert_eq!(back.rv, 42);
        assert_eq!(back.start, "ns/a\u{0}");
        assert!(decode_continue("not base64!").is_err());
    }
}
