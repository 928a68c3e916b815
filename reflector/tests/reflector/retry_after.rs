//! A server shedding load: the reflector honours Retry-After and never requests faster than its
//! backoff schedule during a storm of 429s (paused time: the delays are virtual).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kcache_reflector::testing::FakeControllerSource;
use kcache_reflector::{
    BackoffConfig, ListWatchError, Reflector, ReflectorConfig, TokenBucket, retry_after, status,
};
use kcache_store::Indexer;
use tokio::time::Instant;

use crate::support::{pod, run};

const DEADLINE: Duration = Duration::from_secs(600);

fn reflector_over(
    source: &Arc<FakeControllerSource<Pod>>,
) -> Arc<Reflector<Pod, Arc<FakeControllerSource<Pod>>, Indexer<Pod>>> {
    Arc::new(Reflector::new(
        Arc::clone(source),
        Arc::new(Indexer::default()),
        ReflectorConfig::default(),
    ))
}

/// Virtual time from the reflector's start until a source holding one pod, with `fault`
/// injected, has seen `calls` requests.
async fn time_until_calls(
    fault: impl FnOnce(&FakeControllerSource<Pod>),
    calls: usize,
) -> Duration {
    let source = Arc::new(FakeControllerSource::new());
    source.add(pod("a", ""));
    fault(&source);
    let reflector = reflector_over(&source);
    let start = Instant::now();
    let running = run(&reflector);
    tokio::time::timeout(DEADLINE, source.wait_for_calls(calls))
        .await
        .unwrap();
    let elapsed = start.elapsed();
    running.stop().await;
    elapsed
}

fn too_many(retry_after_seconds: u32) -> ListWatchError {
    ListWatchError::from(match retry_after_seconds {
        0 => status::too_many_requests(),
        s => status::too_many_requests_retry_after(s),
    })
}

#[test]
fn retry_after_is_read_from_the_status() {
    let err = ListWatchError::from(status::too_many_requests_retry_after(7));
    assert_eq!(retry_after(&err), Some(Duration::from_secs(7)));
    assert_eq!(
        retry_after(&ListWatchError::from(status::too_many_requests())),
        None
    );
}

/// Asserts that request number `calls` comes `within` the given virtual time of the start.
async fn next_request_within(
    fault: impl FnOnce(&FakeControllerSource<Pod>),
    calls: usize,
    within: std::ops::Range<Duration>,
) {
    let elapsed = time_until_calls(fault, calls).await;
    assert!(within.contains(&elapsed), "{elapsed:?} not in {within:?}");
}

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn list_429_with_retry_after_waits_that_long_before_the_next_request() {
    next_request_within(|s| s.fail_next_list(too_many(20)), 2, 20 * SECOND..DEADLINE).await;
}

#[tokio::test(start_paused = true)]
async fn list_429_without_retry_after_waits_only_the_backoff() {
    // The first backoff delay: 800 ms jittered into [0.8 s, 1.6 s).
    let backoff = Duration::from_millis(800)..Duration::from_millis(1600);
    next_request_within(|s| s.fail_next_list(too_many(0)), 2, backoff).await;
}

#[tokio::test(start_paused = true)]
async fn watch_429_with_retry_after_waits_that_long_before_rewatching() {
    // list, the failed watch, then the next watch.
    next_request_within(
        |s| s.fail_next_watch(too_many(15)),
        3,
        15 * SECOND..DEADLINE,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_429_storm_gets_no_more_requests_than_the_backoff_schedule() {
    let source = Arc::new(FakeControllerSource::new());
    for _ in 0..100 {
        source.fail_next_list(too_many(0));
    }
    let reflector = reflector_over(&source);
    let running = run(&reflector);
    tokio::time::sleep(Duration::from_secs(30)).await;
    let calls = source.list_calls().len();
    running.stop().await;
    // The shortest schedule (no jitter) requests at 0, 0.8, 2.4, 5.6, 12 and 24.8 s.
    assert!((2..=6).contains(&calls), "{calls} requests in 30 s");
}

#[tokio::test(start_paused = true)]
async fn token_bucket_serves_a_burst_then_its_rate() {
    let bucket = TokenBucket::new(2.0, 3);
    let start = Instant::now();
    for _ in 0..3 {
        bucket.acquire().await;
    }
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "the burst is served at once"
    );
    for _ in 0..4 {
        bucket.acquire().await;
    }
    // Four more at 2 a second.
    assert_eq!(start.elapsed(), 2 * SECOND);
}

#[tokio::test(start_paused = true)]
async fn the_rate_limit_bounds_requests_during_a_5xx_storm() {
    let source = Arc::new(FakeControllerSource::new());
    for _ in 0..1000 {
        source.fail_next_list(ListWatchError::from(status::internal_error("overloaded")));
    }
    // A backoff that alone would allow a request every millisecond.
    let backoff = BackoffConfig::default()
        .initial(Duration::from_millis(1))
        .factor(1.0)
        .jitter(0.0);
    let config = ReflectorConfig::default()
        .backoff(backoff)
        .rate_limit(Arc::new(TokenBucket::new(1.0, 2)));
    let reflector = Arc::new(Reflector::new(
        Arc::clone(&source),
        Arc::new(Indexer::default()),
        config,
    ));
    let running = run(&reflector);
    tokio::time::sleep(10 * SECOND).await;
    let calls = source.list_calls().len();
    running.stop().await;
    // The burst of 2, then one a second.
    assert!((10..=12).contains(&calls), "{calls} requests in 10 s");
}
