//! The fake source itself: pagination, history, faults.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kcache_reflector::testing::FakeControllerSource;
use kcache_reflector::{
    ListOptions, ListWatchError, ListerWatcher, WatchEvent, is_expired, status,
};

use crate::support::pod;
use kcache_testkit::within;

#[tokio::test(start_paused = true)]
async fn fake_source_paginates_with_continue_tokens() {
    let source = FakeControllerSource::<Pod>::new();
    for i in 0..5 {
        source.add(pod(&format!("p{i}"), ""));
    }
    let mut options = ListOptions {
        limit: Some(2),
        ..ListOptions::default()
    };
    let mut names = Vec::new();
    loop {
        let page = source.list(&options).await.unwrap();
        assert_eq!(page.resource_version, "5");
        names.extend(page.items.iter().map(|p| p.metadata.name.clone().unwrap()));
        match page.continue_token {
            Some(c) => options.continue_token = Some(c),
            None => break,
        }
    }
    assert_eq!(names, ["p0", "p1", "p2", "p3", "p4"]);
}

#[tokio::test(start_paused = true)]
async fn fake_source_expires_continue_tokens_after_compaction() {
    let source = FakeControllerSource::<Pod>::new();
    for i in 0..3 {
        source.add(pod(&format!("p{i}"), ""));
    }
    let page = source
        .list(&ListOptions {
            limit: Some(1),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    source.compact();
    let next = ListOptions {
        limit: Some(1),
        continue_token: page.continue_token,
        ..ListOptions::default()
    };
    let err = source.list(&next).await.unwrap_err();
    assert!(is_expired(&err));
}

#[tokio::test(start_paused = true)]
async fn fake_source_watch_replays_history_and_expires_old_rvs() {
    let source = FakeControllerSource::<Pod>::with_history(2);
    for i in 0..4 {
        source.add(pod(&format!("p{i}"), ""));
    }
    let from = |rv: &str| ListOptions {
        resource_version: Some(rv.into()),
        ..ListOptions::default()
    };
    let mut w = source.watch(&from("2")).await.unwrap();
    for expected in ["3", "4"] {
        let Some(Ok(WatchEvent::Added(p))) = within("the next watch event", w.next()).await else {
            panic!()
        };
        assert_eq!(p.metadata.resource_version.as_deref(), Some(expected));
    }
    let mut old = source.watch(&from("1")).await.unwrap();
    let Some(Ok(WatchEvent::Error(s))) = within("the next watch event", old.next()).await else {
        panic!("expected an Expired event")
    };
    assert_eq!(s.code, 410);
    assert!(within("the next watch event", old.next()).await.is_none());
}

#[tokio::test(start_paused = true)]
async fn fake_source_fault_injection() {
    let source = Arc::new(FakeControllerSource::<Pod>::new());
    source.fail_next_list(ListWatchError::Connection("refused".into()));
    assert!(source.list(&ListOptions::default()).await.is_err());
    assert!(source.list(&ListOptions::default()).await.is_ok());
    let mut w = source.watch(&ListOptions::default()).await.unwrap();
    source.send_malformed_event();
    assert!(matches!(
        within("the next watch event", w.next()).await,
        Some(Err(ListWatchError::Decode { .. }))
    ));
    source.send_error(status::too_many_requests());
    assert!(matches!(
        within("the next watch event", w.next()).await,
        Some(Ok(WatchEvent::Error(_)))
    ));
    assert!(within("the next watch event", w.next()).await.is_none());
    assert_eq!(source.watchers(), 0);
}
