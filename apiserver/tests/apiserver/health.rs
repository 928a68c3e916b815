//! `/healthz`, `/livez`, `/readyz` (apiserver/pkg/server/healthz/healthz.go) and what a path
//! nothing serves answers (Go's `http.NotFound`).

use kcache_apiserver::{TestServer, client_for};
use kube_client::Client;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::kubectl::{kubectl, session};
use crate::support::{Backend, get, on_every_backend, test_builder};

/// GETs `path`; returns the status, the Content-Type and the body as text.
async fn text(client: &Client, path: &str) -> (u16, String, String) {
    let req = http::Request::get(path)
        .body(kube_client::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let code = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let bytes = resp.into_body().collect_bytes().await.unwrap();
    (
        code,
        content_type,
        String::from_utf8(bytes.to_vec()).unwrap(),
    )
}

/// Asserts that each path answers Go's `http.NotFound` page.
async fn assert_404_page(client: &Client, paths: &[&str]) {
    for path in paths {
        let answer = text(client, path).await;
        let page = (404, "text/plain; charset=utf-8", "404 page not found\n");
        assert_eq!(
            (answer.0, answer.1.as_str(), answer.2.as_str()),
            page,
            "{path}"
        );
    }
}

async fn health_endpoints_answer_ok_and_list_their_checks_when_verbose(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let c = s.client().unwrap();
    for path in ["/healthz", "/livez", "/readyz"] {
        assert_eq!(
            text(&c, path).await,
            (200, "text/plain; charset=utf-8".into(), "ok".into()),
            "{path}"
        );
    }
    let (code, _, livez) = text(&c, "/livez?verbose").await;
    assert_eq!(code, 200);
    assert_eq!(
        livez,
        "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]poststarthook/crd-informer-synced ok\n\
         [+]poststarthook/bootstrap-controller ok\n\
         [+]poststarthook/scheduling/bootstrap-system-priority-classes ok\nlivez check passed\n"
    );
    let (code, _, readyz) = text(&c, "/readyz?verbose").await;
    assert_eq!(code, 200);
    assert!(
        readyz.starts_with(
            "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n"
        ),
        "{readyz}"
    );
    assert!(
        readyz.ends_with("[+]shutdown ok\nreadyz check passed\n"),
        "{readyz}"
    );
    let (_, _, healthz) = text(&c, "/healthz?verbose=1").await;
    assert!(healthz.ends_with("healthz check passed\n"), "{healthz}");
}

on_every_backend!(health_endpoints_answer_ok_and_list_their_checks_when_verbose);

#[tokio::test]
async fn exclude_skips_a_check_and_warns_of_names_that_match_none() {
    let s = crate::support::start().await;
    let c = s.client().unwrap();
    let (code, _, body) = text(
        &c,
        "/readyz?verbose&exclude=etcd&exclude=nosuch&exclude=informer-sync",
    )
    .await;
    assert_eq!(code, 200);
    assert!(body.contains("[+]etcd excluded: ok\n"), "{body}");
    assert!(body.contains("[+]informer-sync excluded: ok\n"), "{body}");
    assert!(body.contains("[+]etcd-readiness ok\n"), "{body}");
    assert!(
        body.ends_with(
            "warn: some health checks cannot be excluded: no matches for \"nosuch\"\nreadyz check passed\n"
        ),
        "{body}"
    );
}

#[tokio::test]
async fn each_check_is_served_at_its_own_path() {
    let s = crate::support::start().await;
    let c = s.client().unwrap();
    for path in [
        "/livez/ping",
        "/healthz/etcd",
        "/readyz/informer-sync",
        "/readyz/poststarthook/bootstrap-controller",
        "/readyz/shutdown",
    ] {
        let (code, _, body) = text(&c, path).await;
        assert_eq!((code, body.as_str()), (200, "ok"), "{path}");
    }
    // readyz-only checks are not under livez; unknown ones are nowhere.
    assert_404_page(&c, &["/livez/shutdown", "/livez/nosuch", "/readyz/"]).await;
}

#[tokio::test]
async fn readyz_fails_until_bootstrapped_and_after_shutdown_with_reasons_withheld() {
    let server = test_builder().build();
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    tokio::spawn(kcache_apiserver::serve(listener, server.clone(), stop));
    let c = client_for(&format!("http://{addr}"), None, "default").unwrap();
    let hooks = "[-]poststarthook/bootstrap-controller failed: reason withheld\n\
                 [-]poststarthook/scheduling/bootstrap-system-priority-classes failed: reason withheld\n";
    let (code, content_type, body) = text(&c, "/livez").await;
    assert_eq!(
        (code, content_type.as_str()),
        (500, "text/plain; charset=utf-8")
    );
    assert!(body.contains(hooks), "{body}");
    assert!(body.ends_with("livez check failed\n"), "{body}");
    let (code, _, body) = text(&c, "/readyz/poststarthook/bootstrap-controller").await;
    assert_eq!(
        (code, body.as_str()),
        (500, "internal server error: not finished\n")
    );
    // Excluding the failing checks passes.
    let (code, _, _) = text(
        &c,
        "/livez?exclude=poststarthook/bootstrap-controller\
         &exclude=poststarthook/scheduling/bootstrap-system-priority-classes",
    )
    .await;
    assert_eq!(code, 200);

    server.ensure_cluster_objects(addr).await.unwrap();
    server.wait_caches_synced().await.unwrap();
    assert_eq!(text(&c, "/readyz").await.2, "ok");

    server.shutdown();
    let (code, _, body) = text(&c, "/readyz?verbose").await;
    assert_eq!(code, 500);
    assert!(
        body.ends_with("[-]shutdown failed: reason withheld\nreadyz check failed\n"),
        "{body}"
    );
    assert_eq!(
        text(&c, "/readyz/shutdown").await.2,
        "internal server error: process is shutting down\n"
    );
    assert_eq!(text(&c, "/livez").await.0, 200, "shutting down is not dead");
}

#[tokio::test]
async fn health_endpoints_need_no_token_but_the_api_does() {
    let s = TestServer::start_with(test_builder().token("sekret"))
        .await
        .unwrap();
    let anonymous = client_for(&s.url(), None, "default").unwrap();
    assert_eq!(text(&anonymous, "/readyz").await.0, 200);
    assert_eq!(text(&anonymous, "/livez/ping").await.0, 200);
    assert_eq!(get(&anonymous, "/version").await.0, 200);
    assert_eq!(get(&anonymous, "/api/v1/namespaces").await.0, 401);
    let wrong = client_for(&s.url(), Some("wrong"), "default").unwrap();
    assert_eq!(
        text(&wrong, "/readyz").await.0,
        401,
        "a bad token is refused"
    );
}

#[tokio::test]
async fn a_path_nothing_serves_answers_go_s_404_page() {
    let s = crate::support::start().await;
    let c = s.client().unwrap();
    let unhandled = [
        "/foo",
        "/metricz",
        "/apis/nosuch.example.com",
        "/apis/nosuch.example.com/v1",
        "/apis/nosuch.example.com/v1/things",
        "/apis/nosuch.example.com/v1/namespaces/default/things/x",
    ];
    assert_404_page(&c, &unhandled).await;
    // Under a served group, go-restful answers a Status.
    for path in [
        "/api/v1/nosuch",
        "/api/v2",
        "/apis/apps/v1/nosuch",
        "/apis/apps/v9",
    ] {
        let (code, status) = get(&c, path).await;
        assert_eq!(code, 404, "{path}");
        assert_eq!(status["reason"], "NotFound", "{path}");
        assert_eq!(
            status["message"], "the server could not find the requested resource",
            "{path}"
        );
    }
}

#[test]
fn kubectl_get_raw_readyz_verbose_lists_the_checks() {
    let Some((kc, server, _dir)) = session("readyz") else {
        return;
    };
    let out = kubectl(&kc, &server, &["get", "--raw", "/readyz?verbose"]);
    assert!(out.starts_with("[+]ping ok\n"), "{out}");
    assert!(
        out.contains("[+]poststarthook/bootstrap-controller ok\n"),
        "{out}"
    );
    assert!(out.ends_with("readyz check passed\n"), "{out}");
    assert_eq!(
        kubectl(&kc, &server, &["get", "--raw", "/livez/etcd"]),
        "ok"
    );
}
