//! Per-listener resync periods and the check-period clamping rules.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kcache_informer::{
    HandlerOptions, MINIMUM_RESYNC_PERIOD, ResourceEventHandlerFuncs, SharedIndexInformer,
};

use crate::common::{Cache, Running, key, on_both_caches, source_with, take_n};

fn with_resync(
    period: Duration,
    cache: Cache,
) -> (
    Arc<kcache_reflector::testing::FakeControllerSource<Pod>>,
    SharedIndexInformer<Pod>,
) {
    let source = source_with(1);
    let informer = cache
        .builder(Arc::clone(&source))
        .resync_period(period)
        .build();
    (source, informer)
}

fn nop() -> ResourceEventHandlerFuncs<Pod> {
    ResourceEventHandlerFuncs::new()
}

#[test]
fn handler_period_under_one_second_becomes_one_second() {
    let (_, informer) = with_resync(Duration::from_secs(10), Cache::Shared);
    let reg = informer
        .add_event_handler_with_resync_period(nop(), Duration::from_millis(10))
        .unwrap();
    assert_eq!(reg.resync_period(), MINIMUM_RESYNC_PERIOD);
    assert_eq!(informer.resync_check_period(), MINIMUM_RESYNC_PERIOD);
}

#[test]
fn smaller_period_before_start_lowers_the_check_period() {
    let (_, informer) = with_resync(Duration::from_secs(10), Cache::Shared);
    let slow = informer
        .add_event_handler_with_resync_period(nop(), Duration::from_secs(30))
        .unwrap();
    let default = informer.add_event_handler(nop()).unwrap();
    assert_eq!(slow.resync_period(), Duration::from_secs(30));
    assert_eq!(default.resync_period(), Duration::from_secs(10));
    let fast = informer
        .add_event_handler_with_resync_period(nop(), Duration::from_secs(3))
        .unwrap();
    assert_eq!(fast.resync_period(), Duration::from_secs(3));
    assert_eq!(informer.resync_check_period(), Duration::from_secs(3));
}

async fn smaller_period_after_start_is_raised_to_the_check_period(cache: Cache) {
    let (source, informer) = with_resync(Duration::from_secs(10), cache);
    let running = Running::start(source, informer.clone());
    running.wait_synced().await;
    let reg = informer
        .add_event_handler_with_resync_period(nop(), Duration::from_secs(2))
        .unwrap();
    assert_eq!(reg.resync_period(), Duration::from_secs(10));
    assert_eq!(informer.resync_check_period(), Duration::from_secs(10));
    running.stop().await;
}

async fn check_period_zero_means_no_resync(cache: Cache) {
    let (source, informer) = with_resync(Duration::ZERO, cache);
    let mut stream = informer
        .event_stream_with_options(HandlerOptions::new().resync_period(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(stream.registration().resync_period(), Duration::ZERO);
    let running = Running::start(source, informer.clone());
    running.wait_synced().await;
    take_n(&mut stream, 1).await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(stream.queued(), 0);
    running.stop().await;
}

async fn per_listener_resync_periods(cache: Cache) {
    let (source, informer) = with_resync(Duration::from_secs(1), cache);
    let mut never = informer
        .event_stream_with_options(HandlerOptions::new().resync_period(Duration::ZERO))
        .unwrap();
    let mut every_second = informer.event_stream().unwrap();
    let mut every_three = informer
        .event_stream_with_options(HandlerOptions::new().resync_period(Duration::from_secs(3)))
        .unwrap();
    let running = Running::start(source, informer);
    running.wait_synced().await;
    for stream in [&mut never, &mut every_second, &mut every_three] {
        take_n(stream, 1).await;
    }
    // Resyncs are updates with the same object: old and new resource version equal.
    let resync = format!("update {} 1->1", key(0));
    assert_eq!(take_n(&mut every_second, 3).await, vec![resync.clone(); 3]);
    assert_eq!(take_n(&mut every_three, 1).await, vec![resync]);
    assert_eq!(every_three.queued(), 0);
    assert_eq!(never.queued(), 0);
    running.stop().await;
}

on_both_caches!(
    #[tokio::test(start_paused = true)]
    smaller_period_after_start_is_raised_to_the_check_period,
    check_period_zero_means_no_resync,
    per_listener_resync_periods
);
