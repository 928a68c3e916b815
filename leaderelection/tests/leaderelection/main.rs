//! Leader election against kcache-apiserver's `TestServer`, on memory and etcd storage: one
//! leader at a time by the Lease's write history, fail-over in each way a leader can fail.

mod support;

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kcache_leaderelection::{ConfigError, LeaderElectionConfig, LeaderElector};
use kcache_testkit::within;
use kube_client::Api;
use kube_client::api::PostParams;
use support::{
    Backend, History, LEASE, Seen, assert_never_two_valid_holders, campaign, campaign_with,
    holders, next_leader, next_transition, on_every_backend,
};

on_every_backend!(
    three_candidates_never_two_valid_holders_and_fail_over_when_the_leader_stops,
    renew_deadline_exceeded_stops_leading_before_another_takes_over,
);

async fn three_candidates_never_two_valid_holders_and_fail_over_when_the_leader_stops(
    backend: Backend,
) {
    let Some(s) = backend.server().await else {
        return;
    };
    let mut history = History::watch(&s.server);
    let (mut candidates, mut seen) = campaign(&s.server, &["a", "b", "c"]);

    let first = next_leader(&mut seen).await;
    // The leader's process dies: no release, its Lease must expire first.
    let at = candidates.iter().position(|c| c.identity == first).unwrap();
    let dead = candidates.remove(at);
    dead.task.abort();
    let second = next_leader(&mut seen).await;
    assert_ne!(first, second);

    let versions = history.now().await;
    assert_never_two_valid_holders(&versions);
    assert_eq!(holders(&versions), [first, second]);
    assert_eq!(versions.last().unwrap().leader_transitions, 1);
}

async fn renew_deadline_exceeded_stops_leading_before_another_takes_over(backend: Backend) {
    let Some(s) = backend.server().await else {
        return;
    };
    let mut history = History::watch(&s.server);
    let (candidates, mut seen) = campaign(&s.server, &["a", "b"]);
    let Seen::Leading(first, leading) = next_transition(&mut seen).await else {
        panic!("expected a leader first");
    };
    let leader = candidates.iter().find(|c| c.identity == first).unwrap();
    leader.switch.fail(true);

    // The leader gives up (its workers' token cancelled) before the other may take over.
    let Seen::Stopped(stopped) = next_transition(&mut seen).await else {
        panic!("the other candidate led before the leader stopped");
    };
    assert_eq!(stopped, first);
    assert!(leading.is_cancelled());
    let second = next_leader(&mut seen).await;
    assert_ne!(second, first);
    let versions = history.now().await;
    assert_never_two_valid_holders(&versions);
    assert_eq!(holders(&versions), [first, second]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_leader_while_every_request_fails() {
    let s = Backend::Memory.server().await.unwrap();
    s.server.fail_next_requests(u32::MAX, 503);
    let (candidates, mut seen) = campaign(&s.server, &["a", "b", "c"]);
    for c in &candidates {
        c.switch.requests_made(3).await;
    }
    assert!(seen.try_recv().is_err(), "a candidate led without the API");

    s.server.fail_next_requests(0, 503);
    next_leader(&mut seen).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_holders_lease_is_taken_only_after_it_expires() {
    let s = Backend::Memory.server().await.unwrap();
    let api: Api<Lease> = Api::namespaced(s.server.client().unwrap(), "default");
    let now = Some(MicroTime(Timestamp::now()));
    let dead = Lease {
        metadata: ObjectMeta {
            name: Some(LEASE.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("dead".to_owned()),
            lease_duration_seconds: Some(2),
            acquire_time: now.clone(),
            renew_time: now,
            lease_transitions: Some(4),
            ..LeaseSpec::default()
        }),
    };
    api.create(&PostParams::default(), &dead).await.unwrap();
    let mut history = History::watch(&s.server);
    let (_b, mut seen) = campaign(&s.server, &["b"]);

    let observed = within("the first observation", seen.recv()).await;
    assert!(
        matches!(observed, Some(Seen::Observed(_, holder)) if holder == "dead"),
        "the dead holder is reported first"
    );
    assert_eq!(next_leader(&mut seen).await, "b");
    let versions = history.now().await;
    assert_never_two_valid_holders(&versions);
    assert_eq!(holders(&versions), ["dead", "b"]);
    assert_eq!(versions.last().unwrap().leader_transitions, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_on_cancel_clears_the_holder_and_hands_over() {
    let s = Backend::Memory.server().await.unwrap();
    let mut history = History::watch(&s.server);
    // client-go's default timings: the hand-over is by release, and the tests' short ones let a
    // leader whose renewal is slowed by a loaded machine lose the lease first (then it has
    // nothing to release, as in client-go, and the history has no released version).
    let (candidates, mut seen) =
        campaign_with(&s.server, &["a", "b"], &LeaderElectionConfig::default());
    let first = next_leader(&mut seen).await;
    let leader = candidates.iter().find(|c| c.identity == first).unwrap();
    leader.shutdown.cancel();

    // The old leader reports StoppedLeading after its release is written (as client-go), so
    // the new leader may report first: the order of the handover is the Lease's history.
    let (mut stopped, mut second) = (None, None);
    while stopped.is_none() || second.is_none() {
        match next_transition(&mut seen).await {
            Seen::Stopped(who) if stopped.is_none() => stopped = Some(who),
            Seen::Leading(who, _) if second.is_none() => second = Some(who),
            other => panic!("expected one stop and one new leader, saw {other:?}"),
        }
    }
    let (stopped, second) = (stopped.unwrap(), second.unwrap());
    assert_eq!(stopped, first);
    assert_ne!(second, first);
    let versions = history.now().await;
    assert_eq!(holders(&versions), [first, String::new(), second]);
    let released = versions.iter().find(|r| r.holder_identity.is_empty());
    assert_eq!(released.unwrap().lease_duration_seconds, 1);
}

#[tokio::test]
async fn invalid_timings_and_empty_identity_are_refused() {
    let s = Backend::Memory.server().await.unwrap();
    let short = LeaderElectionConfig::default().timings(
        Duration::from_secs(5),
        Duration::from_secs(6),
        Duration::from_secs(1),
    );
    let refused = LeaderElector::new(s.server.client().unwrap(), "default", LEASE, "a", short);
    assert_eq!(refused.unwrap_err(), ConfigError::LeaseNotAboveRenew);
    let config = LeaderElectionConfig::default();
    let anonymous = LeaderElector::new(s.server.client().unwrap(), "default", LEASE, "", config);
    assert_eq!(anonymous.unwrap_err(), ConfigError::EmptyIdentity);
}
