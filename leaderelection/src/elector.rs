//! [`LeaderElector`]: campaigns for a Lease, leads while it renews it in time, and reports every
//! transition (client-go's `tools/leaderelection.LeaderElector`).

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube_client::{Api, Client};
use rand::Rng;
use tokio::time::{Duration, Instant, sleep, sleep_until, timeout, timeout_at};
use tokio_util::sync::CancellationToken;

use crate::config::{ConfigError, JITTER_FACTOR, LeaderElectionConfig};
use crate::lock::{LeaseLock, LockError, Record};

/// A transition seen by a [`LeaderElector`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum LeaderEvent {
    /// This candidate acquired the Lease. The token is cancelled the moment leadership ends
    /// (renewal failed past the renew deadline, or shutdown): workers run under it.
    StartedLeading(CancellationToken),
    /// This candidate stopped leading (after its token was cancelled and, on shutdown with
    /// `release_on_cancel`, after the Lease was released).
    StoppedLeading,
    /// The Lease's holder changed to this identity (this candidate's own included). A released
    /// Lease has no holder and is not reported.
    NewLeader(String),
}

/// One candidate for one Lease.
///
/// The observed time of the Lease is this process's monotonic clock at the moment it saw the
/// Lease's record change, never the `renewTime` written in it: a candidate takes over only when
/// the record has not changed for `lease_duration` by its own clock, so clock skew between
/// candidates does not matter (only the rate at which their clocks run).
#[derive(Debug)]
pub struct LeaderElector {
    config: LeaderElectionConfig,
    identity: String,
    lock: LeaseLock,
    observed: Record,
    observed_at: Instant,
    reported_leader: String,
}

impl LeaderElector {
    /// A candidate `identity` for the Lease `namespace/name`.
    pub fn new(
        client: Client,
        namespace: &str,
        name: &str,
        identity: impl Into<String>,
        config: LeaderElectionConfig,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let identity = identity.into();
        if identity.is_empty() {
            return Err(ConfigError::EmptyIdentity);
        }
        let api: Api<Lease> = Api::namespaced(client, namespace);
        Ok(Self {
            config,
            identity,
            lock: LeaseLock::new(api, name.to_owned()),
            observed: Record::default(),
            observed_at: Instant::now(),
            reported_leader: String::new(),
        })
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Campaigns until `shutdown`: acquires the Lease, leads while renewals succeed within the
    /// renew deadline, and after losing it campaigns again. `on_event` is called, in order, on
    /// every [`LeaderEvent`]; it must not block.
    ///
    /// Unlike client-go's `Run`, which returns after one term, this keeps campaigning: a
    /// replica that lost the Lease (a partition, a long pause) stands again.
    pub async fn run(mut self, shutdown: CancellationToken, mut on_event: impl FnMut(LeaderEvent)) {
        while self.acquire(&shutdown, &mut on_event).await {
            let leading = shutdown.child_token();
            on_event(LeaderEvent::StartedLeading(leading.clone()));
            self.renew(&shutdown, &mut on_event).await;
            leading.cancel();
            if shutdown.is_cancelled() && self.config.release_on_cancel {
                self.release().await;
            }
            on_event(LeaderEvent::StoppedLeading);
        }
    }

    /// Tries every `retry_period` (jittered) until the Lease is ours: `false` on shutdown.
    async fn acquire(
        &mut self,
        shutdown: &CancellationToken,
        on_event: &mut impl FnMut(LeaderEvent),
    ) -> bool {
        loop {
            let acquired = tokio::select! {
                biased;
                () = shutdown.cancelled() => return false,
                ok = self.try_acquire_or_renew() => ok,
            };
            self.report_transition(on_event);
            if acquired {
                tracing::info!(identity = %self.identity, "successfully acquired lease");
                return true;
            }
            let factor = rand::rng().random::<f64>() * JITTER_FACTOR;
            let wait = self.config.retry_period.mul_f64(1.0 + factor);
            tokio::select! {
                biased;
                () = shutdown.cancelled() => return false,
                () = sleep(wait) => {}
            }
        }
    }

    /// Renews every `retry_period` until a renewal does not succeed within `renew_deadline`
    /// (each round retrying every `retry_period`) or until shutdown.
    async fn renew(
        &mut self,
        shutdown: &CancellationToken,
        on_event: &mut impl FnMut(LeaderEvent),
    ) {
        loop {
            let deadline = Instant::now() + self.config.renew_deadline;
            let renewed = tokio::select! {
                biased;
                () = shutdown.cancelled() => return,
                renewed = self.renew_before(deadline) => renewed,
            };
            self.report_transition(on_event);
            if !renewed {
                tracing::info!(identity = %self.identity, "failed to renew lease: renew deadline exceeded");
                return;
            }
            tokio::select! {
                biased;
                () = shutdown.cancelled() => return,
                () = sleep(self.config.retry_period) => {}
            }
        }
    }

    /// Attempts a renewal at once and then every `retry_period` until one succeeds (`true`) or
    /// `deadline` passes (`false`); an attempt in flight at the deadline is abandoned.
    async fn renew_before(&mut self, deadline: Instant) -> bool {
        loop {
            match timeout_at(deadline, self.try_acquire_or_renew()).await {
                Ok(true) => return true,
                Ok(false) => {}
                Err(_) => return false,
            }
            let next = Instant::now() + self.config.retry_period;
            if next >= deadline {
                sleep_until(deadline).await;
                return false;
            }
            sleep_until(next).await;
        }
    }

    /// One attempt; errors are logged and count as not acquired.
    async fn try_acquire_or_renew(&mut self) -> bool {
        match self.attempt().await {
            Ok(acquired) => acquired,
            Err(e) => {
                tracing::info!(identity = %self.identity, error = &e as &dyn std::error::Error, "failed to acquire or renew lease");
                false
            }
        }
    }

    /// client-go's `tryAcquireOrRenew`.
    async fn attempt(&mut self) -> Result<bool, LockError> {
        let now = Instant::now();
        let stamp = Some(MicroTime(Timestamp::now()));
        let mut record = Record {
            holder_identity: self.identity.clone(),
            lease_duration_seconds: self.config.lease_seconds(),
            acquire_time: stamp.clone(),
            renew_time: stamp,
            leader_transitions: 0,
        };

        // 1. The leader renews optimistically, assuming the Lease is as it last wrote it.
        if self.is_leader() && self.is_lease_valid(now) {
            record.acquire_time.clone_from(&self.observed.acquire_time);
            record.leader_transitions = self.observed.leader_transitions;
            match self.lock.update(record.clone()).await {
                Ok(()) => {
                    self.set_observed(record);
                    return Ok(true);
                }
                Err(e) => {
                    tracing::debug!(identity = %self.identity, error = &e as &dyn std::error::Error, "failed to update lease optimistically, falling back to slow path");
                }
            }
        }

        // 2. Read the Lease, or create it.
        let Some(old) = self.lock.get().await? else {
            self.lock.create(record.clone()).await?;
            self.set_observed(record);
            return Ok(true);
        };

        // 3. A change restarts the observed time; a valid Lease held by another is left alone.
        if old != self.observed {
            self.observed = old.clone();
            self.observed_at = Instant::now();
        }
        if !old.holder_identity.is_empty() && self.is_lease_valid(now) && !self.is_leader() {
            tracing::debug!(identity = %self.identity, holder = %old.holder_identity, "lock is held by another and has not yet expired");
            return Ok(false);
        }

        // 4. Take the Lease (or renew it), with optimistic concurrency on its version.
        if self.is_leader() {
            record.acquire_time = old.acquire_time;
            record.leader_transitions = old.leader_transitions;
        } else {
            record.leader_transitions = old.leader_transitions.saturating_add(1);
        }
        self.lock.update(record.clone()).await?;
        self.set_observed(record);
        Ok(true)
    }

    /// Clears the holder (duration 1 s) if this candidate holds the Lease; bounded by the renew
    /// deadline, errors logged.
    async fn release(&mut self) {
        if !self.is_leader() {
            return;
        }
        let stamp = Some(MicroTime(Timestamp::now()));
        let record = Record {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time: stamp.clone(),
            renew_time: stamp,
            leader_transitions: self.observed.leader_transitions,
        };
        match timeout(self.config.renew_deadline, self.lock.update(record.clone())).await {
            Ok(Ok(())) => self.set_observed(record),
            Ok(Err(e)) => {
                tracing::warn!(identity = %self.identity, error = &e as &dyn std::error::Error, "failed to release lease");
            }
            Err(_) => {
                tracing::warn!(identity = %self.identity, "failed to release lease: renew deadline exceeded")
            }
        }
    }

    fn set_observed(&mut self, record: Record) {
        self.observed = record;
        self.observed_at = Instant::now();
    }

    fn is_leader(&self) -> bool {
        self.observed.holder_identity == self.identity
    }

    fn is_lease_valid(&self, now: Instant) -> bool {
        let seconds = u64::try_from(self.observed.lease_duration_seconds).unwrap_or(0);
        self.observed_at + Duration::from_secs(seconds) > now
    }

    /// Reports the holder if it changed since last reported.
    fn report_transition(&mut self, on_event: &mut impl FnMut(LeaderEvent)) {
        if self.observed.holder_identity == self.reported_leader {
            return;
        }
        self.reported_leader
            .clone_from(&self.observed.holder_identity);
        if !self.reported_leader.is_empty() {
            on_event(LeaderEvent::NewLeader(self.reported_leader.clone()));
        }
    }
}
