//! Property: whatever the sequence of changes and failures, the store ends equal to the source.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kcache_reflector::testing::FakeControllerSource;
use kcache_reflector::{ListWatchError, Reflector, ReflectorConfig, status};
use kcache_store::{Indexer, Store};
use proptest::prelude::*;

use crate::support::{connection_refused, pod, run};

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    Modify(u8),
    Delete(u8),
    EndWatches,
    ExpireWatches,
    Compact,
    FailNextWatch429,
    FailNextWatchRefused,
    FailNextList,
    Malformed,
    Bookmark,
    Advance(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u8>().prop_map(|i| Op::Add(i % 16)),
        3 => any::<u8>().prop_map(|i| Op::Modify(i % 16)),
        2 => any::<u8>().prop_map(|i| Op::Delete(i % 16)),
        1 => Just(Op::EndWatches),
        1 => Just(Op::ExpireWatches),
        1 => Just(Op::Compact),
        1 => Just(Op::FailNextWatch429),
        1 => Just(Op::FailNextWatchRefused),
        1 => Just(Op::FailNextList),
        1 => Just(Op::Malformed),
        1 => Just(Op::Bookmark),
        2 => (0u16..3000).prop_map(Op::Advance),
    ]
}

fn apply(source: &FakeControllerSource<Pod>, op: &Op) {
    let name = |i: &u8| format!("p{i}");
    match op {
        Op::Add(i) => {
            source.add(pod(&name(i), ""));
        }
        Op::Modify(i) => {
            if source.get(&format!("ns/{}", name(i))).is_some() {
                source.modify(pod(&name(i), ""));
            }
        }
        Op::Delete(i) => {
            if source.get(&format!("ns/{}", name(i))).is_some() {
                source.delete(pod(&name(i), ""));
            }
        }
        Op::EndWatches => source.end_all_watches(),
        Op::ExpireWatches => source.send_error(status::expired("too old resource version")),
        Op::Compact => source.compact(),
        Op::FailNextWatch429 => {
            source.fail_next_watch(ListWatchError::from(status::too_many_requests()))
        }
        Op::FailNextWatchRefused => source.fail_next_watch(connection_refused()),
        Op::FailNextList => {
            source.fail_next_list(ListWatchError::from(status::internal_error("etcd")))
        }
        Op::Malformed => source.send_malformed_event(),
        Op::Bookmark => source.send_bookmark(),
        Op::Advance(_) => {}
    }
}

fn converges(ops: Vec<Op>, watch_list: bool) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let source = Arc::new(FakeControllerSource::<Pod>::with_history(8));
        let store = Arc::new(Indexer::<Pod>::default());
        let reflector = Arc::new(Reflector::new(
            Arc::clone(&source),
            Arc::clone(&store),
            ReflectorConfig::default()
                .use_watch_list(watch_list)
                .page_size(3),
        ));
        let running = run(&reflector);
        for op in &ops {
            apply(&source, op);
            match op {
                Op::Advance(ms) => tokio::time::sleep(Duration::from_millis(u64::from(*ms))).await,
                _ => tokio::task::yield_now().await,
            }
        }
        // Converge on the virtual clock: queued faults can chain many backoffs (up to 60 s each).
        // Each round the source sends a bookmark, standing in for the bookmarks an API server sends
        // its watches about once a minute: a watch opened at resourceVersion 0 (the list of a
        // source that had never changed) gets the current objects, and when every change since
        // was undone before the watch opened, only a bookmark moves the reflector on.
        for _ in 0..2000 {
            if reflector.last_sync_resource_version() == source.resource_version() {
                break;
            }
            source.send_bookmark();
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        running.stop().await;
        let want = source.resource_version();
        prop_assert_eq!(reflector.last_sync_resource_version(), want);
        let mut got: Vec<_> = store
            .list()
            .iter()
            .map(|p| {
                (
                    p.metadata.name.clone().unwrap(),
                    p.metadata.resource_version.clone().unwrap(),
                )
            })
            .collect();
        got.sort();
        let mut expected = Vec::new();
        for i in 0..16u8 {
            if let Some(p) = source.get(&format!("ns/p{i}")) {
                expected.push((
                    format!("p{i}"),
                    p.metadata.resource_version.clone().unwrap(),
                ));
            }
        }
        expected.sort();
        prop_assert_eq!(got, expected);
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn store_converges_to_the_source_through_any_failures(ops in prop::collection::vec(op(), 1..60)) {
        converges(ops, false)?;
    }

    #[test]
    fn store_converges_to_the_source_with_watch_list(ops in prop::collection::vec(op(), 1..60)) {
        converges(ops, true)?;
    }
}
