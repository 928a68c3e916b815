//! Watch fan-out: one writer, many watchers of pods on the in-process router; every event
//! delivered to every watcher that selects it, counted as it leaves the watch body.

use futures::StreamExt;
use tokio::time::Instant;

use super::get;
use crate::BoxError;
use crate::run::{Cluster, write_burst};

/// The fixture's `team` label takes this many values (`team-{i % 5}` for pod `i`).
const TEAMS: usize = 5;

/// One fan-out run.
#[derive(Debug)]
pub(super) struct Fanout {
    /// Whether each watcher selects one `team` label value (a fifth of the events).
    pub(super) selected: bool,
    pub(super) watchers: usize,
    pub(super) events: u64,
    /// Events delivered, summed over the watchers.
    pub(super) deliveries: u64,
    /// From the first write to the last delivery.
    pub(super) secs: f64,
}

/// Opens `watchers` watches of every pod (or, `selected`, of one team's), writes `events`
/// updates as fast as the server takes them and waits until every watcher has read all it
/// selects. Each watch body yields one chunk per event (no bookmarks are asked for).
pub(super) async fn measure(
    cluster: &Cluster,
    watchers: usize,
    events: u64,
    selected: bool,
) -> Result<Fanout, BoxError> {
    let server = &cluster.server;
    let router = server.router();
    let rv = server.storage_revision().await?;
    // The burst updates pod `k % pods` for k in 0..events.
    let mut per_team = [0u64; TEAMS];
    for k in 0..events as usize {
        per_team[(k % cluster.keys.len()) % TEAMS] += 1;
    }
    let mut readers = Vec::with_capacity(watchers);
    let mut deliveries = 0;
    for w in 0..watchers {
        let (selector, expect) = if selected {
            let team = w % TEAMS;
            (format!("&labelSelector=team%3Dteam-{team}"), per_team[team])
        } else {
            (String::new(), events)
        };
        let uri =
            format!("/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=3600{selector}");
        let mut body = get(&router, &uri).await?.into_data_stream();
        deliveries += expect;
        readers.push(tokio::spawn(async move {
            let mut seen = 0;
            while seen < expect {
                match body.next().await {
                    Some(Ok(_)) => seen += 1,
                    Some(Err(e)) => return Err(BoxError::from(e)),
                    None => return Err("a watch ended before its events".into()),
                }
            }
            Ok(Instant::now())
        }));
    }
    let began = Instant::now();
    write_burst(cluster, events).await?;
    let mut last = began;
    for reader in readers {
        last = last.max(reader.await??);
    }
    server.end_all_watches();
    Ok(Fanout {
        selected,
        watchers,
        events,
        deliveries,
        secs: (last - began).as_secs_f64(),
    })
}
