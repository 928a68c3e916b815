//! `kcache-apiserver`: serves the kcache in-process API server over HTTP, for kubectl, kube-rs
//! clients and controllers under development.
//!
//! ```text
//! kcache-apiserver --listen 127.0.0.1:8001 --write-kubeconfig /tmp/kcache.kubeconfig \
//!     --seed manifests.yaml --churn-rate 50
//! KUBECONFIG=/tmp/kcache.kubeconfig kubectl get pods -A
//! ```
//!
//! With the `etcd` feature, `--etcd http://127.0.0.1:2379` keeps the objects in etcd instead of
//! in memory; `--etcd-servers http://a:2379,http://b:2379,http://c:2379` names the members of
//! an etcd cluster, and requests go to the healthy ones.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use kcache_apiserver::{ApiServer, Object, Preconditions, UpdateFn};
use kube_core::Resource;
use rand::Rng;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A Kubernetes-compatible list/watch API server with the API server's watch cache.
#[derive(Debug, Parser)]
#[command(name = "kcache-apiserver", version)]
struct Args {
    /// The address to serve on.
    #[arg(long, default_value = "127.0.0.1:8001")]
    listen: SocketAddr,
    /// Allow a non-loopback listen address (the server has no TLS and no authorization beyond
    /// the optional token).
    #[arg(long)]
    allow_non_loopback: bool,
    /// Write a kubeconfig pointing at the server to this path.
    #[arg(long, value_name = "PATH")]
    write_kubeconfig: Option<PathBuf>,
    /// Require this bearer token on every request.
    #[arg(long)]
    token: Option<String>,
    /// Create the objects of these YAML or JSON files at start-up (multi-document YAML and
    /// `kind: List` are accepted). Repeatable.
    #[arg(long, value_name = "FILE")]
    seed: Vec<PathBuf>,
    /// Simulated churn: pod creates, updates and deletes per second (0: none).
    #[arg(long, default_value_t = 0.0)]
    churn_rate: f64,
    /// The number of namespaces the churn spreads pods over.
    #[arg(long, default_value_t = 3)]
    churn_namespaces: usize,
    /// The number of nodes the churn spreads pods over.
    #[arg(long, default_value_t = 5)]
    churn_nodes: usize,
    /// The watch bookmark interval in seconds.
    #[arg(long, default_value_t = 60)]
    bookmark_interval: u64,
    /// Keep objects in etcd v3 at this client URL (repeatable for several members) instead of
    /// in memory.
    #[cfg(feature = "etcd")]
    #[arg(long, value_name = "URL")]
    etcd: Vec<String>,
    /// Keep objects in etcd v3 at these client URLs, comma-separated, as kube-apiserver's
    /// `--etcd-servers` (may be combined with --etcd). Requests go to the members whose last
    /// health check passed.
    #[cfg(feature = "etcd")]
    #[arg(long, value_name = "URLS", value_delimiter = ',')]
    etcd_servers: Vec<String>,
    /// The etcd key prefix (with --etcd or --etcd-servers).
    #[cfg(feature = "etcd")]
    #[arg(long, value_name = "PREFIX", default_value = kcache_apiserver::DEFAULT_PREFIX)]
    etcd_prefix: String,
    /// The range services' cluster IPs are allocated from.
    #[arg(long, value_name = "CIDR", default_value = "10.96.0.0/12")]
    service_cluster_ip_range: kcache_apiserver::Ipv4Cidr,
    /// The ports services' node ports are allocated from.
    #[arg(long, value_name = "RANGE", default_value = "30000-32767")]
    service_node_port_range: kcache_apiserver::PortRange,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kcache-apiserver: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kcache-apiserver: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    if !args.listen.ip().is_loopback() && !args.allow_non_loopback {
        return Err(format!(
            "refusing to listen on the non-loopback address {}: pass --allow-non-loopback",
            args.listen
        ));
    }
    let mut builder = ApiServer::builder()
        .bookmark_interval(Duration::from_secs(args.bookmark_interval.max(1)))
        .service_cidr(args.service_cluster_ip_range)
        .service_node_port_range(args.service_node_port_range);
    if let Some(token) = &args.token {
        builder = builder.token(token.clone());
    }
    #[cfg(feature = "etcd")]
    if !args.etcd.is_empty() || !args.etcd_servers.is_empty() {
        let endpoints: Vec<String> = args
            .etcd
            .iter()
            .chain(&args.etcd_servers)
            .filter(|url| !url.is_empty())
            .cloned()
            .collect();
        let config = kcache_apiserver::EtcdConfig::new(endpoints.clone()).prefix(&args.etcd_prefix);
        let storage = kcache_apiserver::EtcdStorage::connect(config)
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(?endpoints, prefix = %args.etcd_prefix, "storing objects in etcd");
        builder = builder.storage(std::sync::Arc::new(storage));
    }
    let server = builder.build();
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    server
        .ensure_cluster_objects(addr)
        .await
        .map_err(|e| e.to_string())?;
    for path in &args.seed {
        let objects = read_objects(path)?;
        let n = objects.len();
        server
            .seed(objects)
            .await
            .map_err(|e| format!("{}: {e}", path.display()))?;
        tracing::info!(file = %path.display(), objects = n, "seeded");
    }
    let url = format!("http://{addr}");
    if let Some(path) = &args.write_kubeconfig {
        std::fs::write(path, kubeconfig(&url, args.token.as_deref()))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        tracing::info!(path = %path.display(), "kubeconfig written");
    }
    let stop = CancellationToken::new();
    if args.churn_rate > 0.0 {
        tokio::spawn(churn(
            server.clone(),
            args.churn_rate,
            args.churn_namespaces,
            args.churn_nodes,
            stop.clone(),
        ));
    }
    let signal_stop = stop.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        signal_stop.cancel();
    });
    println!("{url}");
    kcache_apiserver::serve(listener, server, stop)
        .await
        .map_err(|e| e.to_string())
}

fn object(value: Value) -> Result<Object, String> {
    Object::from_value(value).map_err(|e| e.to_string())
}

/// The objects of a YAML or JSON file (documents, and the items of `kind: List`).
fn read_objects(path: &Path) -> Result<Vec<Object>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let docs: Vec<Value> = if text.trim_start().starts_with(['{', '[']) {
        match serde_json::from_str::<Value>(&text)
            .map_err(|e| format!("{}: {e}", path.display()))?
        {
            Value::Array(items) => items,
            v => vec![v],
        }
    } else {
        serde_saphyr::from_multiple(&text).map_err(|e| format!("{}: {e}", path.display()))?
    };
    let mut out = Vec::new();
    for doc in docs {
        if doc.is_null() {
            continue;
        }
        match doc.get("items") {
            Some(Value::Array(items))
                if doc
                    .get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.ends_with("List")) =>
            {
                for item in items {
                    out.push(object(item.clone())?);
                }
            }
            _ => out.push(object(doc)?),
        }
    }
    Ok(out)
}

/// The kubeconfig of the server at `url`: every official client accepts it as written (the
/// JavaScript client refuses an `http://` server unless `insecure-skip-tls-verify` is set; the
/// others ignore the flag for plain HTTP).
fn kubeconfig(url: &str, token: Option<&str>) -> String {
    let user = match token {
        Some(t) => format!(
            "  user:\n    token: {}\n",
            serde_json::to_string(t).unwrap_or_default()
        ),
        None => "  user: {}\n".to_owned(),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kcache\n  cluster:\n    server: {url}\n    insecure-skip-tls-verify: true\nusers:\n- name: kcache\n{user}contexts:\n- name: kcache\n  context:\n    cluster: kcache\n    user: kcache\n    namespace: default\ncurrent-context: kcache\n"
    )
}

/// Creates, updates and deletes pods at `rate` operations per second across namespaces and nodes.
async fn churn(
    server: ApiServer,
    rate: f64,
    namespaces: usize,
    nodes: usize,
    stop: CancellationToken,
) {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate.max(0.001)));
    let mut live: Vec<(String, String)> = Vec::new();
    let Some(pods) = server.resource_for_kind("v1", "Pod") else {
        return;
    };
    let mut created_ns = false;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        if !created_ns {
            let objs: Vec<Object> = (0..namespaces.max(1))
                .filter_map(|i| object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("churn-{i}")}})).ok())
                .collect();
            let _ = server.seed(objs).await;
            created_ns = true;
        }
        let (op, ns_i, node_i) = {
            let mut rng = rand::rng();
            (
                rng.random_range(0..10u8),
                rng.random_range(0..namespaces.max(1)),
                rng.random_range(0..nodes.max(1)),
            )
        };
        if live.len() < 20 || op < 4 {
            let pod = json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"generateName": "churn-", "namespace": format!("churn-{ns_i}"), "labels": {"app": "churn"}},
                "spec": {"nodeName": format!("node-{node_i}"), "containers": [{"name": "app", "image": "registry.example.com/app:1"}]},
                "status": {"phase": "Pending"}
            });
            if let Ok(obj) = object(pod)
                && let Ok(created) = server.create(obj).await
            {
                live.push((
                    format!("churn-{ns_i}"),
                    created.meta().name.clone().unwrap_or_default(),
                ));
            }
        } else if op < 8 {
            let i = rand::rng().random_range(0..live.len());
            let (ns, name) = live[i].clone();
            let f: UpdateFn = Box::new(move |cur| {
                let cur = cur.ok_or_else(|| kcache_apiserver::ApiError::bad_request("gone"))?;
                let mut next = (**cur).clone();
                let phase = if cur.field("status.phase").as_deref() == Some("Running") {
                    "Pending"
                } else {
                    "Running"
                };
                let mut data = next.data();
                data.insert("status".into(), json!({"phase": phase}));
                next.set_data(data);
                Ok(next)
            });
            let _ = server
                .storage()
                .guaranteed_update(pods.storage_key(Some(&ns), &name), f)
                .await;
        } else {
            let i = rand::rng().random_range(0..live.len());
            let (ns, name) = live.swap_remove(i);
            let _ = server
                .storage()
                .delete(pods.storage_key(Some(&ns), &name), Preconditions::default())
                .await;
        }
    }
}
