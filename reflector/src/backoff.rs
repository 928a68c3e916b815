//! Jittered exponential backoff with a reset period, as client-go's reflector uses it.

use std::time::Duration;

use tokio::time::Instant;

/// The parameters of the reflector's backoff (client-go's `NewExponentialBackoffManager(800ms,
/// 30s, 2m, 2.0, 1.0)`): each delay is the current base `d` jittered into `[d, d·(1+jitter))`;
/// the base starts at `initial`, is multiplied by `factor` after each delay and stops growing at
/// `cap`; it returns to `initial` when no delay was asked for during `reset_after`.
///
/// Start from [`BackoffConfig::default`] and chain the setters:
///
/// ```
/// use std::time::Duration;
/// use kcache_reflector::{BackoffConfig, ReflectorConfig};
///
/// let backoff = BackoffConfig::default().initial(Duration::from_millis(100)).cap(Duration::from_secs(5));
/// let config = ReflectorConfig::default().backoff(backoff);
/// # let _ = config;
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffConfig {
    initial: Duration,
    cap: Duration,
    factor: f64,
    jitter: f64,
    reset_after: Duration,
}

impl BackoffConfig {
    /// The first base delay (default 800 ms).
    #[must_use]
    pub fn initial(mut self, initial: Duration) -> Self {
        self.initial = initial;
        self
    }

    /// The largest base delay (default 30 s).
    #[must_use]
    pub fn cap(mut self, cap: Duration) -> Self {
        self.cap = cap;
        self
    }

    /// The growth factor of the base delay (default 2.0).
    #[must_use]
    pub fn factor(mut self, factor: f64) -> Self {
        self.factor = factor;
        self
    }

    /// The jitter: a delay is `d + rand[0, 1) · jitter · d` (default 1.0).
    #[must_use]
    pub fn jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// Back to `initial` after this long without a delay (default 2 min).
    #[must_use]
    pub fn reset_after(mut self, reset_after: Duration) -> Self {
        self.reset_after = reset_after;
        self
    }
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            cap: Duration::from_secs(30),
            factor: 2.0,
            jitter: 1.0,
            reset_after: Duration::from_secs(120),
        }
    }
}

/// The state of one backoff sequence (client-go's `exponentialBackoffManagerImpl`).
#[derive(Debug)]
pub(crate) struct Backoff {
    config: BackoffConfig,
    base: Duration,
    capped: bool,
    last_start: Option<Instant>,
}

impl Backoff {
    pub(crate) fn new(config: BackoffConfig) -> Self {
        Self {
            config,
            base: config.initial,
            capped: false,
            last_start: None,
        }
    }

    /// The next delay; `rand01` is a random number in `[0, 1)`.
    pub(crate) fn next_with(&mut self, now: Instant, rand01: f64) -> Duration {
        let reset = match self.last_start {
            None => true,
            Some(t) => now.saturating_duration_since(t) > self.config.reset_after,
        };
        if reset {
            self.base = self.config.initial;
            self.capped = false;
        }
        self.last_start = Some(now);
        let delay = self.base;
        if !self.capped && self.config.factor > 0.0 {
            let grown = delay.mul_f64(self.config.factor.max(0.0));
            if !self.config.cap.is_zero() && grown > self.config.cap {
                self.base = self.config.cap;
                self.capped = true;
            } else {
                self.base = grown;
            }
        }
        if self.config.jitter > 0.0 {
            delay + delay.mul_f64(self.config.jitter * rand01.clamp(0.0, 1.0))
        } else {
            delay
        }
    }

    /// The next delay, jittered with a random number.
    pub(crate) fn next(&mut self) -> Duration {
        self.next_with(Instant::now(), rand::random::<f64>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_800ms_and_flattens_at_the_cap() {
        let mut b = Backoff::new(BackoffConfig::default());
        let now = Instant::now();
        let bases: Vec<u64> = (0..9)
            .map(|_| b.next_with(now, 0.0).as_millis() as u64)
            .collect();
        assert_eq!(
            bases,
            [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]
        );
    }

    #[test]
    fn backoff_jitter_stays_below_twice_the_base() {
        let mut b = Backoff::new(BackoffConfig::default());
        let now = Instant::now();
        assert_eq!(b.next_with(now, 0.999).as_millis(), 1599);
    }

    #[test]
    fn backoff_resets_after_two_minutes_without_backoff() {
        let mut b = Backoff::new(BackoffConfig::default());
        let now = Instant::now();
        for _ in 0..5 {
            b.next_with(now, 0.0);
        }
        let later = now + Duration::from_secs(121);
        assert_eq!(b.next_with(later, 0.0), Duration::from_millis(800));
    }
}
