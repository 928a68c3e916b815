//! Two API servers on a three-member etcd cluster (`TestEtcdCluster`) under faults: the leader
//! killed, a follower stopped, a member wiped and re-joined, compaction and defragmentation,
//! while 8 writers do read-modify-write loops through both servers and 4 watchers (2 per
//! server) watch. Each scenario fails when an acknowledged write is lost or doubled or a
//! watcher misses or repeats an event (etcd_workload.rs). The figures each run prints (with
//! `--nocapture`) are in the README.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use kcache_apiserver::{EtcdConfig, EtcdStorage, Storage, TestEtcdCluster, TestServer, skip};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::etcd_workload::{
    OBJECTS, check_watch, check_writes, create_objects, final_state, longest_pause, object_name,
    revisions, tokens, wait_tokens, watcher, writer,
};
use crate::support::{client, test_builder};

pub(crate) type Shared = Arc<tokio::sync::Mutex<TestEtcdCluster>>;

/// The cluster the tests share while any of them runs (each holds it locked while it runs, and
/// uses its own key prefix).
static CLUSTER: Mutex<Weak<tokio::sync::Mutex<TestEtcdCluster>>> = Mutex::new(Weak::new());
static STARTING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub(crate) async fn cluster() -> Option<Shared> {
    crate::etcd_workload::trace();
    let _starting = STARTING.lock().await;
    if let Some(shared) = CLUSTER.lock().unwrap().upgrade() {
        return Some(shared);
    }
    let Some(cluster) = TestEtcdCluster::start().await.unwrap() else {
        skip(
            "etcd cluster test",
            "no etcd binary (set ETCD, or apt-get install etcd-server)",
        );
        return None;
    };
    let shared = Arc::new(tokio::sync::Mutex::new(cluster));
    *CLUSTER.lock().unwrap() = Arc::downgrade(&shared);
    Some(shared)
}

pub(crate) fn config(cluster: &TestEtcdCluster) -> EtcdConfig {
    cluster
        .config()
        .prefix(format!("/kcache-{}", uuid::Uuid::new_v4()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    KillLeader,
    PauseFollower,
    WipeFollower,
    CompactAndDefragment,
}

/// What a scenario measured (printed for the README's figures).
#[derive(Debug)]
#[allow(dead_code, reason = "the fields are read through Debug, when printed")]
struct Figures {
    writes_held: usize,
    events_checked: usize,
    failures: usize,
    slowest: Duration,
    longest_pause: Duration,
}

/// Runs the workload through two servers while `fault` happens, then checks it.
async fn scenario(fault: Fault) -> Option<Figures> {
    let shared = cluster().await?;
    let mut cluster = shared.lock().await;
    cluster.heal().await.unwrap();
    let config = config(&cluster);
    let mut servers = Vec::new();
    let mut storages = Vec::new();
    for _ in 0..2 {
        let storage = Arc::new(EtcdStorage::connect(config.clone()).await.unwrap());
        storages.push(Arc::clone(&storage));
        let server = TestServer::start_with(test_builder().storage(storage))
            .await
            .unwrap();
        servers.push(server);
    }
    let clients: Vec<_> = servers.iter().map(client).collect();
    create_objects(clients[0].clone()).await;

    let (until_tx, until_rx) = watch::channel(None);
    let watchers: Vec<_> = (0..4)
        .map(|i| tokio::spawn(watcher(clients[i % 2].clone(), until_rx.clone())))
        .collect();
    let (stop_tx, stop_rx) = watch::channel(false);
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let object = object_name((i / 2) % OBJECTS);
            tokio::spawn(writer(clients[i % 2].clone(), i, object, stop_rx.clone()))
        })
        .collect();

    let held = wait_tokens(&clients[0], 40).await;
    let fault_at = Instant::now();
    match fault {
        Fault::KillLeader => {
            let leader = cluster.leader().await.unwrap();
            cluster.kill(leader).unwrap();
            // Writes go on through the two members left, then the member comes back.
            let held = wait_tokens(&clients[0], held + 80).await;
            cluster.restart(leader).await.unwrap();
            wait_tokens(&clients[0], held + 40).await;
        }
        Fault::PauseFollower => {
            let follower = cluster.follower().await.unwrap();
            cluster.pause(follower).unwrap();
            // The fault's length: a few seconds of the member answering nothing.
            tokio::time::sleep(Duration::from_secs(3)).await;
            let held = wait_tokens(&clients[0], held + 40).await;
            cluster.resume(follower).unwrap();
            wait_tokens(&clients[0], held + 40).await;
        }
        Fault::WipeFollower => {
            let follower = cluster.follower().await.unwrap();
            cluster.wipe_and_rejoin(follower).await.unwrap();
            wait_tokens(&clients[0], held + 80).await;
        }
        Fault::CompactAndDefragment => {
            let revision = storages[0].revision().await.unwrap();
            storages[0].compact(revision).await.unwrap();
            cluster.defragment().await.unwrap();
            wait_tokens(&clients[0], held + 80).await;
        }
    }
    stop_tx.send(true).unwrap();
    let mut writes = Vec::new();
    for w in writers {
        writes.push(w.await.unwrap());
    }
    let state = final_state(clients[0].clone()).await;
    until_tx.send(Some(revisions(&state))).unwrap();
    let writes_held = check_writes(&state, &writes);
    assert_eq!(
        writes_held,
        tokens(&clients[1]).await,
        "the servers disagree"
    );
    let mut events_checked = 0;
    for w in watchers {
        events_checked += check_watch(&w.await.unwrap(), &state);
    }
    let figures = Figures {
        writes_held,
        events_checked,
        failures: writes.iter().map(|w| w.failures).sum(),
        slowest: writes.iter().map(|w| w.slowest).max().unwrap_or_default(),
        longest_pause: longest_pause(&writes, fault_at),
    };
    eprintln!("etcd cluster, {fault:?}: {figures:?}");
    Some(figures)
}

/// The etcd leader killed (SIGKILL) and restarted while 8 writers and 4 watchers run: every
/// acknowledged write is held exactly once, no watcher misses or repeats an event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_leader_killed_loses_no_write_and_no_event() {
    scenario(Fault::KillLeader).await;
}

/// A follower stopped (SIGSTOP) for 3 s and resumed: no request fails at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_follower_stopped_fails_no_request() {
    let Some(figures) = scenario(Fault::PauseFollower).await else {
        return;
    };
    assert_eq!(
        figures.failures, 0,
        "requests failed while a follower was stopped"
    );
}

/// A follower's data wiped, the member removed, added again and re-joined empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_member_wiped_and_rejoined_loses_no_write_and_no_event() {
    scenario(Fault::WipeFollower).await;
}

/// etcd compacted to its current revision and every member defragmented while watches run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_compaction_and_defragmentation_lose_no_event() {
    scenario(Fault::CompactAndDefragment).await;
}

/// A storage whose first endpoint refuses connections (a member that is gone) serves every
/// request through the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_storage_skips_an_endpoint_that_refuses_connections() {
    let Some(shared) = cluster().await else {
        return;
    };
    let mut cluster = shared.lock().await;
    cluster.heal().await.unwrap();
    let gone = {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let mut config = config(&cluster);
    config.endpoints.insert(0, gone);
    let storage = Arc::new(EtcdStorage::connect(config).await.unwrap());
    let server = TestServer::start_with(test_builder().storage(storage))
        .await
        .unwrap();
    let c = client(&server);
    create_objects(c.clone()).await;
    for _ in 0..20 {
        assert_eq!(tokens(&c).await, 0);
        final_state(c.clone()).await;
    }
    cluster.kill(0).unwrap();
    for _ in 0..20 {
        final_state(c.clone()).await;
    }
    cluster.heal().await.unwrap();
}
