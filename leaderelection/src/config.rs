//! [`LeaderElectionConfig`]: the timings of an election and their validation.

use std::time::Duration;

/// client-go's `JitterFactor`: an acquire attempt waits `retry_period` jittered by up to this
/// factor, and the renew deadline must exceed `retry_period` times it.
pub(crate) const JITTER_FACTOR: f64 = 1.2;

/// The timings of a leader election, with client-go's defaults and validation
/// (`tools/leaderelection.NewLeaderElector`).
///
/// - `lease_duration`: how long a non-leader waits, from the moment it last saw the Lease change,
///   before it may take the Lease over. Written to the Lease in whole seconds.
/// - `renew_deadline`: how long the leader keeps retrying a renewal before it gives up leading.
/// - `retry_period`: the wait between attempts to acquire or renew.
/// - `release_on_cancel`: on shutdown while leading, clear the Lease's holder so that another
///   candidate can take over at once instead of after `lease_duration` (client-go's
///   `ReleaseOnCancel`; the workers must have stopped when shutdown is requested).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaderElectionConfig {
    /// How long a Lease is valid after its holder was last seen renewing it. Default 15 s.
    pub lease_duration: Duration,
    /// How long the leader retries renewing before it stops leading. Default 10 s.
    pub renew_deadline: Duration,
    /// The wait between attempts. Default 2 s.
    pub retry_period: Duration,
    /// Release the Lease on shutdown while leading. Default `true`.
    pub release_on_cancel: bool,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: true,
        }
    }
}

/// Why a [`LeaderElectionConfig`] or an identity was refused; the messages are client-go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `lease_duration` is not above `renew_deadline`.
    #[error("leaseDuration must be greater than renewDeadline")]
    LeaseNotAboveRenew,
    /// `renew_deadline` is not above `retry_period` times the jitter factor (1.2).
    #[error("renewDeadline must be greater than retryPeriod*JitterFactor")]
    RenewNotAboveRetry,
    /// `lease_duration` is under one second: the Lease holds whole seconds, so it would be
    /// written as zero (client-go refuses a zero duration).
    #[error("leaseDuration must be greater than zero")]
    LeaseDurationZero,
    /// `retry_period` is zero.
    #[error("retryPeriod must be greater than zero")]
    RetryPeriodZero,
    /// The candidate's identity is empty.
    #[error("Lock identity is empty")]
    EmptyIdentity,
}

impl LeaderElectionConfig {
    /// Sets the three timings.
    pub fn timings(mut self, lease: Duration, renew: Duration, retry: Duration) -> Self {
        self.lease_duration = lease;
        self.renew_deadline = renew;
        self.retry_period = retry;
        self
    }

    /// Sets [`LeaderElectionConfig::release_on_cancel`].
    pub fn release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// Checks the timings in client-go's order.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.lease_duration <= self.renew_deadline {
            return Err(ConfigError::LeaseNotAboveRenew);
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return Err(ConfigError::RenewNotAboveRetry);
        }
        if self.lease_duration < Duration::from_secs(1) {
            return Err(ConfigError::LeaseDurationZero);
        }
        if self.retry_period.is_zero() {
            return Err(ConfigError::RetryPeriodZero);
        }
        Ok(())
    }

    /// The lease duration as the Lease holds it: whole seconds (client-go truncates too).
    pub(crate) fn lease_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timings(lease: u64, renew: u64, retry: u64) -> LeaderElectionConfig {
        LeaderElectionConfig::default().timings(
            Duration::from_millis(lease),
            Duration::from_millis(renew),
            Duration::from_millis(retry),
        )
    }

    #[test]
    fn defaults_are_client_go_s_and_valid() {
        let c = LeaderElectionConfig::default();
        assert_eq!(c.lease_duration, Duration::from_secs(15));
        assert_eq!(c.renew_deadline, Duration::from_secs(10));
        assert_eq!(c.retry_period, Duration::from_secs(2));
        assert_eq!(c.validate(), Ok(()));
    }

    #[test]
    fn lease_duration_must_exceed_renew_deadline() {
        assert_eq!(
            timings(10_000, 10_000, 2_000).validate(),
            Err(ConfigError::LeaseNotAboveRenew)
        );
    }

    #[test]
    fn renew_deadline_must_exceed_jittered_retry_period() {
        assert_eq!(
            timings(15_000, 2_400, 2_000).validate(),
            Err(ConfigError::RenewNotAboveRetry)
        );
        assert_eq!(timings(15_000, 2_401, 2_000).validate(), Ok(()));
    }

    #[test]
    fn lease_duration_under_a_second_is_refused() {
        assert_eq!(
            timings(900, 600, 100).validate(),
            Err(ConfigError::LeaseDurationZero)
        );
    }

    #[test]
    fn zero_retry_period_is_refused() {
        assert_eq!(
            timings(2_000, 1_000, 0).validate(),
            Err(ConfigError::RetryPeriodZero)
        );
    }
}
