//! A candidate for a Lease that prints one line per transition and releases the Lease on
//! Ctrl-C:
//!
//! ```text
//! cargo run -p kcache-leaderelection --example leader -- \
//!     [--kubeconfig PATH] --lease NAME --namespace NS --identity ID
//! ```
//!
//! Lines: `<unix-ms> <identity> leading`, `<unix-ms> <identity> stopped leading`,
//! `<unix-ms> <identity> observed leader <other>`.

use std::path::PathBuf;

use clap::Parser;
use kcache_leaderelection::{LeaderElectionConfig, LeaderElector, LeaderEvent};
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::{Client, Config};
use tokio_util::sync::CancellationToken;

/// Campaign for a Lease and print each transition.
#[derive(Debug, Parser)]
struct Args {
    /// The kubeconfig to use (default: the usual inference: KUBECONFIG, ~/.kube/config, in-cluster).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The Lease's name.
    #[arg(long)]
    lease: String,
    /// The Lease's namespace.
    #[arg(long, default_value = "default")]
    namespace: String,
    /// This candidate's identity.
    #[arg(long)]
    identity: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => Config::infer().await?,
    };
    let client = Client::try_from(config)?;
    let elector = LeaderElector::new(
        client,
        &args.namespace,
        &args.lease,
        args.identity.clone(),
        LeaderElectionConfig::default(),
    )?;
    let shutdown = CancellationToken::new();
    let on_ctrl_c = shutdown.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let me = args.identity;
    elector
        .run(shutdown, |event| {
            let line = match event {
                LeaderEvent::StartedLeading(_) => "leading".to_owned(),
                LeaderEvent::StoppedLeading => "stopped leading".to_owned(),
                LeaderEvent::NewLeader(other) if other != me => format!("observed leader {other}"),
                _ => return,
            };
            println!("{} {me} {line}", unix_ms());
        })
        .await;
    Ok(())
}

fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}
