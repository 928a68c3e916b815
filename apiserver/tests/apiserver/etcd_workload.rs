//! The workload of the etcd cluster tests (etcd_cluster.rs): read-modify-write writers with
//! resourceVersion preconditions and raw watchers through API servers, and the checks that no
//! acknowledged write is lost or doubled and that no watcher misses or repeats an event.
//!
//! Each write appends one token (`w{writer}-{n}`) to a ConfigMap's `data.log`, so the log is
//! the history of the object: a lost update drops a token, a doubled write repeats one, and a
//! watcher that misses an event sees a log grow by more than one token.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::Client;
use kube_client::api::{ListParams, PostParams, WatchEvent, WatchParams};
use tokio::sync::watch;
use tokio::time::Instant;

/// Logs to stderr what `RUST_LOG` asks for (e.g. `kcache_apiserver=debug`, to see which etcd
/// requests failed and why), once.
pub(crate) fn trace() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// How long a whole scenario may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(60);

/// The objects written, each by two writers (one through each server).
pub(crate) const OBJECTS: usize = 4;

fn log_of(cm: &ConfigMap) -> Vec<String> {
    cm.data
        .as_ref()
        .and_then(|d| d.get("log"))
        .map(|log| {
            log.split(',')
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn rv_of(cm: &ConfigMap) -> u64 {
    cm.metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

pub(crate) fn object_name(i: usize) -> String {
    format!("rmw-{i}")
}

/// What one writer did.
#[derive(Debug, Default)]
pub(crate) struct Writes {
    /// Tokens the server acknowledged (or that a later read showed applied).
    pub(crate) acked: Vec<String>,
    /// Requests that failed with anything but a conflict.
    pub(crate) failures: usize,
    /// When each failure happened.
    pub(crate) failed_at: Vec<Instant>,
    /// When each acknowledged write was acknowledged.
    pub(crate) acked_at: Vec<Instant>,
    /// The slowest request.
    pub(crate) slowest: Duration,
}

/// Writer `id`: appends its tokens to `object` until `stop`, reading first and replacing
/// with the resourceVersion read (a 409 means: read again). After a failed write it reads again
/// and counts the token as written if the log holds it.
pub(crate) async fn writer(
    client: Client,
    id: usize,
    object: String,
    mut stop: watch::Receiver<bool>,
) -> Writes {
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut writes = Writes::default();
    let mut n = 0;
    let deadline = Instant::now() + DEADLINE;
    while !*stop.borrow_and_update() && Instant::now() < deadline {
        let token = format!("w{id}-{n}");
        n += 1;
        while Instant::now() < deadline {
            let started = Instant::now();
            let read = api.get(&object).await;
            writes.slowest = writes.slowest.max(started.elapsed());
            let mut cm = match read {
                Ok(cm) => cm,
                Err(_) => {
                    writes.failures += 1;
                    writes.failed_at.push(Instant::now());
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            };
            let mut log = log_of(&cm);
            if log.contains(&token) {
                writes.acked.push(token);
                writes.acked_at.push(Instant::now());
                break;
            }
            log.push(token.clone());
            cm.data = Some(BTreeMap::from([("log".to_owned(), log.join(","))]));
            let started = Instant::now();
            let written = api.replace(&object, &PostParams::default(), &cm).await;
            writes.slowest = writes.slowest.max(started.elapsed());
            match written {
                Ok(_) => {
                    writes.acked.push(token);
                    writes.acked_at.push(Instant::now());
                    break;
                }
                Err(kube_client::Error::Api(e)) if e.code == 409 => {}
                Err(e) => {
                    tracing::debug!(id, error = %e, "write failed");
                    writes.failures += 1;
                    writes.failed_at.push(Instant::now());
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }
    writes
}

/// One event a watcher saw: (object, resourceVersion, log).
pub(crate) type Seen = (String, u64, Vec<String>);

/// What one watcher saw.
#[derive(Debug, Default)]
pub(crate) struct Watched {
    /// Every event, in order.
    pub(crate) events: Vec<Seen>,
    /// The state listed at the start, per object.
    pub(crate) initial: BTreeMap<String, Vec<String>>,
    /// How many times the watch was re-established from its last resourceVersion.
    pub(crate) rewatches: usize,
    /// 410 Gone or other watch errors: a gap a reflector would relist over.
    pub(crate) gaps: usize,
}

/// Lists the ConfigMaps through `client`, then watches from the list's resourceVersion,
/// re-establishing the watch from the last one seen whenever it ends, until `until` holds a
/// resourceVersion per object and each object's last event is at it.
pub(crate) async fn watcher(
    client: Client,
    mut until: watch::Receiver<Option<BTreeMap<String, u64>>>,
) -> Watched {
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut watched = Watched::default();
    let deadline = Instant::now() + DEADLINE;
    let list = loop {
        match api.list(&ListParams::default()).await {
            Ok(list) => break list,
            Err(e) if Instant::now() < deadline => tracing::debug!(error = %e, "list failed"),
            Err(e) => panic!("list failed: {e}"),
        }
    };
    let mut last: BTreeMap<String, u64> = BTreeMap::new();
    for cm in &list.items {
        let name = cm.metadata.name.clone().unwrap_or_default();
        last.insert(name.clone(), rv_of(cm));
        watched.initial.insert(name, log_of(cm));
    }
    let mut rv = list.metadata.resource_version.unwrap_or_default();
    let done = |last: &BTreeMap<String, u64>, until: &Option<BTreeMap<String, u64>>| {
        until
            .as_ref()
            .is_some_and(|until| until.iter().all(|(k, v)| last.get(k) == Some(v)))
    };
    loop {
        if done(&last, &until.borrow()) || Instant::now() >= deadline {
            return watched;
        }
        let params = WatchParams::default().timeout(30);
        let mut stream = match api.watch(&params, &rv).await {
            Ok(stream) => stream.boxed(),
            Err(e) => {
                tracing::debug!(error = %e, "watch failed to start");
                watched.rewatches += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                changed = until.changed() => {
                    if changed.is_err() || done(&last, &until.borrow()) {
                        return watched;
                    }
                    continue;
                }
            };
            match item {
                Some(Ok(WatchEvent::Added(cm) | WatchEvent::Modified(cm))) => {
                    let name = cm.metadata.name.clone().unwrap_or_default();
                    rv = cm.metadata.resource_version.clone().unwrap_or_default();
                    last.insert(name.clone(), rv_of(&cm));
                    watched.events.push((name, rv_of(&cm), log_of(&cm)));
                    if done(&last, &until.borrow()) {
                        return watched;
                    }
                }
                Some(Ok(WatchEvent::Bookmark(b))) => rv = b.metadata.resource_version,
                Some(Ok(WatchEvent::Deleted(_))) => {}
                Some(Ok(WatchEvent::Error(e))) => {
                    tracing::warn!(error = ?e, "watch error event");
                    watched.gaps += 1;
                    return watched;
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "watch stream failed");
                    watched.rewatches += 1;
                    break;
                }
                None => {
                    watched.rewatches += 1;
                    break;
                }
            }
        }
    }
}

/// Checks the final state against what the writers acknowledged: every acknowledged token is
/// present exactly once, and nothing else is. Returns the number of writes held.
pub(crate) fn check_writes(final_state: &BTreeMap<String, ConfigMap>, writes: &[Writes]) -> usize {
    let mut all: Vec<String> = final_state.values().flat_map(log_of).collect();
    let total = all.len();
    all.sort();
    let before = all.len();
    all.dedup();
    assert_eq!(before, all.len(), "a write is present twice");
    for token in writes.iter().flat_map(|w| &w.acked) {
        assert!(
            all.binary_search(token).is_ok(),
            "acknowledged write {token} is lost"
        );
    }
    total
}

/// Checks one watcher's events: resourceVersions strictly increasing, each event of an object
/// adding exactly one token to its previous state, each object's last event its final state.
/// Returns the number of events checked.
pub(crate) fn check_watch(watched: &Watched, final_state: &BTreeMap<String, ConfigMap>) -> usize {
    assert_eq!(
        watched.gaps, 0,
        "the watch had a gap (410 or an error event)"
    );
    let mut previous_rv = 0;
    let mut state = watched.initial.clone();
    for (name, rv, log) in &watched.events {
        assert!(
            *rv > previous_rv,
            "resourceVersion {rv} after {previous_rv}"
        );
        previous_rv = *rv;
        let before = state.entry(name.clone()).or_default();
        assert_eq!(
            log.len(),
            before.len() + 1,
            "{name} at {rv}: an event was missed or repeated"
        );
        assert_eq!(
            log[..before.len()],
            before[..],
            "{name} at {rv}: history rewritten"
        );
        *before = log.clone();
    }
    for (name, cm) in final_state {
        assert_eq!(
            state.get(name),
            Some(&log_of(cm)),
            "{name}: watch did not end at the final state"
        );
    }
    watched.events.len()
}

/// The final state of every object, read through `client`.
pub(crate) async fn final_state(client: Client) -> BTreeMap<String, ConfigMap> {
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut state = BTreeMap::new();
    for i in 0..OBJECTS {
        let cm = api.get(&object_name(i)).await.unwrap();
        state.insert(object_name(i), cm);
    }
    state
}

/// Each object's resourceVersion in `state`: what the watchers wait for.
pub(crate) fn revisions(state: &BTreeMap<String, ConfigMap>) -> BTreeMap<String, u64> {
    state.iter().map(|(k, cm)| (k.clone(), rv_of(cm))).collect()
}

/// Creates the objects, empty.
pub(crate) async fn create_objects(client: Client) {
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    for i in 0..OBJECTS {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(object_name(i));
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
}

/// The longest time between two consecutive acknowledged writes of all writers after `from`.
pub(crate) fn longest_pause(writes: &[Writes], from: Instant) -> Duration {
    let mut at: Vec<Instant> = writes
        .iter()
        .flat_map(|w| w.acked_at.iter().copied())
        .filter(|t| *t >= from)
        .collect();
    at.sort();
    at.windows(2).map(|w| w[1] - w[0]).max().unwrap_or_default()
}

/// How many tokens the objects hold, read through `client`.
pub(crate) async fn tokens(client: &Client) -> usize {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    match api.list(&ListParams::default()).await {
        Ok(list) => list.items.iter().map(|cm| log_of(cm).len()).sum(),
        Err(_) => 0,
    }
}

/// Waits (bounded) until the objects hold at least `n` tokens.
pub(crate) async fn wait_tokens(client: &Client, n: usize) -> usize {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let held = tokens(client).await;
        if held >= n {
            return held;
        }
        assert!(Instant::now() < deadline, "writes stalled at {held} of {n}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
