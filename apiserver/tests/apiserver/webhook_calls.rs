//! Validating admission webhooks called by the server: a webhook server in the test (HTTPS
//! with a certificate of a self-signed CA made by rcgen, given as `caBundle`) answers
//! AdmissionReviews; denials, failure policies and warnings reach the client as from
//! kube-apiserver (admission.md §4).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use kcache_apiserver::TestServer;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use serde_json::{Value, json};
use tokio_rustls::rustls;

use crate::support::*;

const CONFIGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

type Answer = fn(&Value) -> Value;

/// A webhook server on 127.0.0.1: its address, the base64 PEM of its CA, and the reviews it
/// received.
struct WebhookServer {
    addr: SocketAddr,
    ca_bundle: String,
    received: Arc<Mutex<Vec<Value>>>,
}

/// A CA, and a serving certificate for `names` it signs.
fn certificates(names: &[&str]) -> (String, rustls::ServerConfig) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "webhook test CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let leaf_params = rcgen::CertificateParams::new(names).unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)
        .unwrap();
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca.pem());
    (bundle, config)
}

/// Serves `answer(review)` as the `response` of each AdmissionReview POSTed (uid copied),
/// with a certificate for 127.0.0.1.
async fn webhook_server(answer: Answer) -> WebhookServer {
    webhook_server_named(answer, &["127.0.0.1"]).await
}

/// [`webhook_server`] with a certificate for `names`.
async fn webhook_server_named(answer: Answer, names: &[&str]) -> WebhookServer {
    let (ca_bundle, config) = certificates(names);
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let received = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&received);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let Ok(tls) = acceptor.accept(tcp).await else {
                continue;
            };
            let seen = Arc::clone(&seen);
            let service = hyper::service::service_fn(
                move |req: http::Request<hyper::body::Incoming>| {
                    let seen = Arc::clone(&seen);
                    async move {
                        let body = req.into_body().collect().await?.to_bytes();
                        let review: Value = serde_json::from_slice(&body).unwrap_or_default();
                        let mut response = answer(&review);
                        response["uid"] = review["request"]["uid"].clone();
                        seen.lock().unwrap().push(review);
                        let out = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                     "response": response});
                        Ok::<_, hyper::Error>(http::Response::new(Full::new(Bytes::from(
                            out.to_string(),
                        ))))
                    }
                },
            );
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service),
            );
        }
    });
    WebhookServer {
        addr,
        ca_bundle,
        received,
    }
}

fn configuration(name: &str, url: &str, ca_bundle: &str, failure_policy: &str) -> Value {
    configuration_for(name, url, ca_bundle, failure_policy, "CREATE")
}

fn configuration_for(
    name: &str,
    url: &str,
    ca_bundle: &str,
    failure_policy: &str,
    operation: &str,
) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
           "metadata": {"name": name},
           "webhooks": [{"name": format!("{name}.example.com"), "sideEffects": "None",
                         "admissionReviewVersions": ["v1"], "failurePolicy": failure_policy,
                         "clientConfig": {"url": url, "caBundle": ca_bundle},
                         "rules": [{"operations": [operation], "apiGroups": [""], "apiVersions": ["v1"],
                                    "resources": ["configmaps"]}]}]})
}

/// A webhook server answering with `answer`, a server with a `Fail` configuration `name` of
/// it for `operation` on configmaps, and a client of the server.
async fn registered(
    answer: Answer,
    name: &str,
    operation: &str,
) -> (WebhookServer, TestServer, kube_client::Client) {
    let hook = webhook_server(answer).await;
    let s = start().await;
    let c = client(&s);
    let url = format!("https://{}/validate", hook.addr);
    let config = configuration_for(name, &url, &hook.ca_bundle, "Fail", operation);
    let (code, created) = post(&c, CONFIGS, &config).await;
    assert_eq!(code, 201, "{created}");
    (hook, s, c)
}

/// Creates the ConfigMap `deny_bad` denies; the 403 Status.
async fn create_denied(c: &kube_client::Client) -> Value {
    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "bad"}, "data": {"k": "bad"}});
    let (code, status) = post(c, "/api/v1/namespaces/default/configmaps", &bad).await;
    assert_eq!(code, 403, "{status}");
    status
}

fn deny_bad(review: &Value) -> Value {
    let data = &review["request"]["object"]["data"];
    if data["k"] == "bad" {
        json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "k may not be bad"}})
    } else {
        json!({"allowed": true, "warnings": ["checked by the test webhook"]})
    }
}

/// A denial is the webhook's status with `admission webhook "<name>" denied the request:`; an
/// allowed write carries the webhook's warning; the review holds the object, the operation,
/// dryRun and the kind and resource.
#[tokio::test]
async fn validating_webhook_denies_and_warns() {
    let (hook, _s, c) = registered(deny_bad, "deny", "CREATE").await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let status = create_denied(&c).await;
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "admission webhook \"deny.example.com\" denied the request: k may not be bad"
    );
    let body = configmap("good", "fine").to_string().into_bytes();
    let (code, _, warnings) =
        request_warned(&c, "POST", cms, Some(("application/json", body))).await;
    assert_eq!(code, 201);
    assert_eq!(warnings, ["299 - \"checked by the test webhook\""]);
    let received = hook.received.lock().unwrap().clone();
    assert_eq!(received.len(), 2);
    let request = &received[1]["request"];
    assert_eq!(request["operation"], "CREATE");
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(
        (&request["namespace"], &request["dryRun"]),
        (&json!("default"), &json!(false))
    );
    assert_eq!(request["object"]["metadata"]["name"], "good");
    assert!(request["oldObject"].is_null());
    // Other resources are not sent.
    let (code, _) = post(
        &c,
        "/api/v1/namespaces/default/secrets",
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
    )
    .await;
    assert_eq!((code, hook.received.lock().unwrap().len()), (201, 2));
}

/// A webhook that cannot be reached fails the write with 500 `failed calling webhook` under
/// `Fail` and is skipped under `Ignore`; a CA that did not sign the server's certificate is
/// such a failure.
#[tokio::test]
async fn unreachable_webhook_fails_closed_or_is_ignored() {
    let hook = webhook_server(deny_bad).await;
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let down = format!("https://{}/validate", closed.local_addr().unwrap());
    drop(closed);
    let s = start().await;
    let c = client(&s);
    let (code, _) = post(
        &c,
        CONFIGS,
        &configuration("down", &down, &hook.ca_bundle, "Fail"),
    )
    .await;
    assert_eq!(code, 201);
    let cms = "/api/v1/namespaces/default/configmaps";
    let (code, status) = post(&c, cms, &configmap("a", "x")).await;
    assert_eq!(
        (code, &status["reason"]),
        (500, &json!("InternalError")),
        "{status}"
    );
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with("Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: Post \"https://127.0.0.1:"),
        "{message}"
    );
    // Ignore: skipped.
    let mut ignore = configuration("down", &down, &hook.ca_bundle, "Ignore");
    let (_, current) = get(&c, &format!("{CONFIGS}/down")).await;
    ignore["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    let (code, _) = put(&c, &format!("{CONFIGS}/down"), &ignore).await;
    assert_eq!(code, 200);
    let (code, _) = post(&c, cms, &configmap("b", "x")).await;
    assert_eq!(code, 201);
    // The wrong CA: the server's certificate is not trusted.
    let other = webhook_server(deny_bad).await;
    let wrong = format!("https://{}/validate", other.addr);
    let (code, _) = post(
        &c,
        CONFIGS,
        &configuration("wrongca", &wrong, &hook.ca_bundle, "Fail"),
    )
    .await;
    assert_eq!(code, 201);
    let (code, status) = post(&c, cms, &configmap("c", "x")).await;
    assert_eq!(code, 500, "{status}");
    assert!(other.received.lock().unwrap().is_empty());
}

/// kube-rs's admission types (`kube::core::admission`), as a Rust operator's webhook builds
/// its answers, read the server's review and deny with `AdmissionResponse::deny`.
#[tokio::test]
async fn webhook_built_with_kube_admission_types() {
    fn answer(review: &Value) -> Value {
        let review: AdmissionReview<DynamicObject> =
            serde_json::from_value(review.clone()).unwrap();
        let request: AdmissionRequest<DynamicObject> = review.try_into().unwrap();
        let name = request.name.clone();
        let response = if name.starts_with("forbidden") {
            AdmissionResponse::from(&request).deny(format!("{name} is not allowed"))
        } else {
            AdmissionResponse::from(&request)
        };
        serde_json::to_value(response.into_review()).unwrap()["response"].clone()
    }
    let (_hook, _s, c) = registered(answer, "kube", "CREATE").await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let (code, status) = post(&c, cms, &configmap("forbidden-one", "x")).await;
    // `deny` sends no code: a code under 400 is raised to 400, as `ToStatusErr`.
    assert_eq!(
        (code, &status["status"]),
        (400, &json!("Failure")),
        "{status}"
    );
    assert_eq!(
        status["message"],
        "admission webhook \"kube.example.com\" denied the request: forbidden-one is not allowed"
    );
    let (code, _) = post(&c, cms, &configmap("allowed", "x")).await;
    assert_eq!(code, 201);
}

/// Deletes are admitted too: the review holds the stored object as `oldObject` and no
/// `object`; a denial keeps the object.
#[tokio::test]
async fn validating_webhook_admits_deletes() {
    fn keep(review: &Value) -> Value {
        let request = &review["request"];
        if request["oldObject"]["metadata"]["name"] == "keep" && request["object"].is_null() {
            json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "kept"}})
        } else {
            json!({"allowed": true})
        }
    }
    let (hook, _s, c) = registered(keep, "keep", "DELETE").await;
    let cms = "/api/v1/namespaces/default/configmaps";
    for name in ["keep", "drop"] {
        let (code, _) = post(&c, cms, &configmap(name, "x")).await;
        assert_eq!(code, 201);
    }
    // Creates do not match the rule.
    assert!(hook.received.lock().unwrap().is_empty());
    let (code, status) = request(&c, "DELETE", &format!("{cms}/keep"), None).await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "admission webhook \"keep.example.com\" denied the request: kept"
    );
    let (code, _) = get(&c, &format!("{cms}/keep")).await;
    assert_eq!(code, 200);
    let (code, _) = request(&c, "DELETE", &format!("{cms}/drop"), None).await;
    assert_eq!(code, 200);
    let received = hook.received.lock().unwrap().clone();
    assert_eq!(received.len(), 2);
    assert_eq!(received[1]["request"]["operation"], "DELETE");
    assert_eq!(
        received[1]["request"]["oldObject"]["metadata"]["name"],
        "drop"
    );
}

/// Updates and patches are admitted with the new object and the stored one as `oldObject`;
/// a denied one leaves the stored object as it was.
#[tokio::test]
async fn validating_webhook_admits_updates_and_patches() {
    fn no_bad_updates(review: &Value) -> Value {
        let request = &review["request"];
        if request["object"]["data"]["v"] == "bad" && request["oldObject"]["data"]["v"] == "ok" {
            json!({"allowed": false, "status": {"code": 422, "reason": "Invalid", "message": "v may not become bad"}})
        } else {
            json!({"allowed": true, "warnings": ["update seen"]})
        }
    }
    let (hook, _s, c) = registered(no_bad_updates, "upd", "UPDATE").await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let (_, created) = post(&c, cms, &configmap("cm", "ok")).await;
    let mut bad = created.clone();
    bad["data"]["v"] = json!("bad");
    let (code, status) = put(&c, &format!("{cms}/cm"), &bad).await;
    assert_eq!(
        (code, &status["reason"]),
        (422, &json!("Invalid")),
        "{status}"
    );
    assert_eq!(
        status["message"],
        "admission webhook \"upd.example.com\" denied the request: v may not become bad"
    );
    let (code, status) = patch(
        &c,
        &format!("{cms}/cm"),
        "application/merge-patch+json",
        &json!({"data": {"v": "bad"}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    let (_, stored) = get(&c, &format!("{cms}/cm")).await;
    assert_eq!(stored["data"]["v"], "ok");
    let mut fine = stored.clone();
    fine["data"]["v"] = json!("fine");
    let body = fine.to_string().into_bytes();
    let (code, _, warnings) = request_warned(
        &c,
        "PUT",
        &format!("{cms}/cm"),
        Some(("application/json", body)),
    )
    .await;
    assert_eq!(
        (code, warnings),
        (200, vec!["299 - \"update seen\"".to_owned()])
    );
    let received = hook.received.lock().unwrap().clone();
    let last = &received[received.len() - 1]["request"];
    assert_eq!(last["operation"], "UPDATE");
    assert_eq!(last["oldObject"]["data"]["v"], "ok");
    assert_eq!(last["object"]["data"]["v"], "fine");
}

/// A dry run is sent with `dryRun: true` and nothing is stored; a webhook that does not answer
/// within `timeoutSeconds` is a failed call (500, `context deadline exceeded`).
#[tokio::test]
async fn webhook_sees_dry_run_and_times_out() {
    let (hook, _s, c) = registered(deny_bad, "dry", "CREATE").await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let (code, _) = post(&c, &format!("{cms}?dryRun=All"), &configmap("d", "x")).await;
    assert_eq!(code, 201);
    assert_eq!(hook.received.lock().unwrap()[0]["request"]["dryRun"], true);
    let (code, _) = get(&c, &format!("{cms}/d")).await;
    assert_eq!(code, 404);
    // A server that accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/validate", silent.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((tcp, _)) = silent.accept().await {
            open.push(tcp);
        }
    });
    let mut config = configuration("silent", &url, &hook.ca_bundle, "Fail");
    config["webhooks"][0]["timeoutSeconds"] = json!(1);
    let (code, _) = post(&c, CONFIGS, &config).await;
    assert_eq!(code, 201);
    let (code, status) = post(&c, cms, &configmap("late", "x")).await;
    assert_eq!(code, 500, "{status}");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.ends_with(&format!(
            "Post \"{url}?timeout=1s\": context deadline exceeded"
        )),
        "{message}"
    );
    held.abort();
}

/// A `service` reference reaches the address given by `ApiServerBuilder::webhook_service`,
/// the certificate checked for `<name>.<namespace>.svc`; an unknown service fails the call.
#[tokio::test]
async fn webhook_service_resolves_to_the_address_the_builder_gives() {
    let hook = webhook_server_named(deny_bad, &["hooks.webhooks.svc"]).await;
    let builder = test_builder().webhook_service("webhooks", "hooks", hook.addr);
    let s = TestServer::start_with(builder).await.unwrap();
    let c = client(&s);
    let mut config = configuration("svc", "", &hook.ca_bundle, "Fail");
    config["webhooks"][0]["clientConfig"] = json!({"caBundle": hook.ca_bundle,
        "service": {"namespace": "webhooks", "name": "hooks", "path": "/validate"}});
    let (code, created) = post(&c, CONFIGS, &config).await;
    assert_eq!(code, 201, "{created}");
    let cms = "/api/v1/namespaces/default/configmaps";
    let status = create_denied(&c).await;
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(hook.received.lock().unwrap().len(), 1);
    // A service the server was not told of.
    config["metadata"]["name"] = json!("unknown");
    config["webhooks"][0]["clientConfig"]["service"]["name"] = json!("other");
    let (code, _) = post(&c, CONFIGS, &config).await;
    assert_eq!(code, 201);
    let (code, status) = post(&c, cms, &configmap("ok", "x")).await;
    assert_eq!(code, 500, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("Post \"https://other.webhooks.svc:443/validate\": service \"webhooks/other\" has no address"),
        "{status}"
    );
}
