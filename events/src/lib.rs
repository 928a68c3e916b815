//! An `events.k8s.io/v1` Event recorder with the semantics of client-go's `tools/events`.
//!
//! An [`EventBroadcaster`] owns a bounded queue and the task that writes Events to the API
//! server; [`Recorder`]s (one per reporting controller and instance) queue Events without
//! ever waiting. Repeats of an Event (same regarding and related objects, reason, action, note
//! and reporting controller) become one Event with a `series` (count and lastObservedTime): the
//! second occurrence patches the series in, later ones only count up locally and are written
//! every thirty minutes and on shutdown — so a hot loop recording the same Event costs the API
//! server two requests, not one per call. A series not observed for six minutes is finished.
//! A full queue drops new Events and counts them; a server that rejects an Event is not asked
//! again; an unreachable one is retried (12 tries, 10 s apart).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ObjectReference;
//! use kcache_events::{EventBroadcaster, EventType};
//!
//! let server = kcache_apiserver::TestServer::start().await?;
//! let broadcaster = EventBroadcaster::new(server.client()?);
//! let recorder = broadcaster.recorder("example.com/controller", "controller-0");
//! let pod = ObjectReference {
//!     kind: Some("Pod".into()),
//!     namespace: Some("default".into()),
//!     name: Some("web-0".into()),
//!     ..ObjectReference::default()
//! };
//! recorder.event(&pod, None, EventType::Normal, "Scheduled", "Binding", "bound to node-1");
//! broadcaster.shutdown().await; // writes what is queued
//!
//! let events = kube_client::Api::<k8s_openapi::api::events::v1::Event>::namespaced(server.client()?, "default");
//! let written = events.list(&Default::default()).await?;
//! assert_eq!(written.items.len(), 1);
//! assert_eq!(written.items[0].reason.as_deref(), Some("Scheduled"));
//! assert_eq!(written.items[0].note.as_deref(), Some("bound to node-1"));
//! # Ok(())
//! # }
//! ```

mod broadcaster;
mod recorder;
mod series;
mod sink;

pub use broadcaster::{DEFAULT_CAPACITY, EventBroadcaster};
pub use recorder::{EventType, Recorder};
