//! Test servers on either backend, candidates with a client that can be made to fail, and the
//! Lease's write history read from a watch.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kcache_apiserver::TestServer;
use kcache_leaderelection::{LeaderElectionConfig, LeaderElector, LeaderEvent, Record};
use kcache_testkit::within;
use kube_client::api::WatchParams;
use kube_client::core::WatchEvent;
use kube_client::{Api, Client};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The Lease every test campaigns for.
pub(crate) const LEASE: &str = "controller";

/// Short timings: a 3 s lease, a 1 s renew deadline, a 250 ms retry period.
pub(crate) fn config() -> LeaderElectionConfig {
    LeaderElectionConfig::default().timings(
        Duration::from_secs(3),
        Duration::from_secs(1),
        Duration::from_millis(250),
    )
}

/// The storage a test server runs on.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Backend {
    Memory,
    Etcd,
}

/// A test server, with the etcd it runs on (kept alive as long as the server).
pub(crate) struct Server {
    pub(crate) server: TestServer,
    #[cfg(feature = "etcd")]
    _etcd: Option<kcache_apiserver::TestEtcd>,
}

impl Backend {
    /// A new server on this backend; `None` (after [`kcache_apiserver::skip`], which fails the
    /// test under `KCACHE_STRICT=1`) when it cannot run here.
    pub(crate) async fn server(self) -> Option<Server> {
        match self {
            Backend::Memory => Some(Server {
                server: TestServer::start().await.unwrap(),
                #[cfg(feature = "etcd")]
                _etcd: None,
            }),
            #[cfg(feature = "etcd")]
            Backend::Etcd => {
                let Some(etcd) = kcache_apiserver::TestEtcd::start().await.unwrap() else {
                    kcache_apiserver::skip(
                        "etcd leader-election test",
                        "no etcd binary (set ETCD, or apt-get install etcd-server)",
                    );
                    return None;
                };
                let storage = etcd.storage().await.unwrap();
                let builder = kcache_apiserver::ApiServer::builder().storage(Arc::new(storage));
                Some(Server {
                    server: TestServer::start_with(builder).await.unwrap(),
                    _etcd: Some(etcd),
                })
            }
            #[cfg(not(feature = "etcd"))]
            Backend::Etcd => {
                kcache_apiserver::skip(
                    "etcd leader-election test",
                    "built without the etcd feature (--features etcd)",
                );
                None
            }
        }
    }
}

/// What a candidate reported, tagged with its identity, in the order reported.
#[derive(Debug)]
pub(crate) enum Seen {
    Leading(String, CancellationToken),
    Stopped(String),
    Observed(
        #[allow(dead_code, reason = "shown when a test fails")] String,
        String,
    ),
}

/// A client's switch: counts requests and fails them (as a refused connection) when set.
#[derive(Debug, Default)]
pub(crate) struct Switch {
    failing: AtomicBool,
    requests: watch::Sender<u64>,
}

impl Switch {
    /// Makes every request fail (`true`) or pass (`false`).
    pub(crate) fn fail(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    /// Waits until `n` more requests have been made.
    pub(crate) async fn requests_made(&self, n: u64) {
        let mut seen = self.requests.subscribe();
        let target = *seen.borrow() + n;
        let what = format!("{n} requests to be made");
        within(&what, seen.wait_for(|made| *made >= target))
            .await
            .unwrap();
    }
}

/// A kube client for `server` whose requests go through `switch`.
fn switched_client(server: &TestServer, switch: Arc<Switch>) -> Client {
    // The elector retries on its own schedule: the client's own retries of 503s would hide
    // how many attempts it made.
    let mut config = server.config().unwrap();
    config.default_retry = false;
    let inner = Client::try_from(config).unwrap();
    let service = tower::service_fn(move |request| {
        let inner = inner.clone();
        let switch = Arc::clone(&switch);
        async move {
            switch.requests.send_modify(|made| *made += 1);
            if switch.failing.load(Ordering::SeqCst) {
                let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
                return Err(Box::new(refused) as Box<dyn std::error::Error + Send + Sync>);
            }
            inner.send(request).await.map_err(Into::into)
        }
    });
    Client::new(service, "default")
}

/// One candidate campaigning in its own task.
pub(crate) struct Candidate {
    pub(crate) identity: String,
    pub(crate) switch: Arc<Switch>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) task: JoinHandle<()>,
}

/// Starts a candidate for [`LEASE`] per identity with the tests' short timings ([`config`]), all
/// reporting into the receiver returned.
pub(crate) fn campaign(
    server: &TestServer,
    identities: &[&str],
) -> (Vec<Candidate>, mpsc::UnboundedReceiver<Seen>) {
    campaign_with(server, identities, &config())
}

/// [`campaign`] with `config`'s timings.
pub(crate) fn campaign_with(
    server: &TestServer,
    identities: &[&str],
    config: &LeaderElectionConfig,
) -> (Vec<Candidate>, mpsc::UnboundedReceiver<Seen>) {
    let (tx, seen) = mpsc::unbounded_channel();
    let candidates = identities
        .iter()
        .map(|id| candidate(server, id, config, &tx))
        .collect();
    (candidates, seen)
}

/// Starts candidate `identity` for [`LEASE`], reporting into `seen`.
fn candidate(
    server: &TestServer,
    identity: &str,
    config: &LeaderElectionConfig,
    seen: &mpsc::UnboundedSender<Seen>,
) -> Candidate {
    let switch = Arc::new(Switch::default());
    let client = switched_client(server, Arc::clone(&switch));
    let elector = LeaderElector::new(client, "default", LEASE, identity, config.clone()).unwrap();
    let shutdown = CancellationToken::new();
    let seen = seen.clone();
    let me = identity.to_owned();
    let task = tokio::spawn(elector.run(shutdown.clone(), move |event| {
        let seen_now = match event {
            LeaderEvent::StartedLeading(token) => Seen::Leading(me.clone(), token),
            LeaderEvent::StoppedLeading => Seen::Stopped(me.clone()),
            LeaderEvent::NewLeader(holder) => Seen::Observed(me.clone(), holder),
            _ => return,
        };
        let _ = seen.send(seen_now);
    }));
    Candidate {
        identity: identity.to_owned(),
        switch,
        shutdown,
        task,
    }
}

/// The next start or stop of leadership (observations skipped).
pub(crate) async fn next_transition(seen: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    loop {
        match within("the next start or stop of leadership", seen.recv()).await {
            Some(Seen::Observed(..)) => {}
            Some(transition) => return transition,
            None => panic!("the campaign ended before a transition"),
        }
    }
}

/// The identity that started leading next.
pub(crate) async fn next_leader(seen: &mut mpsc::UnboundedReceiver<Seen>) -> String {
    match next_transition(seen).await {
        Seen::Leading(who, _) => who,
        other => panic!("expected a new leader, saw {other:?}"),
    }
}

/// Every version of the Lease written since it was created, from a watch started before.
pub(crate) struct History {
    api: Api<Lease>,
    versions: watch::Receiver<Vec<(String, Record)>>,
}

impl History {
    /// Starts watching the Lease (before any candidate writes it).
    pub(crate) fn watch(server: &TestServer) -> Self {
        let api: Api<Lease> = Api::namespaced(server.client().unwrap(), "default");
        let (tx, versions) = watch::channel(Vec::new());
        let stream_api = api.clone();
        tokio::spawn(async move {
            let stream = stream_api
                .watch(&WatchParams::default(), "0")
                .await
                .unwrap();
            let mut stream = std::pin::pin!(stream.into_stream());
            while let Some(Ok(event)) = stream.next().await {
                if let WatchEvent::Added(lease) | WatchEvent::Modified(lease) = event {
                    let rv = lease.metadata.resource_version.clone().unwrap_or_default();
                    tx.send_modify(|v| v.push((rv, Record::from_lease(&lease))));
                }
            }
        });
        Self { api, versions }
    }

    /// Every version up to the Lease as it is now.
    pub(crate) async fn now(&mut self) -> Vec<Record> {
        let lease = self.api.get(LEASE).await.unwrap();
        let rv = lease.metadata.resource_version.unwrap_or_default();
        let caught_up = self.versions.wait_for(|v| v.iter().any(|(r, _)| *r == rv));
        let versions = within("the Lease watch to catch up", caught_up)
            .await
            .unwrap();
        versions.iter().map(|(_, record)| record.clone()).collect()
    }
}

/// Microseconds since the epoch of a Lease time.
fn micros(t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime>) -> i64 {
    t.map_or(0, |t| t.0.as_microsecond())
}

/// Asserts that no version of the Lease gave it to a new holder while the previous holder's
/// claim was still valid: a take-over (not after a release) is acquired no earlier than the
/// previous holder's last renewal plus its lease duration.
pub(crate) fn assert_never_two_valid_holders(history: &[Record]) {
    for pair in history.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        if before.holder_identity.is_empty() || before.holder_identity == after.holder_identity {
            continue;
        }
        let expires = micros(before.renew_time.as_ref())
            + i64::from(before.lease_duration_seconds) * 1_000_000;
        assert!(
            micros(after.acquire_time.as_ref()) >= expires,
            "{} took the Lease while {}'s was valid: {history:#?}",
            after.holder_identity,
            before.holder_identity
        );
    }
}

/// The holders in the order they took the Lease (a release shows as "").
pub(crate) fn holders(history: &[Record]) -> Vec<String> {
    let mut holders: Vec<String> = Vec::new();
    for record in history {
        if holders.last() != Some(&record.holder_identity) {
            holders.push(record.holder_identity.clone());
        }
    }
    holders
}

/// Runs each named `async fn(Backend)` as `memory::name` and `etcd::name`.
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::support::Backend::Memory).await;
                }
            )*
        }
        mod etcd {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::support::Backend::Etcd).await;
                }
            )*
        }
    };
}
pub(crate) use on_every_backend;
