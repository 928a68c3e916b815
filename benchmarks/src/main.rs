//! `bench-e2e`: kcache against kube-runtime, whole processes, one machine, one run.
//!
//! The parent starts the in-process API server with N realistic pods (`kcache_store::testing`,
//! ≈8.7 KB of JSON each) and runs each client in a fresh child process (this binary again, with
//! the hidden `client` command), so that each peak of resident memory is the client's own:
//!
//! 1. kcache: the factory's `SharedIndexInformer` of pods with a namespace and a node index and
//!    one update handler (once more with the `drop_managed_fields` transform, and once with the
//!    compact cache, `compact_cache_for::<Pod>()`);
//! 2. kube-runtime 5: `watcher` + `reflector` as its examples run them (`default_backoff()`, the
//!    stream polled by the main future), listing as kcache does (`any_semantic()`), and once more
//!    with its default list (the most recent, paged from a watch-cache snapshot);
//! 3. the limit: serde_json decoding the same list pages on one thread; the floor: the raw watch
//!    lines, not decoded.
//!
//! Per client: start → synced time, CPU seconds (user and system), resident memory once synced
//! and its peak; then MODIFIED events written as fast as the server can while the client reads
//! them (server-bound), the same burst written while the client's watch is ended and then read
//! from its resource version with the server idle (the client's own drain rate, CPU per event
//! and RSS growth), the server-write → handler latency at a fixed rate (the server stamps the
//! instant of each write into an annotation; both processes read the same wall clock), and a
//! forced relist (watch ended, history compacted while the client cannot reconnect): the peak
//! during the relist and the time to resync. The figures, the targets as ratios and an SVG chart
//! go into BENCHMARKS.md.
//!
//! ```text
//! cargo xtask bench-e2e [--pods N] [--quick] [--mimalloc]
//! ```

mod client;
mod measure;
mod probe;
mod report;
mod run;
mod server;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// With the `mimalloc` feature every process of the run allocates with mimalloc.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// kcache against kube-runtime, whole processes: sync, watch throughput and latency, relist.
#[derive(Debug, Parser)]
#[command(name = "bench-e2e")]
struct Args {
    #[command(subcommand)]
    child: Option<ChildCommand>,
    /// The number of pods the server holds.
    #[arg(long, default_value_t = 50_000)]
    pods: usize,
    /// MODIFIED events written as fast as the server can.
    #[arg(long, default_value_t = 100_000)]
    events: u64,
    /// Events written at the fixed rate to measure latency.
    #[arg(long, default_value_t = 25_000)]
    latency_events: u64,
    /// The fixed rate, in events per second.
    #[arg(long, default_value_t = 5_000)]
    rate: u64,
    /// Watchers of the server section's fan-out.
    #[arg(long, default_value_t = 1_000)]
    watchers: usize,
    /// Events written to the fan-out's watchers.
    #[arg(long, default_value_t = 2_000)]
    fanout_events: u64,
    /// How many times each client syncs (the first within its whole measurement, the others in
    /// rounds of sync only, the clients' order rotated each round); the sync figures are the
    /// medians. 1 with `--quick`.
    #[arg(long, default_value_t = 3)]
    sync_rounds: usize,
    /// Leaves the server section out (the API server's own figures).
    #[arg(long)]
    no_server: bool,
    /// The clients to measure, in order.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Role::ALL)]
    clients: Vec<Role>,
    /// A smoke run: 5,000 pods, 10,000 events per burst, 5,000 at the fixed rate (overrides
    /// `--pods`, `--events` and `--latency-events`).
    #[arg(long)]
    quick: bool,
    /// The report to update (its generated section) and, next to it, the chart.
    #[arg(long, default_value = "BENCHMARKS.md")]
    out: PathBuf,
}

#[derive(Debug, Subcommand)]
enum ChildCommand {
    /// Runs one client (the parent starts these).
    #[command(hide = true)]
    Client {
        role: Role,
        #[arg(long)]
        url: String,
        #[arg(long)]
        pods: usize,
    },
}

/// A client under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Role {
    /// kcache's factory informer.
    Kcache,
    /// The same with the `drop_managed_fields` transform.
    KcacheNoManagedFields,
    /// The same with the compact cache (`compact_cache_for::<Pod>()`).
    KcacheCompact,
    /// The factory's metadata-only informer (`metadata_informer::<Pod>()`).
    KcacheMetadata,
    /// kube-runtime's watcher + reflector listing as kcache does (`any_semantic()`:
    /// resourceVersion=0, answered from the watch cache).
    KubeRuntime,
    /// kube-runtime's watcher + reflector with its defaults (the most recent list, in pages of
    /// 500 from the watch cache's snapshot).
    KubeRuntimeDefault,
    /// kube-runtime's watcher + reflector of `PartialObjectMeta<Pod>` (what replaced
    /// `metadata_watcher`), `any_semantic()`.
    KubeRuntimeMetadata,
    /// serde_json decoding the list pages on one thread.
    Decode,
    /// The latency floor: the raw watch lines, only their write stamp read (server and
    /// connection alone, no decoding, no cache).
    Wire,
}

impl Role {
    const ALL: [Role; 9] = [
        Role::Kcache,
        Role::KcacheNoManagedFields,
        Role::KcacheCompact,
        Role::KcacheMetadata,
        Role::KubeRuntime,
        Role::KubeRuntimeDefault,
        Role::KubeRuntimeMetadata,
        Role::Decode,
        Role::Wire,
    ];

    /// The command-line name.
    fn name(self) -> &'static str {
        match self {
            Role::Kcache => "kcache",
            Role::KcacheNoManagedFields => "kcache-no-managed-fields",
            Role::KcacheCompact => "kcache-compact",
            Role::KcacheMetadata => "kcache-metadata",
            Role::KubeRuntime => "kube-runtime",
            Role::KubeRuntimeDefault => "kube-runtime-default",
            Role::KubeRuntimeMetadata => "kube-runtime-metadata",
            Role::Decode => "decode",
            Role::Wire => "wire",
        }
    }

    /// How the client lists first.
    fn first_list(self) -> &'static str {
        match self {
            Role::Kcache
            | Role::KcacheNoManagedFields
            | Role::KcacheMetadata
            | Role::KubeRuntime
            | Role::KubeRuntimeMetadata => {
                "resourceVersion=0&limit=500: one answer from the watch cache"
            }
            Role::KcacheCompact | Role::KubeRuntimeDefault | Role::Decode | Role::Wire => {
                "limit=500: the most recent, in pages from a watch-cache snapshot"
            }
        }
    }

    /// The name in the report.
    fn label(self) -> &'static str {
        match self {
            Role::Kcache => "kcache SharedIndexInformer",
            Role::KcacheNoManagedFields => "kcache + drop_managed_fields",
            Role::KcacheCompact => "kcache compact cache",
            Role::KcacheMetadata => "kcache metadata-only informer",
            Role::KubeRuntime => "kube-runtime watcher + reflector, `any_semantic()`",
            Role::KubeRuntimeDefault => "kube-runtime watcher + reflector, defaults",
            Role::KubeRuntimeMetadata => {
                "kube-runtime watcher + reflector of `PartialObjectMeta`, `any_semantic()`"
            }
            Role::Decode => "limit: serde_json, one thread",
            Role::Wire => "floor: raw watch lines, not decoded",
        }
    }
}

/// What the parent measures, and how it was asked for.
#[derive(Debug)]
struct Settings {
    pods: usize,
    events: u64,
    latency_events: u64,
    rate: u64,
    roles: Vec<Role>,
    sync_rounds: usize,
    watchers: usize,
    fanout_events: u64,
    command: String,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let (result, child) = match args.child {
        Some(ChildCommand::Client { role, url, pods }) => {
            (client::run(role, &url, pods).await, true)
        }
        None => (parent(args).await, false),
    };
    let code = match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("bench-e2e: {e}");
            1
        }
    };
    if child {
        // A client's tasks are not shut down: kube-runtime's watcher retries without yielding
        // once the runtime's I/O driver is gone, so waiting for the runtime would never end.
        std::process::exit(code);
    }
    if code == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn parent(args: Args) -> Result<(), BoxError> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("bench_e2e=info,warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let (pods, events, latency_events) = if args.quick {
        (5_000, 10_000, 5_000)
    } else {
        (args.pods, args.events, args.latency_events)
    };
    let settings = Settings {
        pods,
        events,
        latency_events,
        rate: args.rate.max(1),
        roles: args.clients,
        sync_rounds: if args.quick {
            1
        } else {
            args.sync_rounds.max(1)
        },
        watchers: args.watchers,
        fanout_events: args.fanout_events,
        command: format!(
            "cargo xtask bench-e2e {}{}",
            if args.quick {
                "--quick".to_owned()
            } else {
                format!("--pods {pods}")
            },
            if cfg!(feature = "mimalloc") {
                " --mimalloc"
            } else {
                ""
            }
        ),
    };
    let mut machine = report::Machine::read();
    let cluster = run::seed(&settings).await?;
    // The server's own figures first, while the process is fresh: measured after the clients'
    // bursts, its etcd creates and storage list read at a third of what they read alone.
    let server = if args.no_server {
        None
    } else {
        Some(server::run(&cluster, &settings).await?)
    };
    let figures = run::clients(&cluster, &settings).await?;
    machine.load_after = report::load();
    let chart = args.out.with_file_name("BENCHMARKS.svg");
    report::chart(&chart, &figures)?;
    let chart_name = chart
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut section = report::markdown(&settings, &machine, &figures, &chart_name);
    if let Some(server) = &server {
        section.push_str(&server::markdown(server));
    }
    report::write(&args.out, &section)?;
    println!("{section}");
    Ok(())
}
