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
    pub(crate) synced_s: f64,
    pub(crate) cpu_s: f64,
    pub(crate) rss_mib: f64,
    pub(crate) peak_mib: f64,
    /// The rest is absent for the decode limit.
    pub(crate) watch: Option<WatchFigures>,
}

/// The watch and relist figures of a client.
#[derive(Debug, Clone, Default)]
pub(crate) struct WatchFigures {
    pub(crate) events_per_s: f64,
    /// The client's CPU time per event of the burst, in microseconds (whatever the load).
    pub(crate) cpu_us_per_event: f64,
    /// The server's own write rate during the burst.
    pub(crate) server_writes_per_s: f64,
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

/// The server seeded with the pods, and the storage key of each.
struct Cluster {
    server: TestServer,
    keys: Vec<String>,
}

/// Runs every client of `settings` in turn against one seeded server.
pub(crate) async fn run(settings: &Settings) -> Result<Vec<Figures>, BoxError> {
    let cluster = seed(settings).await?;
    let mut all = Vec::new();
    for &role in &settings.roles {
        tracing::info!(?role, "measuring");
        let figures = measure(&cluster, settings, role).await?;
        tracing::info!(?figures, "measured");
        all.push(figures);
    }
    Ok(all)
}

async fn seed(settings: &Settings) -> Result<Cluster, BoxError> {
    let mut config = ServerConfig::default();
    // The server must not drop a client that falls behind a burst: the client is measured here.
    config.cache.watcher_buffer = (settings.events + settings.latency_events) as usize;
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
    let synced = child.read().await?;
    let mut figures = Figures {
        role: Some(role),
        synced_s: num(&synced, "synced_s"),
        cpu_s: num(&synced, "cpu_s"),
        rss_mib: num(&synced, "rss_mib"),
        peak_mib: num(&synced, "peak_mib"),
        watch: None,
    };
    if synced["objects"].as_u64() != Some(settings.pods as u64) {
        return Err(format!("{role:?} synced {} objects", synced["objects"]).into());
    }
    if role != Role::Decode {
        let mut watched = watch(cluster, settings, &mut child).await?;
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
    child: &mut Child,
) -> Result<WatchFigures, BoxError> {
    let (server, keys) = (&cluster.server, &cluster.keys);
    let mut figures = WatchFigures::default();

    // Throughput: every update as fast as the server writes them.
    child.start(&format!("burst {}", settings.events)).await?;
    let began = unix_nanos();
    for k in 0..settings.events as usize {
        touch(server, &keys[k % keys.len()]).await?;
    }
    figures.server_writes_per_s = settings.events as f64 / secs_between(began, unix_nanos());
    let arrived = child.read().await?;
    let last = arrived["last_ns"].as_u64().unwrap_or(0);
    figures.events_per_s = settings.events as f64 / secs_between(began, last);
    figures.cpu_us_per_event = num(&arrived, "cpu_s") * 1e6 / settings.events as f64;

    // Latency at a fixed rate.
    child
        .start(&format!("latency {}", settings.latency_events))
        .await?;
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / settings.rate as f64));
    for k in 0..settings.latency_events as usize {
        tick.tick().await;
        touch(server, &keys[(k * 7919) % keys.len()]).await?;
    }
    let latency = child.read().await?;
    figures.p50_ms = num(&latency, "p50_ns") / 1e6;
    figures.p99_ms = num(&latency, "p99_ns") / 1e6;
    figures.max_ms = num(&latency, "max_ns") / 1e6;
    Ok(figures)
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
    let done = relisted["synced_ns"].as_u64().unwrap_or(0);
    let list_started = relisted["list_started_ns"]
        .as_u64()
        .unwrap_or(0)
        .max(released);
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
