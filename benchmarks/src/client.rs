//! The child processes: one client under test each. A child syncs, reports, then follows the
//! parent's commands on stdin and answers one JSON line per step on stdout.
//!
//! Commands: `burst N` and `latency N` (count the next N stamped updates; answer `ready`, then
//! their arrival), `relist LEN` (reset the memory peak, answer `ready`, then report once the
//! cache holds LEN objects), `exit`.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kcache_factory::{SharedInformerFactory, drop_managed_fields};
use kcache_informer::{ResourceEventHandlerFuncs, SharedIndexInformer};
use kcache_store::{IndexFunc, Indexers};
use kube_client::{Api, Client};
use kube_core::params::{ListParams, WatchParams};
use kube_core::{ObjectList, PartialObjectMeta, Resource};
use kube_runtime::{WatchStreamExt, reflector, watcher};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::measure::{Cpu, memory, reset_peak, unix_nanos};
use crate::probe::{Probe, quantile, stamp_in_line};
use crate::{BoxError, Role};

/// Writes one protocol line to the parent.
fn say(line: Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Logs warnings to stderr; for kcache, also records when the reflector starts a list (its
/// `list` span) so a relist's own duration can be told from the backoff before it.
fn init_tracing(probe: &Arc<Probe>) {
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(tracing_subscriber::EnvFilter::new(
            "warn,kube_client::client::builder=off",
        ));
    let lists = ListStarts(Arc::clone(probe)).with_filter(filter_fn(|m| {
        m.is_span() && m.name() == "list" && m.target().starts_with("kcache_reflector")
    }));
    tracing_subscriber::registry().with(logs).with(lists).init();
}

struct ListStarts(Arc<Probe>);

impl<S: tracing::Subscriber> Layer<S> for ListStarts {
    fn on_new_span(
        &self,
        _: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        self.0.list_started();
    }
}

/// Runs the client `role` against the server at `url` holding `pods` pods.
pub(crate) async fn run(role: Role, url: &str, pods: usize) -> Result<(), BoxError> {
    let probe = Arc::new(Probe::default());
    init_tracing(&probe);
    let client = kcache_apiserver::client_for(url, None, "default")?;
    match role {
        Role::Decode => decode(client, pods).await,
        Role::Wire => wire(client, probe).await,
        Role::Kcache | Role::KcacheNoManagedFields | Role::KcacheCompact => {
            kcache(client, role, probe).await
        }
        Role::KcacheMetadata => kcache_metadata(client, probe).await,
        Role::KubeRuntime | Role::KubeRuntimeDefault => {
            let mut config = watcher::Config::default();
            if role == Role::KubeRuntime {
                config = config.any_semantic();
            }
            kube_runtime(watcher(Api::<Pod>::all(client), config), probe).await
        }
        Role::KubeRuntimeMetadata => {
            let config = watcher::Config::default().any_semantic();
            let api = Api::<PartialObjectMeta<Pod>>::all(client);
            kube_runtime(watcher(api, config), probe).await
        }
    }
}

/// The factory's informer of pods, with a node index and one update handler.
async fn kcache(client: Client, role: Role, probe: Arc<Probe>) -> Result<(), BoxError> {
    let (start, cpu) = (Instant::now(), Cpu::now());
    let mut builder = SharedInformerFactory::builder(client);
    if role == Role::KcacheNoManagedFields {
        builder = builder.transform_for::<Pod>(drop_managed_fields());
    }
    if role == Role::KcacheCompact {
        builder = builder.compact_cache_for::<Pod>();
    }
    let factory = builder.build();
    let informer = factory.informer::<Pod>();
    informer.add_indexers(indexes())?;
    follow(factory, informer, (start, cpu), probe).await
}

/// The factory's metadata-only informer of pods (`PartialObjectMeta<Pod>`).
async fn kcache_metadata(client: Client, probe: Arc<Probe>) -> Result<(), BoxError> {
    let (start, cpu) = (Instant::now(), Cpu::now());
    let factory = SharedInformerFactory::new(client);
    let informer = factory.metadata_informer::<Pod>();
    follow(factory, informer, (start, cpu), probe).await
}

/// Gives `informer` one update handler (the probe reads each new object's write stamp), starts
/// `factory`, reports the sync timed from `started`, then follows the parent's commands.
async fn follow<K: Resource + Send + Sync + 'static>(
    factory: SharedInformerFactory,
    informer: SharedIndexInformer<K>,
    started: (Instant, Cpu),
    probe: Arc<Probe>,
) -> Result<(), BoxError> {
    let seen = Arc::clone(&probe);
    informer.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .update_func(move |_, new: &Arc<K>| seen.observe(new.meta())),
    )?;
    factory.start()?;
    factory.wait_for_cache_sync().await;
    say(synced_figures(
        started.0,
        started.1,
        informer.indexer().len(),
    ));
    let served = serve(&probe, &|| informer.indexer().len()).await;
    drop(factory);
    served
}

/// kube-runtime's `watcher` (of pods, or of `PartialObjectMeta<Pod>`) + `reflector` as kube-rs's
/// examples run them: with `default_backoff()`, the stream polled by the future
/// `#[tokio::main]` blocks on, the store's reader on a task of its own (here, the one following
/// the parent's commands).
/// [`Role::KubeRuntime`] and [`Role::KubeRuntimeMetadata`] list with `any_semantic()`
/// (resourceVersion=0, as kcache's first list), [`Role::KubeRuntimeDefault`] with the default
/// (the most recent, paged from a watch-cache snapshot).
async fn kube_runtime<K>(
    stream: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
    probe: Arc<Probe>,
) -> Result<(), BoxError>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    let (start, cpu) = (Instant::now(), Cpu::now());
    let (reader, writer) = reflector::store::<K>();
    let seen = Arc::clone(&probe);
    let commands = tokio::spawn(async move {
        reader.wait_until_ready().await?;
        say(synced_figures(start, cpu, reader.len()));
        serve(&seen, &|| reader.len()).await
    });
    let events = stream.default_backoff().reflect(writer).for_each(|event| {
        match event {
            Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => {
                probe.observe(object.meta())
            }
            Ok(watcher::Event::Init) => probe.list_started(),
            _ => {}
        }
        futures::future::ready(())
    });
    tokio::select! {
        () = events => Err("the watch stream ended".into()),
        served = commands => served?,
    }
}

/// An index by node, as a node agent or a scheduler-like controller has (the factory's informers
/// come with the namespace index).
fn indexes() -> Indexers<Pod> {
    let by_node: IndexFunc<Pod> = Arc::new(|pod: &Pod| {
        Ok(pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect())
    });
    let mut indexes = Indexers::default();
    indexes.insert("node".to_owned(), by_node);
    indexes
}

fn synced_figures(start: Instant, cpu: Cpu, objects: usize) -> Value {
    let m = memory();
    let used = Cpu::now().since(cpu);
    json!({
        "synced_s": start.elapsed().as_secs_f64(),
        "user_s": used.user,
        "sys_s": used.sys,
        "objects": objects,
        "rss_mib": m.rss,
        "peak_mib": m.peak,
    })
}

/// Follows the parent's commands until `exit` or the end of stdin.
async fn serve(probe: &Probe, len: &(dyn Fn() -> usize + Sync)) -> Result<(), BoxError> {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        let mut words = line.split_whitespace();
        let command = words.next().unwrap_or_default();
        let n: u64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
        match command {
            "burst" | "drain" | "latency" => {
                let before = memory();
                reset_peak();
                probe.arm(n, command == "latency");
                say(json!({"ready": true}));
                let mut seen = probe.wait().await;
                say(json!({
                    "user_s": seen.cpu.user,
                    "sys_s": seen.cpu.sys,
                    "rss_growth_mib": memory().peak - before.rss,
                    "first_ns": seen.first_ns,
                    "last_ns": seen.last_ns,
                    "p50_ns": quantile(&mut seen.latencies_ns, 0.50),
                    "p99_ns": quantile(&mut seen.latencies_ns, 0.99),
                    "max_ns": quantile(&mut seen.latencies_ns, 1.0),
                }));
            }
            "relist" => {
                let steady = memory();
                reset_peak();
                say(json!({"ready": true}));
                // The parent forces the relist now; the cache reaches `n` objects only when the
                // relist has been applied (the extra object is listed last).
                while len() as u64 != n {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                let done = unix_nanos();
                let m = memory();
                say(json!({
                    "synced_ns": done,
                    "list_started_ns": probe.list_started_ns(),
                    "steady_mib": steady.rss,
                    "rss_mib": m.rss,
                    "peak_mib": m.peak,
                }));
            }
            _ => break,
        }
    }
    Ok(())
}

/// Lists the pods in pages of 500, as the clients list them, handing each page's body to `page`,
/// which answers the page's continue token (none or empty: it was the last).
async fn each_page(
    client: &Client,
    mut page: impl FnMut(String) -> Result<Option<String>, BoxError>,
) -> Result<(), BoxError> {
    let mut token: Option<String> = None;
    loop {
        let params = ListParams {
            limit: Some(500),
            continue_token: token.take(),
            ..ListParams::default()
        };
        let request = kube_core::Request::new("/api/v1/pods").list(&params)?;
        token = page(client.request_text(request).await?)?.filter(|t| !t.is_empty());
        if token.is_none() {
            return Ok(());
        }
    }
}

/// The limit: the same list pages decoded by serde_json on one thread into pods that are kept.
/// Only the decoding is timed; fetching is not.
async fn decode(client: Client, pods: usize) -> Result<(), BoxError> {
    let mut kept: Vec<Pod> = Vec::with_capacity(pods);
    let (mut secs, mut cpu) = (0.0, Cpu::default());
    each_page(&client, |page| {
        let (start, cpu0) = (Instant::now(), Cpu::now());
        let list: ObjectList<Pod> = serde_json::from_str(&page)?;
        secs += start.elapsed().as_secs_f64();
        let used = Cpu::now().since(cpu0);
        cpu.user += used.user;
        cpu.sys += used.sys;
        drop(page);
        kept.extend(list.items);
        Ok(list.metadata.continue_)
    })
    .await?;
    let m = memory();
    say(json!({
        "synced_s": secs,
        "user_s": cpu.user,
        "sys_s": cpu.sys,
        "objects": kept.len(),
        "rss_mib": m.rss,
        "peak_mib": m.peak,
    }));
    Ok(())
}

/// The floor of the write → handler latency: the server and the connection alone. Lists the pods
/// (only counting them) for a resource version, then reads the raw watch lines from it, taking
/// only the write stamp out of each; nothing is decoded or cached.
async fn wire(client: Client, probe: Arc<Probe>) -> Result<(), BoxError> {
    let (start, cpu) = (Instant::now(), Cpu::now());
    let (mut objects, mut resource_version) = (0, None);
    each_page(&client, |page| {
        let list: ObjectList<serde::de::IgnoredAny> = serde_json::from_str(&page)?;
        objects += list.items.len();
        // Every page is read at the first page's resource version.
        resource_version.get_or_insert(list.metadata.resource_version.unwrap_or_default());
        Ok(list.metadata.continue_)
    })
    .await?;
    say(synced_figures(start, cpu, objects));
    let request = kube_core::Request::new("/api/v1/pods").watch(
        &WatchParams::default().timeout(3600),
        &resource_version.unwrap_or_default(),
    )?;
    let mut lines = futures::AsyncBufReadExt::lines(client.request_stream(request).await?);
    let seen = Arc::clone(&probe);
    tokio::spawn(async move {
        while let Some(Ok(line)) = lines.next().await {
            if let Some(written) = stamp_in_line(&line) {
                seen.observe_stamp(written);
            }
        }
    });
    serve(&probe, &|| objects).await
}
