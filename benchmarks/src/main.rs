//! `bench-e2e`: kcache against kube-runtime, whole processes, one machine, one run.
//!
//! The parent starts the in-process API server with N realistic pods (`kcache_store::testing`,
//! ≈8.7 KB of JSON each) and runs each client in a fresh child process (this binary again, with
//! the hidden `client` command), so that each peak of resident memory is the client's own:
//!
//! 1. kcache: the factory's `SharedIndexInformer` of pods with a namespace and a node index and
//!    one update handler (once more with the `drop_managed_fields` transform, and once with the
//!    compact cache, `compact_cache_for::<Pod>()`);
//! 2. kube-runtime 5: `watcher` + `reflector` with the default configuration;
//! 3. the limit: serde_json decoding the same list pages on one thread.
//!
//! Per client: start → synced time, CPU seconds, resident memory once synced and its peak; then
//! MODIFIED events written as fast as the server can (events/s reaching the handler, or
//! kube-runtime's store), the server-write → handler latency at a fixed rate (the server stamps
//! the instant of each write into an annotation; both processes read the same wall clock), and a
//! forced relist (watch ended, history compacted while the client cannot reconnect): the peak
//! during the relist and the time to resync. The figures, the targets as ratios and an SVG chart
//! go into BENCHMARKS.md.
//!
//! ```text
//! cargo xtask bench-e2e [--pods N]
//! ```

mod client;
mod measure;
mod probe;
mod report;
mod run;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

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
    /// The clients to measure, in order.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Role::ALL)]
    clients: Vec<Role>,
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
    /// kube-runtime's watcher + reflector.
    KubeRuntime,
    /// serde_json decoding the list pages on one thread.
    Decode,
    /// The latency floor: the raw watch lines, only their write stamp read (server and
    /// connection alone, no decoding, no cache).
    Wire,
}

impl Role {
    const ALL: [Role; 6] = [
        Role::Kcache,
        Role::KcacheNoManagedFields,
        Role::KcacheCompact,
        Role::KubeRuntime,
        Role::Decode,
        Role::Wire,
    ];

    /// The command-line name.
    fn name(self) -> &'static str {
        match self {
            Role::Kcache => "kcache",
            Role::KcacheNoManagedFields => "kcache-no-managed-fields",
            Role::KcacheCompact => "kcache-compact",
            Role::KubeRuntime => "kube-runtime",
            Role::Decode => "decode",
            Role::Wire => "wire",
        }
    }

    /// The name in the report.
    fn label(self) -> &'static str {
        match self {
            Role::Kcache => "kcache SharedIndexInformer",
            Role::KcacheNoManagedFields => "kcache + drop_managed_fields",
            Role::KcacheCompact => "kcache compact cache",
            Role::KubeRuntime => "kube-runtime watcher + reflector",
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
    let settings = Settings {
        pods: args.pods,
        events: args.events,
        latency_events: args.latency_events,
        rate: args.rate.max(1),
        roles: args.clients,
        command: format!("cargo xtask bench-e2e --pods {}", args.pods),
    };
    let mut machine = report::Machine::read();
    let figures = run::run(&settings).await?;
    machine.load_after = report::load();
    let chart = args.out.with_file_name("BENCHMARKS.svg");
    report::chart(&chart, &figures)?;
    let chart_name = chart
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let section = report::markdown(&settings, &machine, &figures, &chart_name);
    report::write(&args.out, &section)?;
    println!("{section}");
    Ok(())
}
