//! Lists served from watch-cache snapshots (KEP-4988): paginated and exact-resourceVersion lists
//! read the snapshot at their resource version while the cache's event window has it, and
//! storage answers once it has left. To tell the two apart, some tests compact the storage
//! alone (the caches keep their windows): a list of an older revision that still answers 200
//! was read from a snapshot.

use std::sync::Arc;
use std::time::Duration;

use kcache_apiserver::{ApiServer, CacheConfig, ServerConfig, Storage, TestServer};
use kube_client::Client;
use serde_json::{Value, json};

use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// Kubernetes' message for a continue token whose revision storage compacted.
const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// A server on `backend` whose watch caches keep `capacity` events (and so as many snapshots),
/// with the storage it runs on.
async fn server(
    backend: Backend,
    capacity: usize,
) -> Option<(Backed<Arc<dyn Storage>>, TestServer)> {
    let storage = backend.storage().await?;
    let config = ServerConfig {
        cache: CacheConfig {
            capacity,
            freshness_timeout: Duration::from_millis(300),
            ..CacheConfig::default()
        },
        ..ServerConfig::default()
    };
    let server = TestServer::start_with(
        ApiServer::builder()
            .config(config)
            .storage(Arc::clone(&storage.inner)),
    )
    .await
    .unwrap();
    Some((storage, server))
}

/// Creates configmaps `cm-00` … in `default`; their resource versions.
async fn seed(c: &Client, n: usize) -> Vec<u64> {
    let mut rvs = Vec::new();
    for i in 0..n {
        let (code, cm) = post(c, CMS, &configmap(&format!("cm-{i:02}"), "old")).await;
        assert_eq!(code, 201, "{cm}");
        rvs.push(rv(&cm));
    }
    rvs
}

/// Compacts the storage at its current revision, leaving the watch caches' windows as they are.
async fn compact_storage(s: &TestServer) {
    let rev = s.server().storage_revision().await.unwrap();
    s.server().storage().compact(rev).await.unwrap();
}

/// Waits until the caches have every write so far: a list with no resource version is a
/// consistent read, which the cache answers once it has reached the storage's revision.
async fn sync(c: &Client) {
    let (code, _) = get(c, CMS).await;
    assert_eq!(code, 200);
}

fn continue_of(list: &Value) -> Option<String> {
    list["metadata"]["continue"].as_str().map(str::to_owned)
}

fn value_of(list: &Value, name: &str) -> Option<String> {
    list["items"]
        .as_array()?
        .iter()
        .find(|i| i["metadata"]["name"] == name)
        .and_then(|i| i["data"]["v"].as_str())
        .map(str::to_owned)
}

/// Follows `first`'s continue tokens on `path` (with `query`) to the end; every page.
async fn pages(c: &Client, path: &str, query: &str, first: Value) -> Vec<Value> {
    let mut pages = vec![first];
    while let Some(token) = pages.last().and_then(continue_of) {
        let (code, page) = get(c, &format!("{path}?{query}&continue={token}")).await;
        assert_eq!(code, 200, "{page}");
        pages.push(page);
    }
    pages
}

async fn a_paginated_list_from_the_cache_walks_every_object_once_in_key_order_at_one_resource_version(
    backend: Backend,
) {
    let Some((_storage, s)) = server(backend, 10_000).await else {
        return;
    };
    let c = client(&s);
    seed(&c, 10).await;
    let (code, first) = get(&c, &format!("{CMS}?limit=3")).await;
    assert_eq!(code, 200, "{first}");
    assert_eq!(first["metadata"]["remainingItemCount"], 7);
    // Between the pages: objects created before and among the rest, one not yet listed
    // updated and one deleted, one already listed updated. Then storage forgets the list's
    // revision: only the cache's snapshot can answer the rest.
    for name in ["aaa", "cm-05a", "zzz"] {
        post(&c, CMS, &configmap(name, "new")).await;
    }
    let (code, _) = put(&c, &format!("{CMS}/cm-07"), &configmap("cm-07", "new")).await;
    assert_eq!(code, 200);
    let (code, _) = put(&c, &format!("{CMS}/cm-01"), &configmap("cm-01", "new")).await;
    assert_eq!(code, 200);
    let (code, _) = request(&c, "DELETE", &format!("{CMS}/cm-08"), None).await;
    assert_eq!(code, 200);
    compact_storage(&s).await;

    let pages = pages(&c, CMS, "limit=3", first).await;
    let listed: Vec<String> = pages.iter().flat_map(names).collect();
    let expected: Vec<String> = (0..10).map(|i| format!("cm-{i:02}")).collect();
    assert_eq!(
        listed, expected,
        "every object once, in key order, as at the first page"
    );
    for page in &pages {
        assert_eq!(
            page["metadata"]["resourceVersion"],
            pages[0]["metadata"]["resourceVersion"]
        );
        assert!(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .all(|i| i["data"]["v"] == "old")
        );
    }
    let remaining: Vec<Value> = pages
        .iter()
        .map(|p| p["metadata"]["remainingItemCount"].clone())
        .collect();
    assert_eq!(remaining, [json!(7), json!(4), json!(1), Value::Null]);
}

async fn a_continue_whose_snapshot_left_the_window_is_served_by_storage(backend: Backend) {
    let Some((_storage, s)) = server(backend, 2).await else {
        return;
    };
    let c = client(&s);
    seed(&c, 5).await;
    let (_, first) = get(&c, &format!("{CMS}?limit=2")).await;
    // Three more events push the first page's snapshot out of a window of two.
    for name in ["zz-0", "zz-1", "zz-2"] {
        post(&c, CMS, &configmap(name, "new")).await;
    }
    sync(&c).await;
    let token = continue_of(&first).unwrap();
    let (code, second) = get(&c, &format!("{CMS}?limit=2&continue={token}")).await;
    assert_eq!(code, 200, "{second}");
    assert_eq!(names(&second), ["cm-02", "cm-03"]);
    assert_eq!(
        second["metadata"]["resourceVersion"],
        first["metadata"]["resourceVersion"]
    );
    assert_eq!(second["metadata"]["remainingItemCount"], 1);

    // Once storage compacted the revision too, the continue is storage's 410.
    let (_, first) = get(&c, &format!("{CMS}?limit=2")).await;
    for name in ["zz-3", "zz-4", "zz-5"] {
        post(&c, CMS, &configmap(name, "new")).await;
    }
    sync(&c).await;
    compact_storage(&s).await;
    let token = continue_of(&first).unwrap();
    let (code, status) = get(&c, &format!("{CMS}?limit=2&continue={token}")).await;
    assert_eq!(code, 410, "{status}");
    assert_eq!(status["reason"], "Expired");
    assert_eq!(status["message"], CONTINUE_EXPIRED);
}

async fn exact_resource_version_lists_read_the_snapshot_at_that_resource_version(backend: Backend) {
    let Some((_storage, s)) = server(backend, 10_000).await else {
        return;
    };
    let c = client(&s);
    let rvs = seed(&c, 2).await;
    // A write of another resource: a revision at which no configmap changed.
    let (code, secret) = post(
        &c,
        "/api/v1/namespaces/default/secrets",
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
    )
    .await;
    assert_eq!(code, 201, "{secret}");
    let (_, updated) = put(&c, &format!("{CMS}/cm-00"), &configmap("cm-00", "new")).await;
    let (code, _) = request(&c, "DELETE", &format!("{CMS}/cm-01"), None).await;
    assert_eq!(code, 200);
    sync(&c).await;
    compact_storage(&s).await;

    let exact = |rv: u64| format!("{CMS}?resourceVersion={rv}&resourceVersionMatch=Exact");
    let (code, at_first) = get(&c, &exact(rvs[0])).await;
    assert_eq!(code, 200, "{at_first}");
    assert_eq!(names(&at_first), ["cm-00"]);
    assert_eq!(at_first["metadata"]["resourceVersion"], rvs[0].to_string());
    let (_, at_secret) = get(&c, &exact(rv(&secret))).await;
    assert_eq!(names(&at_secret), ["cm-00", "cm-01"]);
    assert_eq!(value_of(&at_secret, "cm-00").as_deref(), Some("old"));
    assert_eq!(
        at_secret["metadata"]["resourceVersion"],
        rv(&secret).to_string()
    );

    // resourceVersion=N with a limit is exact too (legacy), and pages continue at N.
    let query = format!("resourceVersion={}&limit=1", rv(&updated));
    let (code, first) = get(&c, &format!("{CMS}?{query}")).await;
    assert_eq!(code, 200, "{first}");
    let pages = pages(&c, CMS, "limit=1", first).await;
    let listed: Vec<Option<String>> = pages.iter().map(|p| value_of(p, &names(p)[0])).collect();
    assert_eq!(
        pages.iter().flat_map(names).collect::<Vec<_>>(),
        ["cm-00", "cm-01"]
    );
    assert_eq!(listed, [Some("new".to_owned()), Some("old".to_owned())]);

    // Once the window is emptied, storage answers, and it compacted those revisions.
    s.compact_now().await.unwrap();
    let (code, status) = get(&c, &exact(rvs[0])).await;
    assert_eq!(code, 410, "{status}");
    assert_eq!(status["reason"], "Expired");
}

on_every_backend!(
    a_paginated_list_from_the_cache_walks_every_object_once_in_key_order_at_one_resource_version,
    a_continue_whose_snapshot_left_the_window_is_served_by_storage,
    exact_resource_version_lists_read_the_snapshot_at_that_resource_version,
);

#[tokio::test]
async fn selectors_with_a_limit_page_the_cache_in_key_order_without_a_remaining_count() {
    let s = start().await;
    let c = client(&s);
    for i in 0..6 {
        let app = if i % 2 == 0 { "web" } else { "db" };
        let node = if i < 3 { "n1" } else { "n2" };
        for ns in ["default", "kube-public"] {
            let pods = format!("/api/v1/namespaces/{ns}/pods");
            let (code, p) = post(&c, &pods, &pod(ns, &format!("p{i}"), node, "Running", app)).await;
            assert_eq!(code, 201, "{p}");
        }
    }
    // Every walk's first page, then a write and a compaction: storage can no longer read the
    // pages' revision, so the rest comes from the cache's snapshot.
    let pods = "/api/v1/namespaces/default/pods";
    let web_query = "labelSelector=app%3Dweb&limit=2";
    let (_, web) = get(&c, &format!("{pods}?{web_query}")).await;
    let n2_query = "fieldSelector=spec.nodeName%3Dn2&limit=1";
    let (_, on_n2) = get(
        &c,
        &format!("/api/v1/namespaces/kube-public/pods?{n2_query}"),
    )
    .await;
    let (_, first) = get(&c, "/api/v1/pods?limit=1").await;
    post(&c, CMS, &configmap("later", "x")).await;
    compact_storage(&s).await;

    let web = pages(&c, pods, web_query, web).await;
    assert_eq!(
        web.iter().flat_map(names).collect::<Vec<_>>(),
        ["p0", "p2", "p4"]
    );
    assert!(
        web.iter()
            .all(|p| p["metadata"].get("remainingItemCount").is_none())
    );
    assert!(continue_of(&web[0]).is_some());

    let on_n2 = pages(&c, "/api/v1/namespaces/kube-public/pods", n2_query, on_n2).await;
    let listed: Vec<(String, String)> = on_n2
        .iter()
        .flat_map(|p| p["items"].as_array().unwrap().clone())
        .map(|i| {
            let meta = &i["metadata"];
            (
                meta["namespace"].as_str().unwrap().to_owned(),
                meta["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = ["p3", "p4", "p5"]
        .map(|n| ("kube-public".to_owned(), n.to_owned()))
        .into();
    assert_eq!(listed, expected);

    // A cluster-wide walk (begun before storage compacted) lists namespace by namespace.
    let all = pages(&c, "/api/v1/pods", "limit=1", first).await;
    let keys: Vec<String> = all
        .iter()
        .flat_map(|p| p["items"].as_array().unwrap().clone())
        .map(|i| {
            format!(
                "{}/{}",
                i["metadata"]["namespace"].as_str().unwrap(),
                i["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys.len(), 12);
    assert_eq!(keys, sorted);
}

#[tokio::test]
async fn not_older_than_and_consistent_lists_honour_the_limit_and_resource_version_0_does_not() {
    let s = start().await;
    let c = client(&s);
    let rvs = seed(&c, 4).await;
    let query = format!(
        "resourceVersion={}&resourceVersionMatch=NotOlderThan&limit=3",
        rvs[3]
    );
    let (code, newer) = get(&c, &format!("{CMS}?{query}")).await;
    assert_eq!(code, 200, "{newer}");
    assert_eq!(names(&newer), ["cm-00", "cm-01", "cm-02"]);
    assert_eq!(newer["metadata"]["remainingItemCount"], 1);
    let (_, consistent) = get(&c, &format!("{CMS}?limit=3")).await;
    assert_eq!(names(&consistent), ["cm-00", "cm-01", "cm-02"]);
    assert!(continue_of(&consistent).is_some());
    let (_, any) = get(&c, &format!("{CMS}?resourceVersion=0&limit=3")).await;
    assert_eq!(
        names(&any).len(),
        4,
        "the limit of a list at resource version 0 is ignored"
    );
    assert!(continue_of(&any).is_none());
}
