//! The ValidatingAdmissionWebhook admission plugin (`k8s.io/apiserver/pkg/admission/plugin/
//! webhook/{generic,validating,request}`): each webhook of the ValidatingWebhookConfigurations
//! (sorted by configuration name, then in order) whose rules, namespace selector and object
//! selector match a write is sent an AdmissionReview v1 over HTTPS (`clientConfig.url`, or a
//! `service` at the address the builder gave for it; the server certificate checked against
//! `caBundle`); a denial fails the write with the status
//! the webhook gave, a failed call fails it (500) under `failurePolicy: Fail` and is skipped
//! under `Ignore`; the webhooks' warnings go to the client.
//!
//! A write that no configuration exists for costs one lookup in the configurations' watch
//! cache.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use kube_core::Resource;
use serde_json::{Value, json};
use tokio_rustls::rustls::{self, pki_types};

use crate::error::ApiError;
use crate::filter::Filter;
use crate::object::Object;
use crate::resource::ResourceDef;
use crate::shared::{ServiceAddress, Shared};

const GROUP: &str = "admissionregistration.k8s.io";

/// The kinds webhooks are never called for (`predicates/rules/rules.go`).
const EXEMPT: &[&str] = &[
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
];

/// What the plugin is told of a write (Kubernetes' `admission.Attributes`).
pub(crate) struct Attributes<'a> {
    pub(crate) def: &'a ResourceDef,
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub(crate) operation: &'static str,
    pub(crate) name: &'a str,
    pub(crate) namespace: Option<&'a str>,
    pub(crate) object: Option<&'a Object>,
    pub(crate) old_object: Option<&'a Object>,
    pub(crate) dry_run: bool,
}

/// Why a webhook call failed (`failed calling webhook "<name>": <this>`).
#[derive(Debug, thiserror::Error)]
enum CallError {
    #[error("failed to call webhook: {0}")]
    Transport(String),
    #[error("failed to call webhook: Post \"{0}\": context deadline exceeded")]
    Timeout(String),
    #[error("received invalid webhook response: {0}")]
    Response(String),
    #[error("the server responded with the status code {0} but did not return more information")]
    Status(u16),
}

/// Calls the validating webhooks matching `attrs`; their warnings, or the write's error.
pub(crate) async fn validate(
    shared: &Shared,
    attrs: &Attributes<'_>,
) -> Result<Vec<String>, ApiError> {
    if attrs.def.api.group == GROUP && EXEMPT.contains(&attrs.def.api.kind.as_str()) {
        return Ok(Vec::new());
    }
    let configs = configurations(shared);
    let mut warnings = Vec::new();
    for config in &configs {
        let value = config.to_value();
        for hook in value["webhooks"].as_array().into_iter().flatten() {
            if !matches(shared, hook, attrs).await? {
                continue;
            }
            let name = hook["name"].as_str().unwrap_or("");
            match call(&shared.webhook_services, hook, attrs).await {
                Ok(answer) => {
                    warnings.extend(strings(&answer["warnings"]));
                    if answer["allowed"] != json!(true) {
                        return Err(denied(name, &answer["status"]));
                    }
                }
                Err(e) if hook["failurePolicy"] == "Ignore" => {
                    tracing::warn!(webhook = name, error = %e, "failed calling webhook, failing open");
                }
                Err(e) => {
                    let message = format!("failed calling webhook \"{name}\": {e}");
                    return Err(
                        ApiError::internal(format!("Internal error occurred: {message}"))
                            .with_details(json!({"causes": [{"message": message}]})),
                    );
                }
            }
        }
    }
    Ok(warnings)
}

/// Whether any ValidatingWebhookConfiguration is stored (one watch cache lookup).
pub(crate) fn configured(shared: &Shared) -> bool {
    !configurations(shared).is_empty()
}

/// The stored ValidatingWebhookConfigurations, sorted by name.
fn configurations(shared: &Shared) -> Vec<Arc<Object>> {
    let served = shared.served();
    let Some(def) = served
        .resources
        .iter()
        .find(|d| d.api.group == GROUP && d.api.kind == "ValidatingWebhookConfiguration")
    else {
        return Vec::new();
    };
    let Some(cache) = shared.cache(def) else {
        return Vec::new();
    };
    let (mut configs, _) = cache.list(&Filter::default());
    configs.sort_by(|a, b| a.meta().name.cmp(&b.meta().name));
    configs
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w.as_str().map(str::to_owned))
        .collect()
}

/// `ShouldCallHook`: the rules, then the namespace and object selectors.
async fn matches(shared: &Shared, hook: &Value, attrs: &Attributes<'_>) -> Result<bool, ApiError> {
    let rules = hook["rules"].as_array().into_iter().flatten();
    if !rules.into_iter().any(|r| rule_matches(r, attrs)) {
        return Ok(false);
    }
    let labels = |o: Option<&Object>| {
        o.and_then(|o| o.to_value()["metadata"]["labels"].as_object().cloned())
    };
    let object_selector = &hook["objectSelector"];
    if !object_selector.is_null()
        && ![attrs.object, attrs.old_object]
            .into_iter()
            .flatten()
            .any(|o| crate::validation::selects(object_selector, labels(Some(o)).as_ref()))
    {
        return Ok(false);
    }
    let namespace_selector = &hook["namespaceSelector"];
    let Some(namespace) = attrs.namespace.filter(|_| attrs.def.namespaced) else {
        return Ok(true);
    };
    if namespace_selector.is_null() || namespace_selector == &json!({}) {
        return Ok(true);
    }
    let served = shared.served();
    let Some(namespaces) = served
        .resources
        .iter()
        .find(|d| crate::deletion::is_namespace(d))
    else {
        return Ok(true);
    };
    let found = shared
        .storage
        .get(namespaces.storage_key(None, namespace))
        .await
        .map_err(|e| crate::cacher::storage_status(namespaces, namespace, e))?
        .ok_or_else(|| ApiError::not_found("", "namespaces", namespace))?;
    Ok(crate::validation::selects(
        namespace_selector,
        labels(Some(&found)).as_ref(),
    ))
}

/// One rule against the request: operation, group, version, resource (`res`, `res/sub`,
/// `res/*`, `*/sub`, `*`, `*/*`) and scope.
fn rule_matches(rule: &Value, attrs: &Attributes<'_>) -> bool {
    let listed = |key: &str, want: &str| {
        rule[key]
            .as_array()
            .into_iter()
            .flatten()
            .any(|v| v == "*" || v == want)
    };
    let resource = attrs.def.api.plural.as_str();
    let resource_matches = rule["resources"].as_array().into_iter().flatten().any(|r| {
        let r = r.as_str().unwrap_or("");
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        // The main resource: `res` or `*`; `res/*` and `*/*` match it too.
        (res == "*" || res == resource) && (sub.is_empty() || sub == "*")
    });
    let scope = match rule["scope"].as_str().unwrap_or("*") {
        "Cluster" => !attrs.def.namespaced,
        "Namespaced" => attrs.def.namespaced && !crate::deletion::is_namespace(attrs.def),
        _ => true,
    };
    listed("operations", attrs.operation)
        && listed("apiGroups", &attrs.def.api.group)
        && listed("apiVersions", &attrs.def.api.version)
        && resource_matches
        && scope
}

/// The AdmissionReview sent for `attrs`.
fn review(uid: &str, attrs: &Attributes<'_>) -> Value {
    let api = &attrs.def.api;
    let kind = json!({"group": api.group, "version": api.version, "kind": api.kind});
    let resource = json!({"group": api.group, "version": api.version, "resource": api.plural});
    let options = match attrs.operation {
        "CREATE" => json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}),
        "UPDATE" => json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}),
        _ => json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}),
    };
    json!({
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": uid,
            "kind": kind, "resource": resource,
            "requestKind": kind, "requestResource": resource,
            "name": attrs.name,
            "namespace": attrs.namespace.filter(|_| attrs.def.namespaced),
            "operation": attrs.operation,
            "userInfo": {},
            "object": attrs.object.map(|o| o.to_value()),
            "oldObject": attrs.old_object.map(|o| o.to_value()),
            "dryRun": attrs.dry_run,
            "options": options,
        }
    })
}

/// Sends the review to the webhook's URL and checks the answer; its `response`.
async fn call(
    services: &[ServiceAddress],
    hook: &Value,
    attrs: &Attributes<'_>,
) -> Result<Value, CallError> {
    let versions = strings(&hook["admissionReviewVersions"]);
    if !versions.iter().any(|v| v == "v1") {
        return Err(CallError::Transport(
            "could not create admission objects: webhook does not accept known AdmissionReview versions (v1)".into(),
        ));
    }
    let (base, connect_to) = target(services, &hook["clientConfig"])?;
    let timeout = hook["timeoutSeconds"].as_u64().unwrap_or(10);
    let url = format!("{base}?timeout={timeout}s");
    let uid = uuid::Uuid::new_v4().to_string();
    let body = review(&uid, attrs).to_string();
    let ca = hook["clientConfig"]["caBundle"].as_str().unwrap_or("");
    let post = post(&url, connect_to, ca, body);
    let answer = tokio::time::timeout(Duration::from_secs(timeout), post)
        .await
        .map_err(|_| CallError::Timeout(url.clone()))??;
    let review: Value =
        serde_json::from_slice(&answer).map_err(|e| CallError::Response(e.to_string()))?;
    let response = &review["response"];
    if response.is_null() {
        return Err(CallError::Response("webhook response was absent".into()));
    }
    if review["apiVersion"] != "admission.k8s.io/v1" || review["kind"] != "AdmissionReview" {
        return Err(CallError::Response(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {}, Kind={}",
            review["apiVersion"].as_str().unwrap_or(""),
            review["kind"].as_str().unwrap_or("")
        )));
    }
    let got = response["uid"].as_str().unwrap_or("");
    if got != uid {
        return Err(CallError::Response(format!(
            "expected response.uid=\"{uid}\", got \"{got}\""
        )));
    }
    if !response["patch"].is_null() {
        return Err(CallError::Response(
            "validating webhook may not return response.patch".into(),
        ));
    }
    Ok(response.clone())
}

/// The URL of a client configuration and, for a service, the address it listens on: a
/// service is `https://<name>.<namespace>.svc:<port><path>`, as Kubernetes addresses it.
fn target(
    services: &[ServiceAddress],
    config: &Value,
) -> Result<(String, Option<SocketAddr>), CallError> {
    if let Some(url) = config["url"].as_str() {
        return Ok((url.to_owned(), None));
    }
    let service = &config["service"];
    let (namespace, name) = (
        service["namespace"].as_str().unwrap_or(""),
        service["name"].as_str().unwrap_or(""),
    );
    let port = service["port"].as_u64().unwrap_or(443);
    let path = service["path"].as_str().unwrap_or("");
    let url = format!("https://{name}.{namespace}.svc:{port}{path}");
    let found = services
        .iter()
        .find(|s| s.namespace == namespace && s.name == name)
        .ok_or_else(|| {
            CallError::Transport(format!(
                "Post \"{url}\": service \"{namespace}/{name}\" has no address (ApiServerBuilder::webhook_service)"
            ))
        })?;
    Ok((url, Some(found.address)))
}

/// POSTs `body` over HTTPS (to `connect_to` when given, else to the URL's host), trusting the PEM certificates of `ca_bundle` (base64); the body of
/// a 2xx answer.
async fn post(
    url: &str,
    connect_to: Option<SocketAddr>,
    ca_bundle: &str,
    body: String,
) -> Result<Bytes, CallError> {
    let transport =
        |e: &dyn std::fmt::Display| CallError::Transport(format!("Post \"{url}\": {e}"));
    let uri: http::Uri = url.parse().map_err(|e| transport(&e))?;
    let host = uri.host().unwrap_or("").trim_matches(['[', ']']).to_owned();
    let port = uri.port_u16().unwrap_or(443);
    let pem = base64::engine::general_purpose::STANDARD
        .decode(ca_bundle)
        .map_err(|e| transport(&e))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in <pki_types::CertificateDer as pki_types::pem::PemObject>::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| transport(&e))?;
        roots.add(cert).map_err(|e| transport(&e))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| transport(&e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let server_name = pki_types::ServerName::try_from(host.clone()).map_err(|e| transport(&e))?;
    let tcp = match connect_to {
        Some(address) => tokio::net::TcpStream::connect(address).await,
        None => tokio::net::TcpStream::connect((host.as_str(), port)).await,
    }
    .map_err(|e| transport(&e))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(server_name, tcp)
        .await
        .map_err(|e| transport(&e))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| transport(&e))?;
    tokio::spawn(conn);
    let request = http::Request::post(uri.path_and_query().map_or("/", |p| p.as_str()))
        .header(
            http::header::HOST,
            uri.authority().map_or("", |a| a.as_str()),
        )
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .header(http::header::USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| transport(&e))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| transport(&e))?;
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| transport(&e))?
        .to_bytes();
    if !(200..300).contains(&status) {
        return Err(CallError::Status(status));
    }
    Ok(bytes)
}

/// A denial as `errors/statuserror.go` words it: the webhook's status, at least 400.
fn denied(name: &str, status: &Value) -> ApiError {
    let code = status["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let text = |k: &str| status[k].as_str().unwrap_or("").to_owned();
    let message = match (text("message"), text("reason")) {
        (m, _) if !m.is_empty() => format!("admission webhook \"{name}\" denied the request: {m}"),
        (_, r) if !r.is_empty() => format!("admission webhook \"{name}\" denied the request: {r}"),
        _ => format!("admission webhook \"{name}\" denied the request without explanation"),
    };
    let mut err = ApiError::new(code, &text("reason"), message);
    if !status["details"].is_null() {
        err = err.with_details(status["details"].clone());
    }
    err
}
