//! Rate limiters deciding how long a failed item waits before it is retried.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use ahash::RandomState;
use parking_lot::Mutex;
use tokio::time::Instant;

/// Decides how long an item waits before being re-added (client-go's `workqueue.RateLimiter`).
pub trait RateLimiter<T>: Send + Sync + fmt::Debug {
    /// How long `item` should wait now; counts one more requeue of it.
    fn when(&self, item: &T) -> Duration;
    /// Stops tracking `item` (it succeeded): its next failure starts from scratch.
    fn forget(&self, item: &T);
    /// How many times `item` has been requeued since it was last forgotten.
    fn num_requeues(&self, item: &T) -> usize;
}

/// A per-item failure counter.
struct Failures<T>(Mutex<HashMap<T, u32, RandomState>>);

impl<T> fmt::Debug for Failures<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Failures")
            .field("tracked_items", &self.0.lock().len())
            .finish()
    }
}

impl<T: Eq + Hash + Clone> Failures<T> {
    fn new() -> Self {
        Self(Mutex::new(HashMap::default()))
    }

    /// Counts one more failure and returns the count before it.
    fn bump(&self, item: &T) -> u32 {
        let mut map = self.0.lock();
        let count = map.entry(item.clone()).or_insert(0);
        let before = *count;
        *count = count.saturating_add(1);
        before
    }

    fn forget(&self, item: &T) {
        self.0.lock().remove(item);
    }

    fn get(&self, item: &T) -> usize {
        self.0.lock().get(item).map_or(0, |n| *n as usize)
    }
}

/// `base × 2^failures` per item, capped at `max`; a delay too large to represent gives `max`
/// (client-go's `ItemExponentialFailureRateLimiter`).
pub struct ItemExponentialFailureRateLimiter<T> {
    base: Duration,
    max: Duration,
    failures: Failures<T>,
}

impl<T> fmt::Debug for ItemExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("failures", &self.failures)
            .finish()
    }
}

impl<T> fmt::Debug for ItemFastSlowRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .field("failures", &self.failures)
            .finish()
    }
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters)
            .finish()
    }
}

impl<T: Eq + Hash + Clone> ItemExponentialFailureRateLimiter<T> {
    /// A limiter starting at `base` and capped at `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Failures::new(),
        }
    }
}

impl<T: Eq + Hash + Clone + Send + Sync> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = self.failures.bump(item);
        let backoff = self.base.as_nanos() as f64 * 2f64.powi(exp.min(i32::MAX as u32) as i32);
        if !backoff.is_finite()
            || backoff >= self.max.as_nanos() as f64
            || backoff >= u64::MAX as f64
        {
            return self.max;
        }
        Duration::from_nanos(backoff as u64).min(self.max)
    }

    fn forget(&self, item: &T) {
        self.failures.forget(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.failures.get(item)
    }
}

/// `fast` for the first `max_fast_attempts` requeues of an item, `slow` afterwards
/// (client-go's `ItemFastSlowRateLimiter`).
pub struct ItemFastSlowRateLimiter<T> {
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
    failures: Failures<T>,
}

impl<T: Eq + Hash + Clone> ItemFastSlowRateLimiter<T> {
    /// A limiter waiting `fast` for `max_fast_attempts` attempts, then `slow`.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        Self {
            fast,
            slow,
            max_fast_attempts,
            failures: Failures::new(),
        }
    }
}

impl<T: Eq + Hash + Clone + Send + Sync> RateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let attempts = self.failures.bump(item).saturating_add(1);
        if attempts <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, item: &T) {
        self.failures.forget(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.failures.get(item)
    }
}

/// The longest delay of several limiters; requeues are the largest count among them
/// (client-go's `MaxOfRateLimiter`).
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Arc<dyn RateLimiter<T>>>,
}

impl<T> MaxOfRateLimiter<T> {
    /// The maximum of `limiters`.
    pub fn new(limiters: Vec<Arc<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T: Send + Sync> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or_default()
    }

    fn forget(&self, item: &T) {
        for l in &self.limiters {
            l.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or_default()
    }
}

/// The longest delay the token bucket hands out when it cannot refill (a rate of zero).
const NEVER: Duration = Duration::from_secs(365 * 24 * 3600);

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

/// An overall token bucket of `qps` tokens per second holding at most `burst`: each `when`
/// reserves a token and waits until it is available; items are not tracked
/// (client-go's `BucketRateLimiter` over `rate.Limiter`). Uses tokio's clock.
#[derive(Debug)]
pub struct BucketRateLimiter {
    qps: f64,
    burst: f64,
    bucket: Mutex<Bucket>,
}

impl BucketRateLimiter {
    /// A bucket refilling at `qps` per second, starting full with `burst` tokens.
    pub fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst);
        Self {
            qps,
            burst,
            bucket: Mutex::new(Bucket {
                tokens: burst,
                last: Instant::now(),
            }),
        }
    }

    fn reserve(&self) -> Duration {
        let now = Instant::now();
        let mut b = self.bucket.lock();
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        let refills = self.qps > 0.0;
        if refills && self.qps.is_infinite() {
            return Duration::ZERO;
        }
        if refills {
            b.tokens = (b.tokens + elapsed * self.qps).min(self.burst);
        }
        b.last = now;
        b.tokens -= 1.0;
        if b.tokens >= 0.0 {
            return Duration::ZERO;
        }
        if refills {
            Duration::try_from_secs_f64(-b.tokens / self.qps)
                .unwrap_or(NEVER)
                .min(NEVER)
        } else {
            NEVER
        }
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve()
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> usize {
        0
    }
}

/// The default limiter of controllers: the maximum of a per-item exponential limiter from 5 ms to
/// 1000 s and an overall token bucket of 10 qps with a burst of 100 (client-go's
/// `DefaultControllerRateLimiter`).
pub fn default_controller_rate_limiter<T>() -> MaxOfRateLimiter<T>
where
    T: Eq + Hash + Clone + Send + Sync + 'static,
{
    MaxOfRateLimiter::new(vec![
        Arc::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Arc::new(BucketRateLimiter::new(10.0, 100)),
    ])
}
