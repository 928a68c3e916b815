//! The health endpoints `/healthz`, `/livez` and `/readyz`, as kube-apiserver serves them
//! (apiserver/pkg/server/healthz/healthz.go): `ok`, or with `?verbose` one `[+]name ok` line a
//! check and `<endpoint> check passed`; `?exclude=name` (repeatable) skips a check; a failing
//! check makes the answer 500 with `[-]name failed: reason withheld` and `<endpoint> check
//! failed`. Each check is also served alone at `/<endpoint>/<check name>`.
//!
//! The checks are the ones that mean something here: the storage answers (`etcd`, on memory as
//! on etcd), the watch caches have had their first list (`informer-sync`), the CRD controller
//! has served the definitions stored at start (`poststarthook/crd-informer-synced`), the
//! objects of a fresh control plane exist (`poststarthook/bootstrap-controller`,
//! `poststarthook/scheduling/bootstrap-system-priority-classes`), and the server is not
//! shutting down (`shutdown`).

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};

use crate::query::Query;
use crate::shared::Shared;

/// One of the three health endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Healthz,
    Livez,
    Readyz,
}

impl Endpoint {
    /// The endpoint a path's first segment names.
    pub(crate) fn parse(seg: &str) -> Option<Self> {
        match seg {
            "healthz" => Some(Self::Healthz),
            "livez" => Some(Self::Livez),
            "readyz" => Some(Self::Readyz),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Healthz => "healthz",
            Self::Livez => "livez",
            Self::Readyz => "readyz",
        }
    }

    /// The checks, in kube-apiserver's order (readyz adds its readiness checks around the
    /// post-start hooks).
    fn checks(self) -> Vec<Check> {
        let mut checks = vec![Check::Ping, Check::Log, Check::Etcd];
        if self == Self::Readyz {
            checks.extend([Check::EtcdReadiness, Check::InformerSync]);
        }
        checks.extend([
            Check::CrdInformerSynced,
            Check::BootstrapController,
            Check::PriorityClasses,
        ]);
        if self == Self::Readyz {
            checks.push(Check::Shutdown);
        }
        checks
    }
}

#[derive(Debug, Clone, Copy)]
enum Check {
    Ping,
    Log,
    Etcd,
    EtcdReadiness,
    InformerSync,
    CrdInformerSynced,
    BootstrapController,
    PriorityClasses,
    Shutdown,
}

impl Check {
    fn name(self) -> &'static str {
        match self {
            Self::Ping => "ping",
            Self::Log => "log",
            Self::Etcd => "etcd",
            Self::EtcdReadiness => "etcd-readiness",
            Self::InformerSync => "informer-sync",
            Self::CrdInformerSynced => "poststarthook/crd-informer-synced",
            Self::BootstrapController => "poststarthook/bootstrap-controller",
            Self::PriorityClasses => "poststarthook/scheduling/bootstrap-system-priority-classes",
            Self::Shutdown => "shutdown",
        }
    }

    async fn run(self, shared: &Shared) -> Result<(), String> {
        match self {
            Self::Ping | Self::Log => Ok(()),
            Self::Etcd | Self::EtcdReadiness => shared
                .storage
                .revision()
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            Self::InformerSync => {
                let served = shared.served();
                let waiting: Vec<&str> = served
                    .caches()
                    .filter(|c| !c.is_ready())
                    .map(|c| c.resource().api.plural.as_str())
                    .collect();
                if waiting.is_empty() {
                    Ok(())
                } else {
                    Err(format!("caches not synced: {}", waiting.join(", ")))
                }
            }
            Self::CrdInformerSynced => hook(*shared.crds_served.borrow()),
            Self::BootstrapController | Self::PriorityClasses => {
                hook(shared.bootstrapped.load(Ordering::Acquire))
            }
            Self::Shutdown => {
                if shared.shutdown.is_cancelled() {
                    Err("process is shutting down".to_owned())
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// A post-start hook's check: failing until the hook has finished.
fn hook(done: bool) -> Result<(), String> {
    if done {
        Ok(())
    } else {
        Err("not finished".to_owned())
    }
}

/// The answer to `/<endpoint>` (`check` None) or `/<endpoint>/<check>`; `None` when no such
/// check exists (the caller answers Go's 404 page).
pub(crate) async fn serve(
    shared: &Shared,
    endpoint: Endpoint,
    check: Option<&str>,
    query: &Query,
) -> Option<Response> {
    let checks = endpoint.checks();
    if let Some(check) = check {
        let found = checks.into_iter().find(|c| c.name() == check)?;
        return Some(match found.run(shared).await {
            Ok(()) => text(StatusCode::OK, "ok".to_owned()),
            Err(e) => go_error(format!("internal server error: {e}")),
        });
    }
    let mut excluded: Vec<&str> = query.all("exclude").collect();
    let mut out = String::new();
    let mut failed = Vec::new();
    for c in checks {
        let name = c.name();
        if excluded.contains(&name) {
            excluded.retain(|e| *e != name);
            let _ = writeln!(out, "[+]{name} excluded: ok");
            continue;
        }
        match c.run(shared).await {
            Ok(()) => {
                let _ = writeln!(out, "[+]{name} ok");
            }
            Err(e) => {
                let _ = writeln!(out, "[-]{name} failed: reason withheld");
                failed.push(format!("[-]{name} failed: {e}"));
            }
        }
    }
    if !excluded.is_empty() {
        excluded.sort_unstable();
        excluded.dedup();
        let quoted: Vec<String> = excluded.iter().map(|e| format!("{e:?}")).collect();
        tracing::warn!(
            checks = %quoted.join(","),
            "cannot exclude some health checks, no health checks are installed matching them"
        );
        let _ = writeln!(
            out,
            "warn: some health checks cannot be excluded: no matches for {}",
            quoted.join(",")
        );
    }
    let name = endpoint.name();
    if !failed.is_empty() {
        tracing::info!(endpoint = name, failed = %failed.join("; "), "health check failed");
        return Some(go_error(format!("{out}{name} check failed")));
    }
    if !query.has("verbose") {
        return Some(text(StatusCode::OK, "ok".to_owned()));
    }
    let _ = writeln!(out, "{name} check passed");
    Some(text(StatusCode::OK, out))
}

/// A plain-text answer with `X-Content-Type-Options: nosniff`, as healthz.go writes.
fn text(code: StatusCode, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = code;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// Go's `http.Error(w, msg, 500)`: the message and a newline, as plain text.
fn go_error(msg: String) -> Response {
    text(StatusCode::INTERNAL_SERVER_ERROR, format!("{msg}\n"))
}

/// Go's `http.NotFound`: `404 page not found`, what a path nothing serves answers.
pub(crate) fn not_found_page() -> Response {
    text(StatusCode::NOT_FOUND, "404 page not found\n".to_owned())
}
