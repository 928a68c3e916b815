//! Leader election on `coordination.k8s.io/v1` Leases, with the semantics of client-go's
//! `tools/leaderelection`: run two or more replicas of a controller and let one act at a time.
//!
//! A [`LeaderElector`] is one candidate (an identity) for one Lease. It tries to acquire the
//! Lease every `retry_period`; once it holds it, it renews it every `retry_period`, and stops
//! leading when a renewal has not succeeded within `renew_deadline` — before its Lease
//! (`lease_duration`) can expire in the other candidates' eyes, so two leaders never act at
//! once. Other candidates take over a Lease only after it has not changed for
//! `lease_duration` by their own clock (not by the `renewTime` written in it, so clock skew
//! between machines does not matter). Every write carries the Lease's resourceVersion: of two
//! candidates writing at once, one gets a conflict. `leaseTransitions` counts hand-overs. On
//! shutdown a leader releases the Lease (`release_on_cancel`) so another takes over at once.
//!
//! Transitions arrive as [`LeaderEvent`]s; [`LeaderEvent::StartedLeading`] carries a
//! [`CancellationToken`](tokio_util::sync::CancellationToken) cancelled the moment
//! leadership ends: run the controller's workers under it.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use kcache_leaderelection::{LeaderElectionConfig, LeaderElector, LeaderEvent};
//! use tokio_util::sync::CancellationToken;
//!
//! let server = kcache_apiserver::TestServer::start().await?;
//! let elector = LeaderElector::new(
//!     server.client()?,
//!     "default",
//!     "my-controller",
//!     "replica-a",
//!     LeaderElectionConfig::default(),
//! )?;
//! let shutdown = CancellationToken::new();
//! let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
//! let campaign = tokio::spawn(elector.run(shutdown.clone(), move |e| {
//!     let _ = tx.send(e);
//! }));
//! let mut seen = Vec::new();
//! while let Some(event) = events.recv().await {
//!     match event {
//!         LeaderEvent::NewLeader(holder) => seen.push(format!("new leader {holder}")),
//!         LeaderEvent::StartedLeading(leading) => {
//!             seen.push("started leading".into());
//!             // Spawn the workers under `leading` here; here we shut down at once.
//!             shutdown.cancel();
//!             leading.cancelled().await;
//!         }
//!         LeaderEvent::StoppedLeading => seen.push("stopped leading".into()),
//!         _ => {}
//!     }
//! }
//! campaign.await?;
//! assert_eq!(seen, ["new leader replica-a", "started leading", "stopped leading"]);
//! # Ok(())
//! # }
//! ```

mod config;
mod elector;
mod lock;

pub use config::{ConfigError, LeaderElectionConfig};
pub use elector::{LeaderElector, LeaderEvent};
pub use lock::{LockError, Record};
