//! Resource versions and pagination of lists.

use std::sync::Arc;

use kcache_reflector::testing::{Call, FakeControllerSource};
use kcache_reflector::{
    ListOptions, ListSemantic, ListWatchError, Reflector, ReflectorConfig, WatchEvent, status,
};
use kcache_store::Indexer;

use crate::support::*;
use kcache_testkit::within;

#[tokio::test(start_paused = true)]
async fn list_rv_0_limit_500_then_watch_at_list_rv() {
    let source = Arc::new(FakeControllerSource::<k8s_openapi::api::core::v1::Pod>::new());
    for i in 0..3 {
        source.add(pod(&format!("p{i}"), ""));
    }
    let store = Arc::new(Indexer::default());
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::clone(&store),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    within("2 calls to the source", source.wait_for_calls(2)).await;
    let calls = source.calls();
    assert_eq!(
        calls[0],
        Call::List(ListOptions {
            resource_version: Some("0".into()),
            limit: Some(500),
            ..ListOptions::default()
        })
    );
    let Call::Watch(watch) = &calls[1] else {
        panic!("expected a watch, got {:?}", calls[1])
    };
    assert_eq!(watch.resource_version.as_deref(), Some("3"));
    assert!(watch.allow_watch_bookmarks);
    assert_eq!(watch.send_initial_events, None);
    assert_eq!(store.len(), 3);
    assert_eq!(reflector.last_sync_resource_version(), "3");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn rvs_after_expired_are_0_10_empty() {
    let (lw, mut calls) = scripted(
        |_, o| match o.resource_version.as_deref().unwrap_or("") {
            "0" => Ok(page(vec![], "10", None)),
            "10" => Err(ListWatchError::from(status::expired("too old"))),
            _ => Ok(page(vec![], "10", None)),
        },
        |n, _| match n {
            0 => Ok(events_then_close(vec![WatchEvent::Error(status::expired(
                "too old",
            ))])),
            _ => Ok(pending_stream()),
        },
    );
    let store = Arc::new(RecordingStore::default());
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::clone(&store),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    let got = next_calls(&mut calls, 5).await;
    assert_eq!(list_rvs(&got), ["0", "10", ""]);
    // The relist at "" succeeded: the next watch is at its resource version.
    assert_eq!(opts(&got[4]).resource_version.as_deref(), Some("10"));
    assert!(!is_list(&got[4]));
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn expired_continue_lists_in_full_at_the_same_rv() {
    // client-go's TestReflectorFullListIfExpired: "0", "10", "" (continue), "10" (no limit).
    let (lw, mut calls) = scripted(
        |_, o| {
            let rv = o.resource_version.as_deref().unwrap_or("");
            match (rv, o.continue_token.as_deref(), o.limit) {
                ("0", None, Some(4)) => Ok(page(vec![pod("a", "1")], "10", None)),
                ("10", None, Some(4)) => Ok(page(vec![pod("a", "1")], "11", Some("C1"))),
                ("", Some("C1"), Some(4)) => {
                    Err(ListWatchError::from(status::expired("continue expired")))
                }
                ("10", None, None) => Ok(page(vec![pod("a", "1"), pod("b", "2")], "11", None)),
                other => Err(ListWatchError::Other(
                    format!("unexpected list {other:?}").into(),
                )),
            }
        },
        |n, _| match n {
            0 => Ok(events_then_close(vec![WatchEvent::Error(status::expired(
                "too old",
            ))])),
            _ => Ok(pending_stream()),
        },
    );
    let store = Arc::new(RecordingStore::default());
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::clone(&store),
        ReflectorConfig::default().page_size(4),
    ));
    let running = run(&reflector);
    let got = next_calls(&mut calls, 6).await;
    assert_eq!(list_rvs(&got), ["0", "10", "", "10"]);
    let lists: Vec<_> = got.iter().filter(|c| is_list(c)).collect();
    assert_eq!(opts(lists[2]).continue_token.as_deref(), Some("C1"));
    assert_eq!(opts(lists[3]).limit, None);
    assert_eq!(store.inner.len(), 2);
    assert_eq!(reflector.last_sync_resource_version(), "11");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn three_too_large_rv_error_forms_relist_at_empty() {
    // client-go's TestReflectorFullListIfTooLarge: each form makes the relist retry at "".
    let (lw, mut calls) = scripted(
        |n, o| match (n, o.resource_version.as_deref().unwrap_or("")) {
            (0, "0") => Ok(page(vec![], "20", None)),
            (1, "20") => Err(ListWatchError::from(status::too_large_resource_version())),
            (2, "") => Ok(page(vec![], "30", None)),
            (3, "30") => Err(ListWatchError::from(
                status::too_large_resource_version_cause_message(),
            )),
            (4, "") => Ok(page(vec![], "40", None)),
            (5, "40") => Err(ListWatchError::from(
                status::too_large_resource_version_message(),
            )),
            (6, "") => Ok(page(vec![], "50", None)),
            other => Err(ListWatchError::Other(
                format!("unexpected list {other:?}").into(),
            )),
        },
        // Every watch fails with Expired: a relist at the last synced resource version follows.
        expired_watch,
    );
    let store = Arc::new(RecordingStore::default());
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::clone(&store),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    let got = next_calls(&mut calls, 11).await;
    assert_eq!(list_rvs(&got), ["0", "20", "", "30", "", "40", ""]);
    assert_eq!(reflector.last_sync_resource_version(), "50");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn page_size_rules() {
    // Default: the first list (RV "0") asks for 500; a relist at a known RV asks for no limit
    // because the first list was not paginated.
    let (lw, mut calls) = scripted(|_, _| Ok(page(vec![], "10", None)), expired_watch);
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    let got = next_calls(&mut calls, 3).await;
    assert_eq!(opts(&got[0]).limit, Some(500));
    assert_eq!(opts(&got[2]).resource_version.as_deref(), Some("10"));
    assert_eq!(
        opts(&got[2]).limit,
        None,
        "relist at an RV is served unpaginated"
    );
    running.stop().await;

    // The first list came back paginated: later lists keep paging with the default size.
    let (lw, mut calls) = scripted(
        |_, o| match o.continue_token.as_deref() {
            None if o.resource_version.as_deref() == Some("0") => {
                Ok(page(vec![pod("a", "1")], "10", Some("c")))
            }
            _ => Ok(page(vec![pod("b", "2")], "10", None)),
        },
        expired_watch,
    );
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorConfig::default(),
    ));
    let running = run(&reflector);
    let got = next_calls(&mut calls, 4).await;
    assert_eq!(opts(&got[0]).limit, Some(500));
    assert_eq!(opts(&got[1]).continue_token.as_deref(), Some("c"));
    assert_eq!(
        opts(&got[1]).resource_version,
        None,
        "continuation pages carry no RV"
    );
    assert_eq!(opts(&got[3]).resource_version.as_deref(), Some("10"));
    assert_eq!(
        opts(&got[3]).limit,
        Some(500),
        "a paginating server keeps being paged"
    );
    running.stop().await;

    // An explicit page size is always used.
    let (lw, mut calls) = scripted(|_, _| Ok(page(vec![], "10", None)), expired_watch);
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorConfig::default().page_size(7),
    ));
    let running = run(&reflector);
    let got = next_calls(&mut calls, 3).await;
    assert_eq!(opts(&got[0]).limit, Some(7));
    assert_eq!(opts(&got[2]).limit, Some(7));
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_most_recent_list_semantic_lists_first_at_the_newest_state_in_pages() {
    let (lw, mut calls) = scripted(
        |_, o| match o.continue_token.as_deref() {
            None => Ok(page(vec![pod("a", "1")], "10", Some("c"))),
            Some(_) => Ok(page(vec![pod("b", "2")], "10", None)),
        },
        expired_watch,
    );
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorConfig::default().list_semantic(ListSemantic::MostRecent),
    ));
    let running = run(&reflector);
    let got = next_calls(&mut calls, 4).await;
    assert_eq!(
        opts(&got[0]).resource_version,
        None,
        "the most recent state"
    );
    assert_eq!(opts(&got[0]).limit, Some(500));
    assert_eq!(opts(&got[1]).continue_token.as_deref(), Some("c"));
    // Later relists are at the last synced resource version, as with the default, and paged.
    assert_eq!(opts(&got[3]).resource_version.as_deref(), Some("10"));
    assert_eq!(opts(&got[3]).limit, Some(500));
    assert_eq!(reflector.last_sync_resource_version(), "10");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn paginated_list_collects_every_page_into_one_replace() {
    let source = Arc::new(FakeControllerSource::new());
    for i in 0..25 {
        source.add(pod(&format!("p{i:02}"), ""));
    }
    let store = Arc::new(RecordingStore::default());
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::clone(&store),
        ReflectorConfig::default().page_size(10),
    ));
    let running = run(&reflector);
    store.wait_for("replace 25 25").await;
    let lists = source.list_calls();
    assert_eq!(lists.len(), 3);
    assert_eq!(store.ops_starting("replace"), ["replace 25 25"]);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn paginated_list_syncs_at_the_first_pages_resource_version() {
    // A server reporting its current resource version on later pages: b changed after the
    // snapshot, the watch must start at the snapshot's to see that change.
    let (lw, mut calls) = scripted(
        |_, o| match o.continue_token.as_deref() {
            None => Ok(page(vec![pod("a", "9")], "10", Some("c"))),
            Some(_) => Ok(page(vec![pod("b", "8")], "12", None)),
        },
        |_, _| Ok(pending_stream()),
    );
    let store = Arc::new(RecordingStore::default());
    let reflector = Arc::new(Reflector::new(
        lw,
        Arc::clone(&store),
        ReflectorConfig::default().page_size(1),
    ));
    let running = run(&reflector);
    let calls = next_calls(&mut calls, 3).await;
    assert!(!is_list(&calls[2]));
    assert_eq!(opts(&calls[2]).resource_version.as_deref(), Some("10"));
    assert_eq!(store.ops_starting("replace"), ["replace 2 10"]);
    assert_eq!(reflector.last_sync_resource_version(), "10");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn list_errors_reach_the_error_handler_and_retry_after_backoff() {
    let source = Arc::new(FakeControllerSource::new());
    source.add(pod("a", ""));
    source.fail_next_list(ListWatchError::from(status::internal_error("boom")));
    let errors = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let store = Arc::new(Indexer::default());
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::clone(&store),
        ReflectorConfig::default().watch_error_handler({
            let errors = Arc::clone(&errors);
            move |e| {
                let cause = e.list_watch_error().map(ToString::to_string);
                errors.lock().push((e.to_string(), cause));
            }
        }),
    ));
    let running = run(&reflector);
    within("3 calls to the source", source.wait_for_calls(3)).await;
    assert_eq!(errors.lock().len(), 1);
    let (error, cause) = errors.lock()[0].clone();
    assert!(error.ends_with("failed to list"), "{error}");
    assert!(cause.is_some_and(|c| c.contains("boom")));
    // The failed list did not count as a sync: the retry is at "0" again.
    assert_eq!(source.list_resource_versions(), ["0", "0"]);
    assert_eq!(store.len(), 1);
    running.stop().await;
}

/// A store taking a replace page by page: records each page's names and the end.
#[derive(Default)]
struct PagedStore {
    ops: parking_lot::Mutex<Vec<String>>,
}

struct Pages<'a>(&'a PagedStore);

impl kcache_reflector::PagedReplace<k8s_openapi::api::core::v1::Pod> for Pages<'_> {
    fn ready(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(async { self.0.ops.lock().push("ready".into()) })
    }
    fn page(
        &mut self,
        items: Vec<Arc<k8s_openapi::api::core::v1::Pod>>,
    ) -> Result<(), kcache_store::StoreError> {
        let names: Vec<&str> = items
            .iter()
            .filter_map(|p| p.metadata.name.as_deref())
            .collect();
        self.0.ops.lock().push(format!("page {}", names.join(",")));
        Ok(())
    }
    fn finish(self: Box<Self>, resource_version: &str) -> Result<(), kcache_store::StoreError> {
        self.0.ops.lock().push(format!("finish {resource_version}"));
        Ok(())
    }
}

impl kcache_reflector::ReflectorStore<k8s_openapi::api::core::v1::Pod> for PagedStore {
    fn add(&self, _: Arc<k8s_openapi::api::core::v1::Pod>) -> Result<(), kcache_store::StoreError> {
        Ok(())
    }
    fn update(
        &self,
        _: Arc<k8s_openapi::api::core::v1::Pod>,
    ) -> Result<(), kcache_store::StoreError> {
        Ok(())
    }
    fn delete(
        &self,
        _: Arc<k8s_openapi::api::core::v1::Pod>,
    ) -> Result<(), kcache_store::StoreError> {
        Ok(())
    }
    fn replace(
        &self,
        items: Vec<Arc<k8s_openapi::api::core::v1::Pod>>,
        _: &str,
    ) -> Result<(), kcache_store::StoreError> {
        self.ops.lock().push(format!("replace {}", items.len()));
        Ok(())
    }
    fn replace_in_pages(
        &self,
    ) -> Option<Box<dyn kcache_reflector::PagedReplace<k8s_openapi::api::core::v1::Pod> + '_>> {
        Some(Box::new(Pages(self)))
    }
}

#[tokio::test(start_paused = true)]
async fn a_store_taking_pages_is_given_each_page_once_ready_then_the_lists_resource_version() {
    let source = Arc::new(FakeControllerSource::<k8s_openapi::api::core::v1::Pod>::new());
    for i in 0..5 {
        source.add(pod(&format!("p{i}"), ""));
    }
    let store = Arc::new(PagedStore::default());
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::clone(&store),
        ReflectorConfig::default().page_size(2),
    ));
    let running = run(&reflector);
    // Three list pages, then the watch.
    within("4 calls to the source", source.wait_for_calls(4)).await;
    assert_eq!(
        *store.ops.lock(),
        [
            "ready",
            "page p0,p1",
            "ready",
            "page p2,p3",
            "ready",
            "page p4",
            "finish 5"
        ]
    );
    assert_eq!(reflector.last_sync_resource_version(), "5");
    running.stop().await;
}
