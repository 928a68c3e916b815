//! Rate-limiter behaviours.

use std::time::Duration;

use kcache_workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxOfRateLimiter, RateLimiter, default_controller_rate_limiter,
};
use std::sync::Arc;

const MS: Duration = Duration::from_millis(1);

#[test]
fn exponential_limiter_doubles_per_failure_and_forget_resets() {
    let l = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
    assert_eq!(l.when(&"a"), MS);
    assert_eq!(l.when(&"a"), 2 * MS);
    assert_eq!(l.when(&"a"), 4 * MS);
    assert_eq!(l.when(&"b"), MS);
    assert_eq!(l.num_requeues(&"a"), 3);
    l.forget(&"a");
    assert_eq!(l.num_requeues(&"a"), 0);
    assert_eq!(l.when(&"a"), MS);
}

#[test]
fn exponential_limiter_is_capped() {
    let l = ItemExponentialFailureRateLimiter::new(MS, 5 * MS);
    let delays: Vec<Duration> = (0..5).map(|_| l.when(&1)).collect();
    assert_eq!(delays, [MS, 2 * MS, 4 * MS, 5 * MS, 5 * MS]);
}

#[test]
fn exponential_limiter_overflow_gives_the_cap() {
    let cap = Duration::from_secs(1000);
    let l = ItemExponentialFailureRateLimiter::new(MS, cap);
    for _ in 0..2000 {
        l.when(&1);
    }
    assert_eq!(l.when(&1), cap);
    let huge = ItemExponentialFailureRateLimiter::new(Duration::MAX, Duration::MAX);
    huge.when(&1);
    assert_eq!(huge.when(&1), Duration::MAX);
}

#[test]
fn fast_slow_limiter_switches_after_the_fast_attempts() {
    let l = ItemFastSlowRateLimiter::new(5 * MS, 10 * MS, 3);
    let delays: Vec<Duration> = (0..5).map(|_| l.when(&"a")).collect();
    assert_eq!(delays, [5 * MS, 5 * MS, 5 * MS, 10 * MS, 10 * MS]);
    assert_eq!(l.num_requeues(&"a"), 5);
    l.forget(&"a");
    assert_eq!(l.when(&"a"), 5 * MS);
}

#[test]
fn max_of_limiter_takes_the_longest_delay_and_most_requeues() {
    let l: MaxOfRateLimiter<&str> = MaxOfRateLimiter::new(vec![
        Arc::new(ItemFastSlowRateLimiter::new(5 * MS, 3 * MS, 3)),
        Arc::new(ItemExponentialFailureRateLimiter::new(
            MS,
            Duration::from_secs(1),
        )),
    ]);
    let delays: Vec<Duration> = (0..5).map(|_| l.when(&"a")).collect();
    assert_eq!(delays, [5 * MS, 5 * MS, 5 * MS, 8 * MS, 16 * MS]);
    assert_eq!(l.num_requeues(&"a"), 5);
    l.forget(&"a");
    assert_eq!(l.num_requeues(&"a"), 0);
}

#[tokio::test(start_paused = true)]
async fn bucket_limiter_allows_the_burst_then_the_rate() {
    let l = BucketRateLimiter::new(10.0, 2);
    assert_eq!(RateLimiter::<u32>::when(&l, &1), Duration::ZERO);
    assert_eq!(RateLimiter::<u32>::when(&l, &2), Duration::ZERO);
    assert_eq!(RateLimiter::<u32>::when(&l, &3), 100 * MS);
    assert_eq!(RateLimiter::<u32>::when(&l, &4), 200 * MS);
    tokio::time::advance(Duration::from_secs(1)).await;
    // Refilled, capped at the burst.
    assert_eq!(RateLimiter::<u32>::when(&l, &5), Duration::ZERO);
    assert_eq!(RateLimiter::<u32>::num_requeues(&l, &5), 0);
}

#[tokio::test(start_paused = true)]
async fn bucket_limiter_with_zero_rate_never_refills() {
    let l = BucketRateLimiter::new(0.0, 1);
    assert_eq!(RateLimiter::<u32>::when(&l, &1), Duration::ZERO);
    assert!(RateLimiter::<u32>::when(&l, &1) > Duration::from_secs(3600));
}

#[tokio::test(start_paused = true)]
async fn default_controller_rate_limiter_is_max_of_exponential_and_bucket() {
    let l = default_controller_rate_limiter::<u32>();
    assert_eq!(l.when(&1), 5 * MS);
    assert_eq!(l.when(&1), 10 * MS);
    // 100 tokens of burst, minus the two above.
    for i in 2..100 {
        assert_eq!(l.when(&i), 5 * MS);
    }
    // The bucket is empty: the next token comes in 100 ms at 10 qps.
    assert_eq!(l.when(&1000), 100 * MS);
    for _ in 0..30 {
        l.when(&7);
    }
    assert_eq!(l.when(&7), Duration::from_secs(1000));
}
