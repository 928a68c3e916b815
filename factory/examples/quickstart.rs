//! The kcache quick start: shared informers, listers and a work-queue controller on a live cluster.
//!
//! ```sh
//! cargo run --release -p kcache-factory --example quickstart            # embedded API server
//! cargo run --release -p kcache-factory --example quickstart -- --kubeconfig   # your cluster, read-only
//! ```
//!
//! By default it starts kcache's in-process API server with a simulated cluster (nodes,
//! namespaces, pods) and a churn task that creates, updates and deletes pods through the API at a
//! steady rate. A [`SharedInformerFactory`] gives pod (indexed by namespace and node) and node
//! informers; a small controller keeps the number of running pods per node, fed by a
//! [`WorkQueue`] of node names and reading the pod index. Progress is shown per listed page while
//! the caches sync, then a summary once a second and a final summary line. `--duration SECS`
//! stops that long after the caches synced; Ctrl-C stops at any time. `--metrics-addr ADDR`
//! serves the informers' and the work queue's Prometheus metrics (`informer_*` and client-go's
//! `workqueue_*` families, registered by `SharedInformerFactory::register_metrics`) on
//! `http://ADDR/metrics`. Everything shuts down cleanly; errors are
//! printed with their causes.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use k8s_openapi::api::core::v1::{Node, Pod};
use kcache_apiserver::{Object, TestServer};
use kcache_factory::{ReflectorConfig, ReflectorMetrics, SharedInformerFactory};
use kcache_informer::{EnqueueHandler, ResourceEventHandlerFuncs};
use kcache_store::{NODE_NAME_INDEX, node_name_index_func, testing};
use kcache_workqueue::{WorkQueue, WorkQueueConfig};
use kube_client::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube_client::{Api, Client, Config};
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use rand::Rng;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
#[command(
    about = "kcache quick start: shared informers and a controller on a simulated (or real) cluster"
)]
struct Args {
    /// Stop this many seconds after the caches synced (default: run until Ctrl-C).
    #[arg(long)]
    duration: Option<u64>,
    /// Use the cluster of this kubeconfig (or of the default kubeconfig when no path is given),
    /// read-only, instead of the embedded API server.
    #[arg(long, num_args = 0..=1, value_name = "PATH")]
    kubeconfig: Option<Option<PathBuf>>,
    /// Same as `--kubeconfig` with the default kubeconfig.
    #[arg(long)]
    cluster: bool,
    /// Simulated cluster: pods.
    #[arg(long, default_value_t = 5_000)]
    pods: usize,
    /// Simulated cluster: nodes (at most 20, the fixture's node count).
    #[arg(long, default_value_t = 20)]
    nodes: usize,
    /// Simulated cluster: namespaces.
    #[arg(long, default_value_t = 50)]
    namespaces: usize,
    /// Simulated cluster: pod creates, updates and deletes per second.
    #[arg(long, default_value_t = 200.0)]
    churn: f64,
    /// Serve Prometheus metrics on http://ADDR/metrics (for example 127.0.0.1:9090).
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
}

/// Events seen per handler since start.
#[derive(Default)]
struct Counters {
    pods: AtomicU64,
    nodes: AtomicU64,
    reconciles: AtomicU64,
}

type BoxError = Box<dyn std::error::Error>;

#[path = "shared/metrics.rs"]
mod metrics;
use metrics::serve_metrics;

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => return report(&e),
    };
    match runtime.block_on(quickstart(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(&*e),
    }
}

/// Prints `error` and the chain of its causes, one per line, and fails.
fn report(error: &dyn std::error::Error) -> ExitCode {
    eprintln!("error: {error}");
    let mut cause = error.source();
    while let Some(e) = cause {
        eprintln!("  caused by: {e}");
        cause = e.source();
    }
    ExitCode::FAILURE
}

async fn quickstart(args: Args) -> Result<(), BoxError> {
    let stop = CancellationToken::new();
    let ctrl_c = stop.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            ctrl_c.cancel();
        }
    });
    let embedded = args.kubeconfig.is_none() && !args.cluster;
    let (client, server, expected_pods) = if embedded {
        let (server, client) = simulated_cluster(&args).await?;
        (client, Some(server), Some(args.pods as u64))
    } else {
        (
            cluster_client(args.kubeconfig.flatten().as_deref()).await?,
            None,
            None,
        )
    };

    let churn = server.as_ref().map(|_| {
        tokio::spawn(churn(
            client.clone(),
            args.churn,
            args.namespaces,
            args.nodes,
            args.pods,
            stop.clone(),
        ))
    });
    let duration = args.duration.map(Duration::from_secs);
    let outcome = run(
        client,
        args.metrics_addr,
        expected_pods,
        duration,
        stop.clone(),
    )
    .await;
    stop.cancel();
    if let Some(churn) = churn {
        churn.await?;
    }
    drop(server);
    outcome?;
    println!("shut down cleanly");
    Ok(())
}

/// Informers, controller, progress and summary until `stop` fires or `duration` has passed since
/// the caches synced; then a clean shutdown.
async fn run(
    client: Client,
    metrics_addr: Option<SocketAddr>,
    expected_pods: Option<u64>,
    duration: Option<Duration>,
    stop: CancellationToken,
) -> Result<(), BoxError> {
    let (pages_tx, mut pages) = mpsc::unbounded_channel();
    let factory = SharedInformerFactory::builder(client)
        .reflector(ReflectorConfig::default().metrics(Arc::new(ListProgress(pages_tx))))
        .build();
    let pods = factory.informer::<Pod>();
    pods.add_index(NODE_NAME_INDEX, node_name_index_func())?;
    let nodes = factory.informer::<Node>();
    // The informers' and the work queue's metrics, in one registry.
    let mut registry = Registry::default();
    let queue_metrics = factory.register_metrics(&mut registry);
    if let Some(addr) = metrics_addr {
        let served = serve_metrics(addr, registry, stop.clone()).await?;
        println!("metrics at http://{served}/metrics");
    }

    // Pod events put the pod's node on the queue; both informers count their events.
    let queue: WorkQueue<String> = WorkQueue::with_config(
        WorkQueueConfig::default()
            .name("nodes")
            .metrics(Arc::new(queue_metrics)),
    );
    let counters = Arc::new(Counters::default());
    pods.add_event_handler(EnqueueHandler::keys_with(queue.clone(), {
        let counters = Arc::clone(&counters);
        move |pod: &Pod| {
            counters.pods.fetch_add(1, Ordering::Relaxed);
            node_of(pod).into_iter().collect()
        }
    }))?;
    nodes.add_event_handler(ResourceEventHandlerFuncs::new().add_func({
        let counters = Arc::clone(&counters);
        move |_: &Arc<Node>, _| {
            counters.nodes.fetch_add(1, Ordering::Relaxed);
        }
    }))?;

    // The controller: running pods per node, recomputed from the pod index for each queued node.
    let running: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let workers = tokio::spawn(queue.run_workers(2, {
        let (indexer, running, counters) = (pods.indexer(), running.clone(), counters.clone());
        move |node: String| {
            let count = indexer
                .by_index(NODE_NAME_INDEX, &node)
                .map(|pods| pods.iter().filter(|p| is_running(p)).count());
            counters.reconciles.fetch_add(1, Ordering::Relaxed);
            let running = running.clone();
            async move {
                running.lock().insert(node, count?);
                Ok::<(), kcache_store::StoreError>(())
            }
        }
    }));

    factory.start()?;
    let started = Instant::now();
    let synced = tokio::select! {
        synced = show_sync_progress(&factory, &mut pages, expected_pods) => synced,
        () = stop.cancelled() => false,
    };
    if synced {
        println!(
            "caches synced in {:.2}s: {} pods, {} nodes",
            started.elapsed().as_secs_f64(),
            pods.indexer().len(),
            nodes.indexer().len()
        );
        if let Some(duration) = duration {
            let deadline = stop.clone();
            tokio::spawn(async move {
                tokio::time::sleep(duration).await;
                deadline.cancel();
            });
        }
        summarise(&pods, &nodes, &queue, &counters, &running, &stop).await;
    }

    factory.shutdown().await;
    queue.shut_down_with_drain().await;
    workers.await?;
    println!(
        "summary: ran {:.1}s; {} pod and {} node events; {} reconciles; {} pods and {} nodes cached at the end",
        started.elapsed().as_secs_f64(),
        counters.pods.load(Ordering::Relaxed),
        counters.nodes.load(Ordering::Relaxed),
        counters.reconciles.load(Ordering::Relaxed),
        pods.indexer().len(),
        nodes.indexer().len()
    );
    Ok(())
}

fn node_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref()?.node_name.clone()
}

fn is_running(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

/// The reflectors' list progress: one message per listed page (informer, items so far).
#[derive(Debug)]
struct ListProgress(mpsc::UnboundedSender<(String, usize)>);

impl ReflectorMetrics for ListProgress {
    fn list_page(&self, name: &str, items_so_far: usize, _remaining: Option<i64>) {
        let _ = self.0.send((name.to_owned(), items_so_far));
    }
}

/// A progress bar of listed pods, moved by each listed page, until every informer synced.
/// Returns whether they all did.
async fn show_sync_progress(
    factory: &SharedInformerFactory,
    pages: &mut mpsc::UnboundedReceiver<(String, usize)>,
    expected: Option<u64>,
) -> bool {
    let bar = match expected {
        Some(n) => ProgressBar::new(n).with_style(
            ProgressStyle::with_template("syncing caches [{bar:40}] {pos}/{len} pods listed")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        ),
        None => ProgressBar::new_spinner().with_message("syncing caches"),
    };
    let wait = factory.wait_for_cache_sync();
    tokio::pin!(wait);
    let show = |(informer, listed): (String, usize)| {
        if informer == "v1/Pod" {
            bar.set_position(listed as u64);
        }
        // Without a terminal the bar is hidden: print each page instead.
        if bar.is_hidden() {
            println!("listing {informer}: {listed} listed");
        }
    };
    let result = loop {
        tokio::select! {
            synced = &mut wait => break synced,
            Some(page) = pages.recv() => show(page),
        }
    };
    // Pages reported just before the sync.
    while let Ok(page) = pages.try_recv() {
        show(page);
    }
    bar.finish();
    result.values().all(|synced| *synced)
}

/// A summary line once a second until `stop`, labelled with the whole seconds since sync.
async fn summarise(
    pods: &kcache_informer::SharedIndexInformer<Pod>,
    nodes: &kcache_informer::SharedIndexInformer<Node>,
    queue: &WorkQueue<String>,
    counters: &Counters,
    running: &Mutex<HashMap<String, usize>>,
    stop: &CancellationToken,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let (mut last_pods, mut last_nodes) = (
        counters.pods.load(Ordering::Relaxed),
        counters.nodes.load(Ordering::Relaxed),
    );
    for second in 1u64.. {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let (p, n) = (
            counters.pods.load(Ordering::Relaxed),
            counters.nodes.load(Ordering::Relaxed),
        );
        let mut top: Vec<(String, usize)> = running
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let top: Vec<String> = top
            .iter()
            .take(5)
            .map(|(node, n)| format!("{node}={n}"))
            .collect();
        println!(
            "[{second:>4}s] cached: {} pods, {} nodes | events/s: pods {}, nodes {} | queue depth {} | running pods per node (top 5): {}",
            pods.indexer().len(),
            nodes.indexer().len(),
            p - last_pods,
            n - last_nodes,
            queue.len(),
            top.join(" ")
        );
        (last_pods, last_nodes) = (p, n);
    }
}

/// A client for the cluster of a kubeconfig (the default one when `path` is empty).
async fn cluster_client(path: Option<&std::path::Path>) -> Result<Client, BoxError> {
    let config = match path.filter(|p| !p.as_os_str().is_empty()) {
        Some(path) => {
            let kubeconfig = kube_client::config::Kubeconfig::read_from(path)?;
            Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?
        }
        None => Config::infer().await?,
    };
    println!("watching the cluster at {} (read-only)", config.cluster_url);
    Ok(Client::try_from(config)?)
}

/// Starts the embedded API server and seeds it with nodes, namespaces and pods.
async fn simulated_cluster(args: &Args) -> Result<(TestServer, Client), BoxError> {
    // The fixture pods name ReplicaSets that do not exist: no garbage collection.
    let builder = kcache_apiserver::ApiServer::builder().garbage_collection(false);
    let server = TestServer::start_with(builder).await?;
    let mut objects = Vec::with_capacity(args.pods + args.nodes + args.namespaces);
    for i in 0..args.namespaces {
        objects.push(Object::from_value(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": testing::namespace_of(i, args.namespaces)}}))?);
    }
    for i in 0..args.nodes.min(testing::NODES) {
        objects.push(Object::from_value(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": format!("node-{i}")}, "status": {"phase": "Running"}}))?);
    }
    for i in 0..args.pods {
        objects.push(Object::from_value(testing::pod_json(
            i,
            args.namespaces,
            0,
        ))?);
    }
    server.seed(objects).await?;
    println!(
        "embedded API server at {} with {} pods, {} nodes, {} namespaces",
        server.url(),
        args.pods,
        args.nodes,
        args.namespaces
    );
    let client = server.client()?;
    Ok((server, client))
}

/// Creates, updates (phase flips) and deletes pods through the API at `rate` operations per second.
async fn churn(
    client: Client,
    rate: f64,
    namespaces: usize,
    nodes: usize,
    seeded: usize,
    stop: CancellationToken,
) {
    if rate <= 0.0 {
        return;
    }
    let mut live: Vec<usize> = (0..seeded).collect();
    let mut next = seeded;
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let (op, pick) = {
            let mut rng = rand::rng();
            (
                rng.random_range(0..10u8),
                rng.random_range(0..live.len().max(1)),
            )
        };
        let result = match op {
            0..=5 if !live.is_empty() => {
                let pod = testing::pod(live[pick], namespaces);
                let (ns, name) = (
                    pod.metadata.namespace.clone().unwrap_or_default(),
                    pod.metadata.name.clone().unwrap_or_default(),
                );
                let phase = if op % 2 == 0 { "Running" } else { "Pending" };
                Api::<Pod>::namespaced(client.clone(), &ns)
                    .patch_status(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"status": {"phase": phase}})),
                    )
                    .await
                    .map(drop)
            }
            6..=7 if live.len() > 1 => {
                let i = live.swap_remove(pick);
                let pod = testing::pod(i, namespaces);
                let ns = pod.metadata.namespace.clone().unwrap_or_default();
                Api::<Pod>::namespaced(client.clone(), &ns)
                    .delete(
                        pod.metadata.name.as_deref().unwrap_or_default(),
                        &DeleteParams::default(),
                    )
                    .await
                    .map(drop)
            }
            _ => {
                let mut pod = testing::pod(next, namespaces);
                pod.metadata.resource_version = None;
                if let Some(spec) = pod.spec.as_mut() {
                    spec.node_name =
                        Some(format!("node-{}", next % nodes.clamp(1, testing::NODES)));
                }
                live.push(next);
                next += 1;
                let ns = pod.metadata.namespace.clone().unwrap_or_default();
                Api::<Pod>::namespaced(client.clone(), &ns)
                    .create(&PostParams::default(), &pod)
                    .await
                    .map(drop)
            }
        };
        if let Err(e) = result {
            tracing::debug!(error = %e, "churn request failed");
        }
    }
}
