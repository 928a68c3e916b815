//! Hostile requests: bad selectors, continue tokens and query parameters, malformed and
//! non-UTF-8 bodies. Each is a 4xx answered with a `Status`, never a panic or a 5xx, and
//! nothing stored changes.

use kcache_apiserver::TestServer;
use kube_client::Client;
use serde_json::{Value, json};

use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// What is stored: every config map's name and resource version, and the list's resource
/// version (which any write would advance).
async fn stored(c: &Client) -> (Vec<(String, String)>, String) {
    let (code, list) = get(c, CMS).await;
    assert_eq!(code, 200, "{list}");
    let items = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap().to_owned(),
                i["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    (items, rv)
}

/// Asserts a 4xx with a `Status` body carrying the same code.
fn assert_rejected(what: &str, code: u16, body: &Value) {
    assert!((400..500).contains(&code), "{what}: {code} {body}");
    assert_eq!(body["kind"], "Status", "{what}: {body}");
    assert_eq!(body["status"], "Failure", "{what}: {body}");
    assert_eq!(body["code"], code, "{what}: {body}");
}

/// Percent-encodes every byte (the path of a request must stay ASCII).
fn encoded(s: &[u8]) -> String {
    s.iter().map(|b| format!("%{b:02X}")).collect()
}

/// Base64 (URL-safe, unpadded) of `json`, as continue tokens are.
fn token(json: &Value) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json.to_string())
}

/// A server holding config map "a", a client, and what is stored.
async fn one_config_map() -> (TestServer, Client, (Vec<(String, String)>, String)) {
    let s = start().await;
    let c = client(&s);
    post(&c, CMS, &configmap("a", "1")).await;
    let before = stored(&c).await;
    (s, c, before)
}

#[tokio::test]
async fn bad_selectors_tokens_and_parameters_are_4xx_statuses_and_change_nothing() {
    let (_server, c, before) = one_config_map().await;
    let mut queries: Vec<String> = Vec::new();
    for selector in [
        "a €",
        "a in (€)",
        "a notin (€)",
        "a in web",
        "==",
        "a in (b",
        "!",
    ] {
        queries.push(format!("labelSelector={}", encoded(selector.as_bytes())));
    }
    for selector in [
        "metadata.name€€",
        "€",
        "nonsense",
        "a\\",
        "=x",
        "spec.unknown=x",
    ] {
        queries.push(format!("fieldSelector={}", encoded(selector.as_bytes())));
    }
    // Not UTF-8 once decoded: not a label value. (In a field selector's value it is only a
    // value nothing has, as on a real server: see the next test.)
    queries.push(format!("labelSelector={}", encoded(b"a=\xff\xfe")));
    for t in [
        "not base64!".to_owned(),
        token(&json!("just a string")),
        token(&json!({"v": "meta.k8s.io/v2", "rv": 1, "start": "a"})),
        token(&json!({"v": "meta.k8s.io/v1", "rv": 1, "start": "../x"})),
        token(&json!({"v": "meta.k8s.io/v1", "rv": 1, "start": ""})),
        "€€€".to_owned(),
        // Not refused by Kubernetes, so not here: a start of `/etc` (read as `etc`, under the
        // resource's prefix) and a negative revision (a "consistent continue", which this
        // server does not serve: see the README's "What still differs").
    ] {
        queries.push(format!("limit=1&continue={}", encoded(t.as_bytes())));
    }
    queries.extend(
        [
            "limit=abc",
            "limit=1e3",
            "resourceVersionMatch=Sometimes&resourceVersion=1",
            "sendInitialEvents=true",
            "watch=1&timeoutSeconds=soon",
            "watch=1&timeoutSeconds=-1",
        ]
        .map(String::from),
    );
    for query in &queries {
        let (code, body) = get(&c, &format!("{CMS}?{query}")).await;
        assert_rejected(query, code, &body);
    }
    assert_eq!(stored(&c).await, before);
}

#[tokio::test]
async fn continue_tokens_pointing_outside_the_namespace_list_only_the_namespace() {
    let (_server, c, _) = one_config_map().await;
    let (code, _) = post(
        &c,
        "/api/v1/namespaces/kube-public/configmaps",
        &configmap("b", "1"),
    )
    .await;
    assert_eq!(code, 201);
    let (_, list) = get(&c, CMS).await;
    let rv: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    for (start, expected) in [
        ("kube-public/b", vec![]),
        ("a", vec!["a"]),
        ("/a", vec!["a"]),
        ("\u{10ffff}", vec![]),
    ] {
        let t = token(&json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start}));
        let (code, page) = get(&c, &format!("{CMS}?limit=5&continue={t}")).await;
        assert_eq!(code, 200, "{start:?}: {page}");
        assert_eq!(names(&page), expected, "{start:?}");
    }
}

#[tokio::test]
async fn a_field_selector_not_utf8_once_decoded_selects_nothing_as_on_a_real_server() {
    // A real API server does not check a field selector's value for UTF-8: the bytes are only a
    // value no object has, so a list answers 200 with no items and a delete-collection deletes
    // nothing.
    let (_server, c, before) = one_config_map().await;
    let selector = encoded(b"metadata.name=\xff\xfe");
    for method in ["GET", "DELETE"] {
        let (code, list) =
            request(&c, method, &format!("{CMS}?fieldSelector={selector}"), None).await;
        assert_eq!(code, 200, "{method}: {list}");
        assert_eq!(list["items"], json!([]), "{method}: {list}");
    }
    assert_eq!(stored(&c).await, before);
}

#[tokio::test]
async fn malformed_and_non_utf8_bodies_are_4xx_statuses_and_change_nothing() {
    let (_server, c, before) = one_config_map().await;
    let bodies: [&[u8]; 9] = [
        b"",
        b"{",
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b""#,
        b"[1,2,3]",
        b"null",
        b"\xff\xfe\x00\x01",
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b\xff"}}"#,
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":5}}"#,
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":"b"}"#,
    ];
    for body in bodies {
        let shown = String::from_utf8_lossy(body);
        let (code, status) =
            request(&c, "POST", CMS, Some(("application/json", body.to_vec()))).await;
        assert_rejected(&format!("POST {shown}"), code, &status);
        let (code, status) = request(
            &c,
            "PUT",
            &format!("{CMS}/a"),
            Some(("application/json", body.to_vec())),
        )
        .await;
        assert_rejected(&format!("PUT {shown}"), code, &status);
        for patch_type in [
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/json-patch+json",
        ] {
            let (code, status) = request(
                &c,
                "PATCH",
                &format!("{CMS}/a"),
                Some((patch_type, body.to_vec())),
            )
            .await;
            // `null` is a JSON patch without operations (`jsonpatch.DecodePatch`) and a
            // strategic merge patch without changes: both change nothing; as a merge patch it
            // is json-patch's `ErrBadJSONPatch`. Every other body is rejected.
            if body == b"null" && patch_type != "application/merge-patch+json" {
                assert_eq!(code, 200, "PATCH {patch_type} null: {status}");
                continue;
            }
            assert_rejected(&format!("PATCH {patch_type} {shown}"), code, &status);
        }
    }
    let (code, status) = request(&c, "POST", CMS, Some(("text/plain", b"a: b".to_vec()))).await;
    assert_rejected("POST text/plain", code, &status);
    assert_eq!(stored(&c).await, before);
}
