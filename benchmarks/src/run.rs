//! The parent process: the API server with the pods, the writes, and one child process per
//! client, driven through its stdin and stdout.

use std::process::Stdio;
use std::time::{Duration, Instant};

use kcache_apiserver::{
    ApiError, ApiServer, Object, Preconditions, ServerConfig, TestServer, UpdateFn,
};
use kcache_store::testing;
use kube_core::Resource;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout, Command};

use crate::measure::unix_nanos;
use crate::probe::WRITTEN_AT;
use crate::{BoxError, Role, Settings};

/// The namespace of the object created during a forced relist: it sorts after every other pod, so
/// a client has applied the whole relist once it holds it.
const MARKER_NAMESPACE: &str = "zz-bench";

/// One client's figures (times in seconds, memory in MiB, latencies in milliseconds).
#[derive(Debug, Clone, Default)]
pub(crate) struct Figures {
    pub(crate) role: Option<Role>,
    /// The median of `syncs`, field by field.
    pub(crate) sync: Sync,
    /// Every sync of this client: the measured process's, then one per extra round.
    pub(crate) syncs: Vec<Sync>,
    /// The rest is absent for the decode limit.
    pub(crate) watch: Option<WatchFigures>,
}

/// One start → synced of a client process.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sync {
    pub(crate) synced_s: f64,
    /// CPU seconds from start to synced, in user and in system mode.
    pub(crate) user_s: f64,
    pub(crate) sys_s: f64,
    pub(crate) rss_mib: f64,
    pub(crate) peak_mib: f64,
}

impl Sync {
    fn read(synced: &Value) -> Self {
        Self {
            synced_s: num(synced, "synced_s"),
            user_s: num(synced, "user_s"),
            sys_s: num(synced, "sys_s"),
            rss_mib: num(synced, "rss_mib"),
            peak_mib: num(synced, "peak_mib"),
        }
    }

    /// The median of each field over `all` (the upper median of an even count).
    pub(crate) fn median(all: &[Sync]) -> Self {
        let of = |field: fn(&Sync) -> f64| {
            let mut v: Vec<f64> = all.iter().map(field).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        Self {
            synced_s: of(|s| s.synced_s),
            user_s: of(|s| s.user_s),
            sys_s: of(|s| s.sys_s),
            rss_mib: of(|s| s.rss_mib),
            peak_mib: of(|s| s.peak_mib),
        }
    }
}

/// The figures of one burst of MODIFIED events.
#[derive(Debug, Clone, Default)]
pub(crate) struct Burst {
    /// Events per second reaching the handler (or kube-runtime's store).
    pub(crate) events_per_s: f64,
    /// The server's own write rate during the burst.
    pub(crate) server_writes_per_s: f64,
    /// The client's CPU time per event, from the first event's arrival to the last's, in
    /// microseconds (user and system mode).
    pub(crate) user_us: f64,
    pub(crate) sys_us: f64,
    /// The client's peak resident memory during the burst over its RSS before it.
    pub(crate) rss_growth_mib: f64,
}

/// The watch and relist figures of a client.
#[derive(Debug, Clone, Default)]
pub(crate) struct WatchFigures {
    /// The client alone: the burst written while its watch was ended, then read from its
    /// resource version with the server doing nothing else (timed from the first event's
    /// arrival to the last's). Absent for the floor, which does not rewatch.
    pub(crate) drain: Option<Burst>,
    /// Server-bound: the burst read while the server writes it (timed from the first write).
    pub(crate) live: Burst,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) max_ms: f64,
    /// Absent for a client that holds no cache to relist (the floor).
    pub(crate) relist: Option<RelistFigures>,
}

/// The figures of a forced relist.
#[derive(Debug, Clone, Default)]
pub(crate) struct RelistFigures {
    /// RSS before the relist.
    pub(crate) steady_mib: f64,
    pub(crate) peak_mib: f64,
    /// From the server answering again until the relist is applied (backoff included).
    pub(crate) resync_s: f64,
    /// From the start of the list that succeeded until it is applied.
    pub(crate) relist_s: f64,
}

/// The server seeded with the pods, and the storage key of each (pod `i`'s at `i`).
pub(crate) struct Cluster {
    pub(crate) server: TestServer,
    pub(crate) keys: Vec<String>,
}

/// Runs every client of `settings` in turn against the seeded server.
pub(crate) async fn clients(
    cluster: &Cluster,
    settings: &Settings,
) -> Result<Vec<Figures>, BoxError> {
    let mut all = Vec::new();
    for &role in &settings.roles {
        tracing::info!(?role, "measuring");
        let figures = measure(cluster, settings, role).await?;
        tracing::info!(?figures, "measured");
        all.push(figures);
    }
    // On this kind of VM a fresh process's first touch of memory costs from one run to the next
    // several times what it cost in the previous one, and a sync is mostly that: every client
    // syncs again in each round, the order rotated so that no client always follows the same
    // one, and the sync figures are the medians.
    for round in 1..settings.sync_rounds {
        let n = all.len();
        for i in 0..n {
            let figures = &mut all[(i + round) % n];
            let Some(role) = figures.role else { continue };
            tracing::info!(?role, round, "syncing again");
            let mut child = Child::spawn(role, &cluster.server.url(), settings.pods)?;
            let synced = read_synced(&mut child, settings, role).await?;
            child.send("exit").await?;
            child.process.wait().await?;
            figures.syncs.push(synced);
        }
    }
    for figures in &mut all {
        figures.sync = Sync::median(&figures.syncs);
    }
    Ok(all)
}

/// Reads a client's first line, its sync, and checks that it holds every pod.
async fn read_synced(child: &mut Child, settings: &Settings, role: Role) -> Result<Sync, BoxError> {
    let synced = child.read().await?;
    if synced["objects"].as_u64() != Some(settings.pods as u64) {
        return Err(format!("{role:?} synced {} objects", synced["objects"]).into());
    }
    Ok(Sync::read(&synced))
}

/// Starts the in-process server and creates the pods.
pub(crate) async fn seed(settings: &Settings) -> Result<Cluster, BoxError> {
    let mut config = ServerConfig::default();
    // The server must not drop a client that falls behind a burst: the client is measured here.
    config.cache.watcher_buffer =
        (settings.events + settings.latency_events).max(settings.fanout_events) as usize;
    // A client resumes its watch after the drain burst from the cache's event window.
    config.cache.capacity = settings.events as usize + 1_000;
    let server = TestServer::start_with(
        // The fixture pods name ReplicaSets that do not exist: no garbage collection.
        ApiServer::builder()
            .config(config)
            .garbage_collection(false),
    )
    .await?;
    let started = Instant::now();
    let mut keys = Vec::with_capacity(settings.pods);
    for i in 0..settings.pods {
        let created = server
            .create(stamped(testing::pod_json(i, 100, 0))?)
            .await?;
        keys.push(pod_key(&server, &created)?);
    }
    server.wait_caches_synced().await?;
    // The in-server controllers (namespaces, pod grace) look at every pod created: their
    // passes end before the first client starts, so that no client shares the cores with them.
    server.wait_controllers_idle().await?;
    tracing::info!(
        pods = settings.pods,
        secs = started.elapsed().as_secs_f64(),
        "seeded"
    );
    Ok(Cluster { server, keys })
}

/// A fixture pod carrying the write-instant annotation (every pod carries it from the start, so
/// every client lists the same bytes).
fn stamped(mut pod: Value) -> Result<Object, BoxError> {
    pod["metadata"]["annotations"][WRITTEN_AT] = unix_nanos().to_string().into();
    Ok(Object::from_value(pod)?)
}

fn pod_key(server: &ApiServer, pod: &Object) -> Result<String, BoxError> {
    let def = server
        .resource_for_kind("v1", "Pod")
        .ok_or("the server has no pods")?;
    let meta = pod.meta();
    Ok(def.storage_key(
        meta.namespace.as_deref(),
        meta.name.as_deref().unwrap_or_default(),
    ))
}

/// Updates the pod under `key`, stamping the instant of the write into its annotation.
async fn touch(server: &ApiServer, key: &str) -> Result<(), BoxError> {
    let update: UpdateFn = Box::new(|current| {
        let current = current.ok_or_else(|| ApiError::bad_request("the pod is gone"))?;
        let mut next = Object::clone(current);
        next.meta_mut()
            .annotations
            .get_or_insert_default()
            .insert(WRITTEN_AT.to_owned(), unix_nanos().to_string());
        Ok(next)
    });
    server
        .storage()
        .guaranteed_update(key.to_owned(), update)
        .await?;
    Ok(())
}

/// A client process and the two ends of its protocol.
struct Child {
    process: tokio::process::Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Child {
    fn spawn(role: Role, url: &str, pods: usize) -> Result<Self, BoxError> {
        let mut process = Command::new(std::env::current_exe()?)
            .args([
                "client",
                role.name(),
                "--url",
                url,
                "--pods",
                &pods.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = process.stdin.take().ok_or("no stdin")?;
        let stdout = process.stdout.take().ok_or("no stdout")?;
        Ok(Self {
            process,
            stdin,
            lines: BufReader::new(stdout).lines(),
        })
    }

    async fn send(&mut self, command: &str) -> Result<(), BoxError> {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await?;
        Ok(self.stdin.flush().await?)
    }

    async fn read(&mut self) -> Result<Value, BoxError> {
        let line = self
            .lines
            .next_line()
            .await?
            .ok_or("the client process ended early")?;
        Ok(serde_json::from_str(&line)?)
    }

    /// Sends `command` and waits for the child's `ready`.
    async fn start(&mut self, command: &str) -> Result<(), BoxError> {
        self.send(command).await?;
        self.read().await.map(drop)
    }
}

fn num(v: &Value, field: &str) -> f64 {
    v[field].as_f64().unwrap_or(0.0)
}

fn secs_between(from_ns: u64, to_ns: u64) -> f64 {
    to_ns.saturating_sub(from_ns) as f64 / 1e9
}

async fn measure(cluster: &Cluster, settings: &Settings, role: Role) -> Result<Figures, BoxError> {
    let server = &cluster.server;
    let mut child = Child::spawn(role, &server.url(), settings.pods)?;
    let synced = read_synced(&mut child, settings, role).await?;
    let mut figures = Figures {
        role: Some(role),
        sync: synced,
        syncs: vec![synced],
        watch: None,
    };
    if role != Role::Decode {
        let mut watched = watch(cluster, settings, role, &mut child).await?;
        // The floor holds no cache to relist.
        if role != Role::Wire {
            watched.relist = Some(relist(cluster, settings, &mut child).await?);
        }
        figures.watch = Some(watched);
    }
    child.send("exit").await?;
    child.process.wait().await?;
    Ok(figures)
}

async fn watch(
    cluster: &Cluster,
    settings: &Settings,
    role: Role,
    child: &mut Child,
) -> Result<WatchFigures, BoxError> {
    let server = &cluster.server;
    let mut figures = WatchFigures::default();

    // Server-bound: every update as fast as the server writes them, read as they are written.
    child.start(&format!("burst {}", settings.events)).await?;
    let (began, writes_per_s) = write_burst(cluster, settings.events).await?;
    let arrived = child.read().await?;
    figures.live = burst_figures(&arrived, settings.events, writes_per_s);
    figures.live.events_per_s =
        settings.events as f64 / secs_between(began, num_u64(&arrived, "last_ns"));

    // The client alone: its watch ends and its rewatches are refused with 429 Too Many Requests
    // (both clients back off and retry the watch from their resource version: no relist) while
    // the server writes the burst; then the server answers again and the client reads the burst
    // from the watch cache's window, the server doing nothing else. The floor does not rewatch.
    if role != Role::Wire {
        child.start(&format!("drain {}", settings.events)).await?;
        server.fail_next_requests(u32::MAX, 429);
        server.end_all_watches();
        let (_, writes_per_s) = write_burst(cluster, settings.events).await?;
        server.wait_caches_synced().await?;
        server.fail_next_requests(0, 429);
        let arrived = child.read().await?;
        figures.drain = Some(burst_figures(&arrived, settings.events, writes_per_s));
    }

    // Latency at a fixed rate.
    child
        .start(&format!("latency {}", settings.latency_events))
        .await?;
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / settings.rate as f64));
    for k in 0..settings.latency_events as usize {
        tick.tick().await;
        touch(server, &cluster.keys[(k * 7919) % cluster.keys.len()]).await?;
    }
    let latency = child.read().await?;
    figures.p50_ms = num(&latency, "p50_ns") / 1e6;
    figures.p99_ms = num(&latency, "p99_ns") / 1e6;
    figures.max_ms = num(&latency, "max_ns") / 1e6;
    Ok(figures)
}

/// Updates `events` pods as fast as the server writes them: when the writes began, and their
/// rate.
pub(crate) async fn write_burst(cluster: &Cluster, events: u64) -> Result<(u64, f64), BoxError> {
    let began = unix_nanos();
    for k in 0..events as usize {
        touch(&cluster.server, &cluster.keys[k % cluster.keys.len()]).await?;
    }
    Ok((began, events as f64 / secs_between(began, unix_nanos())))
}

/// A burst's figures from the child's answer (events/s from the first arrival to the last).
fn burst_figures(arrived: &Value, events: u64, server_writes_per_s: f64) -> Burst {
    let per_event_us = |field| num(arrived, field) * 1e6 / events as f64;
    Burst {
        events_per_s: events as f64
            / secs_between(num_u64(arrived, "first_ns"), num_u64(arrived, "last_ns")),
        server_writes_per_s,
        user_us: per_event_us("user_s"),
        sys_us: per_event_us("sys_s"),
        rss_growth_mib: num(arrived, "rss_growth_mib"),
    }
}

fn num_u64(v: &Value, field: &str) -> u64 {
    v[field].as_u64().unwrap_or(0)
}

/// A forced relist of the client's cache, measured.
async fn relist(
    cluster: &Cluster,
    settings: &Settings,
    child: &mut Child,
) -> Result<RelistFigures, BoxError> {
    let server = &cluster.server;
    // A forced relist: the watch ends, history moves on and is compacted while the client cannot
    // reconnect, so resuming from its resource version is 410 Expired and it lists again.
    child
        .start(&format!("relist {}", settings.pods + 1))
        .await?;
    server.fail_next_requests(u32::MAX, 500);
    server.end_all_watches();
    let mut marker = testing::pod_json(settings.pods, 100, 0);
    marker["metadata"]["namespace"] = MARKER_NAMESPACE.into();
    let marker = server.create(stamped(marker)?).await?;
    server.wait_caches_synced().await?;
    server.compact_now().await?;
    let released = unix_nanos();
    server.fail_next_requests(0, 500);
    let relisted = child.read().await?;
    let done = num_u64(&relisted, "synced_ns");
    let list_started = num_u64(&relisted, "list_started_ns").max(released);
    let figures = RelistFigures {
        steady_mib: num(&relisted, "steady_mib"),
        peak_mib: num(&relisted, "peak_mib"),
        resync_s: secs_between(released, done),
        relist_s: secs_between(list_started, done),
    };
    server
        .storage()
        .delete(pod_key(server, &marker)?, Preconditions::default())
        .await?;
    Ok(figures)
}
