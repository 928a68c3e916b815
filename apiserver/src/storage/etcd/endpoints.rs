//! The etcd members an [`EtcdStorage`](super::EtcdStorage) talks to: one client (one channel)
//! per endpoint, each health-checked, requests routed only to members whose last check passed,
//! as kube-apiserver's Go client skips a dead endpoint (etcd-client's balanced channel has no
//! health checking: etcd-client issues #12 and #39).
//!
//! - health: every `health_interval`, each member's maintenance `status` is asked for within
//!   `health_timeout`; a member is healthy when it answers and knows a leader. A connect error
//!   marks a member unhealthy at once.
//! - routing: round robin over the healthy members (over all of them when none is healthy).
//! - attempts: each attempt has a deadline (`attempt_timeout`, shorter than etcd's election)
//!   so that a request stuck on a member (a follower that forwarded it to a leader that died
//!   waits etcd's request timeout, 7 s by default) fails fast.
//! - retries, within `retry_window`: a request is sent again, to another member, only when it
//!   provably never reached etcd: a connect error (no byte was sent) or etcd's `no leader`
//!   answer to a request carrying `hasleader` metadata (the server rejects it in its gRPC
//!   interceptor, before the request is handled). A read (idempotent) is also sent again after
//!   any transport failure, `leader changed` / timeout answer or attempt deadline, and when its
//!   member turns unhealthy while it waits (a member stopped answering). So is a
//!   [`Call::GuardedWrite`]: a transaction comparing a `mod_revision` above 0, which etcd
//!   refuses a second time once the first applied (revisions never come back), so at most one
//!   attempt applies; the caller is told that an earlier attempt may have reached etcd
//!   ([`Sent::uncertain`]) and settles the outcome from the value the refused transaction
//!   read. Any other write that may have been applied is never sent again: its error is
//!   returned, marked uncertain, for the caller to read back.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use etcd_client::Client;
use tokio::sync::watch;
use tokio::time::Instant;

use super::EtcdConfig;

/// One etcd member: its client and whether its last health check passed.
pub(super) struct Member {
    /// The client URL.
    pub(super) url: String,
    /// A client whose channel reaches this member only.
    pub(super) client: Client,
    healthy: watch::Sender<bool>,
}

impl Member {
    fn set_healthy(&self, healthy: bool) {
        let changed = self.healthy.send_if_modified(|h| {
            let changed = *h != healthy;
            *h = healthy;
            changed
        });
        if changed {
            tracing::info!(endpoint = %self.url, healthy, "etcd member health changed");
        }
    }

    /// Resolves once this member is unhealthy.
    pub(super) async fn unhealthy(&self) {
        let mut rx = self.healthy.subscribe();
        let _ = rx.wait_for(|healthy| !*healthy).await;
    }

    /// Whether the last health check passed.
    pub(super) fn is_healthy(&self) -> bool {
        *self.healthy.borrow()
    }
}

/// What a request does, which decides when it may be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Call {
    /// Idempotent: sent again after any transport failure.
    Read,
    /// May change etcd: sent again only when it provably never reached etcd.
    Write,
    /// A transaction comparing a `mod_revision` above 0: sent again after any transport
    /// failure, as a read (etcd refuses it once an earlier attempt applied).
    GuardedWrite,
}

impl Call {
    /// Whether an attempt that may have reached etcd can be sent again.
    fn resendable(self) -> bool {
        matches!(self, Self::Read | Self::GuardedWrite)
    }
}

/// What [`Endpoints::call`] returns: the result of the last attempt, and whether an earlier
/// attempt (or, on an error, this one) may have reached etcd.
pub(super) struct Sent<T> {
    /// The last attempt's result.
    pub(super) result: Result<T, etcd_client::Error>,
    /// An attempt other than the one that answered `Ok` may have been applied (for an `Err`:
    /// the failed attempt may have been applied).
    pub(super) uncertain: bool,
}

/// How a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// The connection could not be made: nothing was sent.
    NotConnected,
    /// etcd refused it before handling it (`no leader` under `hasleader`).
    NoLeader,
    /// The transport broke or etcd timed out: it may or may not have been applied.
    Unavailable,
    /// etcd answered with an error about the request itself.
    Answered,
}

/// The error and its sources, as one text.
fn error_text(err: &etcd_client::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn classify(err: &etcd_client::Error) -> Failure {
    let text = error_text(err);
    if text.contains("tcp connect error")
        || text.contains("error trying to connect")
        || text.contains("Connection refused")
    {
        return Failure::NotConnected;
    }
    if text.contains("etcdserver: no leader") {
        return Failure::NoLeader;
    }
    let unavailable = match err {
        etcd_client::Error::GRpcStatus(status) => matches!(
            status.code(),
            tonic::Code::Unavailable
                | tonic::Code::DeadlineExceeded
                | tonic::Code::Cancelled
                | tonic::Code::Unknown
        ),
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        _ => false,
    };
    if unavailable || text.contains("leader changed") || text.contains("timed out") {
        Failure::Unavailable
    } else {
        Failure::Answered
    }
}

/// The members, with round-robin routing and the retry window.
pub(super) struct Endpoints {
    members: Vec<Member>,
    next: AtomicUsize,
    retry_window: Duration,
    attempt_timeout: Duration,
}

impl Endpoints {
    /// One member per `(url, client)`, all assumed healthy until checked.
    pub(super) fn new(members: Vec<(String, Client)>, config: &EtcdConfig) -> Arc<Self> {
        Arc::new(Self {
            members: members
                .into_iter()
                .map(|(url, client)| Member {
                    url,
                    client,
                    healthy: watch::channel(true).0,
                })
                .collect(),
            next: AtomicUsize::new(0),
            retry_window: config.retry_window,
            attempt_timeout: config.attempt_timeout,
        })
    }

    /// The next member to use: a healthy one other than `avoid` if any, else any other than
    /// `avoid` (`None` when there are no members).
    pub(super) fn pick(&self, avoid: Option<usize>) -> Option<(usize, &Member)> {
        let n = self.members.len().max(1);
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let order = (0..n).map(|k| (start + k) % n);
        let usable = |i: &usize| Some(*i) != avoid || n == 1;
        let chosen = order
            .clone()
            .filter(usable)
            .find(|i| self.members.get(*i).is_some_and(Member::is_healthy))
            .or_else(|| order.clone().find(usable))
            .unwrap_or(0);
        self.members.get(chosen).map(|member| (chosen, member))
    }

    /// Runs `request` on a member, sending it again to another member where that is safe (see
    /// the module docs) until `retry_window` has passed.
    pub(super) async fn call<T, F, Fut>(
        &self,
        call: Call,
        request: F,
    ) -> Result<T, etcd_client::Error>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        self.send(call, request).await.result
    }

    /// One attempt on `member`: ends with an error at the attempt deadline, or (for a request
    /// that may be sent again) when the member turns unhealthy.
    async fn attempt<T, Fut>(
        &self,
        call: Call,
        member: &Member,
        request: Fut,
    ) -> Result<T, etcd_client::Error>
    where
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let watch_health = call.resendable() && member.is_healthy();
        let unhealthy = async {
            if watch_health {
                member.unhealthy().await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        let unavailable = |why: String| {
            Err(etcd_client::Error::GRpcStatus(tonic::Status::unavailable(
                format!("etcd member {} {why}", member.url),
            )))
        };
        tokio::select! {
            result = request => result,
            () = unhealthy => unavailable("turned unhealthy during the request".to_owned()),
            () = tokio::time::sleep(self.attempt_timeout) => {
                unavailable(format!("did not answer within {:?}", self.attempt_timeout))
            }
        }
    }

    /// [`call`](Self::call), telling whether an attempt may have reached etcd.
    pub(super) async fn send<T, F, Fut>(&self, call: Call, mut request: F) -> Sent<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let started = Instant::now();
        let deadline = started + self.retry_window;
        let mut avoid = None;
        let mut backoff = Duration::from_millis(10);
        let mut uncertain = false;
        loop {
            let Some((index, member)) = self.pick(avoid) else {
                let err = etcd_client::Error::InvalidArgs("no etcd endpoints".to_owned());
                return Sent {
                    result: Err(err),
                    uncertain,
                };
            };
            let err = match self
                .attempt(call, member, request(member.client.clone()))
                .await
            {
                Ok(value) => {
                    return Sent {
                        result: Ok(value),
                        uncertain,
                    };
                }
                Err(err) => err,
            };
            let failure = classify(&err);
            if failure == Failure::NotConnected {
                member.set_healthy(false);
            }
            let reached = failure == Failure::Unavailable;
            let retry = match failure {
                Failure::NotConnected | Failure::NoLeader => true,
                Failure::Unavailable => call.resendable(),
                Failure::Answered => false,
            };
            let now = Instant::now();
            if !retry || now >= deadline {
                if failure != Failure::Answered {
                    tracing::warn!(endpoint = %member.url, ?call, ?failure, error = %err,
                        elapsed = ?started.elapsed(), "etcd request failed");
                }
                return Sent {
                    result: Err(err),
                    uncertain: uncertain || reached,
                };
            }
            uncertain |= reached && call != Call::Read;
            tracing::debug!(endpoint = %member.url, ?call, ?failure, error = %err, "etcd request sent again to another member");
            avoid = Some(index);
            if failure != Failure::NotConnected {
                tokio::time::sleep(backoff.min(deadline - now)).await;
                backoff = (backoff * 2).min(Duration::from_millis(200));
            }
        }
    }

    /// Checks every member's health once.
    async fn check(&self, timeout: Duration) {
        let checks = self.members.iter().map(|member| async move {
            let mut maintenance = member.client.maintenance_client();
            let healthy = match tokio::time::timeout(timeout, maintenance.status()).await {
                Ok(Ok(status)) => status.leader() != 0,
                Ok(Err(e)) => {
                    tracing::debug!(endpoint = %member.url, error = %e, "etcd health check failed");
                    false
                }
                Err(_) => false,
            };
            member.set_healthy(healthy);
        });
        futures::future::join_all(checks).await;
    }

    /// Checks the members' health every `interval` until the endpoints are dropped.
    pub(super) fn spawn_health_checks(this: &Arc<Self>, interval: Duration, timeout: Duration) {
        let weak: Weak<Self> = Arc::downgrade(this);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(endpoints) = weak.upgrade() else {
                    return;
                };
                endpoints.check(timeout).await;
            }
        });
    }
}
