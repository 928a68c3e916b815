//! [`TokenBucket`]: the client-side rate limit on what reflectors send (client-go's
//! `flowcontrol.NewTokenBucketRateLimiter(qps, burst)`, which is `golang.org/x/time/rate`).
//!
//! Written on tokio's clock rather than taken from a crate (`governor` keeps its own clock): a
//! limiter on tokio time is paused and advanced with the runtime, so tests of a storm run in
//! virtual time, and it is twenty lines.

use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// A token bucket holding up to `burst` tokens, refilled at `qps` tokens a second and full at
/// first. Each request takes one token, waiting for it when the bucket is empty; waiters are
/// served in the order they asked (each reserves its token, as `rate.Limiter.Wait` does: a
/// dropped wait does not give its token back). Share one (`Arc`) between reflectors for a
/// limit on all of them, as client-go's limit is per REST client.
///
/// ```
/// use std::sync::Arc;
/// use kcache_reflector::{ReflectorConfig, TokenBucket};
///
/// // client-go's defaults: 5 requests a second, bursts of 10.
/// let limit = Arc::new(TokenBucket::new(5.0, 10));
/// let config = ReflectorConfig::default().rate_limit(limit);
/// # let _ = config;
/// ```
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    /// Tokens (negative: reserved by waiters) as of the instant.
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A bucket of `burst` tokens (at least one) refilled at `qps` a second. A `qps` that is not
    /// a positive number limits nothing.
    pub fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            qps,
            burst,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    fn limits(&self) -> bool {
        self.qps.is_finite() && self.qps > 0.0
    }

    /// Takes a token, waiting until there is one.
    pub async fn acquire(&self) {
        if !self.limits() {
            return;
        }
        let wait = {
            let mut state = self.state.lock();
            let now = Instant::now();
            let refilled = now.saturating_duration_since(state.1).as_secs_f64() * self.qps;
            state.0 = (state.0 + refilled).min(self.burst) - 1.0;
            state.1 = now;
            (state.0 < 0.0).then(|| Duration::from_secs_f64(-state.0 / self.qps))
        };
        if let Some(wait) = wait {
            tracing::trace!(wait_s = wait.as_secs_f64(), "client-side rate limit");
            tokio::time::sleep(wait).await;
        }
    }
}
