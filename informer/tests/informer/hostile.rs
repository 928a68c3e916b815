//! Hostile input from the server as the informer sees it: watch events without a name or that
//! cannot be decoded. The cache and the handlers see none of them, and the informer goes on.
//! (Panicking handlers and index functions: shared_informer.rs, controller.rs and e2e.rs.)

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kcache_reflector::WatchEvent;
use kcache_store::Store;

use crate::common::{Cache, Recorder, Running, key, on_both_caches, pod, recv_n, source_with};
use kcache_testkit::within;

async fn nameless_and_undecodable_watch_events_reach_neither_cache_nor_handlers(cache: Cache) {
    let source = source_with(2);
    let informer = cache.builder(Arc::clone(&source)).name("pods").build();
    let (recorder, mut rx) = Recorder::new();
    informer.add_event_handler(recorder).unwrap();
    let running = Running::start(Arc::clone(&source), informer);
    running.wait_synced().await;
    recv_n(&mut rx, 2).await;
    // The list, then the watch the events go to.
    within("2 calls to the source", source.wait_for_calls(2)).await;
    source.send_event(|| WatchEvent::Added(Arc::new(Pod::default())));
    source.send_event(|| WatchEvent::Modified(Arc::new(Pod::default())));
    source.send_malformed_event();
    // The broken watch makes the informer relist; the next change still arrives.
    source.add(pod(2));
    let got = recv_n(&mut rx, 1).await;
    assert!(got[0].starts_with(&format!("add {} ", key(2))), "{got:?}");
    assert!(rx.try_recv().is_err(), "nothing else was delivered");
    let mut keys: Vec<String> = Store::list_keys(&*running.informer.indexer())
        .iter()
        .map(ToString::to_string)
        .collect();
    keys.sort();
    let mut expected = vec![key(0), key(1), key(2)];
    expected.sort();
    assert_eq!(keys, expected);
    running.stop().await;
}

on_both_caches!(
    #[tokio::test(start_paused = true)]
    nameless_and_undecodable_watch_events_reach_neither_cache_nor_handlers
);
