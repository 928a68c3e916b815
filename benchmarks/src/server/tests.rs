//! The server section against a small seeded server. A watcher that misses an event never
//! finishes reading, so each measurement runs under a generous deadline to fail, not hang.

use std::time::Duration;

use crate::run::{Cluster, seed};
use crate::{Role, Settings};

/// Far longer than the measurements take, even on a loaded machine.
const DEADLINE: Duration = Duration::from_secs(120);

async fn cluster(pods: usize) -> Cluster {
    let settings = Settings {
        pods,
        events: 100,
        latency_events: 0,
        rate: 1,
        roles: vec![Role::Wire],
        sync_rounds: 1,
        watchers: 0,
        fanout_events: 100,
        command: String::new(),
    };
    seed(&settings).await.expect("the server is seeded")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fan_out_delivers_every_event_to_every_watcher_that_selects_it() {
    let cluster = cluster(20).await;
    let all = tokio::time::timeout(DEADLINE, super::fanout::measure(&cluster, 10, 50, false))
        .await
        .expect("every watcher reads every event in time")
        .expect("every watcher reads every event");
    assert_eq!(all.deliveries, 500);
    // Pods 0..20 updated 50 times in turn: each team's four pods, 10 events per team.
    let selected = tokio::time::timeout(DEADLINE, super::fanout::measure(&cluster, 10, 50, true))
        .await
        .expect("every watcher reads its team's events in time")
        .expect("every watcher reads its team's events");
    assert_eq!(selected.deliveries, 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_reach_the_middle_page_by_its_continue_token() {
    let cluster = cluster(1_200).await;
    let lists = super::lists::measure(&cluster, 1_200)
        .await
        .expect("every list is answered");
    let middle = lists.last().expect("the middle page is timed");
    assert!(middle.what.contains("page 2 (continue)"), "{}", middle.what);
    assert_eq!(middle.samples_ms.len(), super::SAMPLES);
}
