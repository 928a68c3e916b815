//! [`Recorder`]: builds an `events.k8s.io/v1` Event and queues it without waiting (client-go's
//! `recorder.Eventf` and `makeEvent`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use tokio::sync::mpsc;

/// An Event's type: the only two the API server accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Nothing to worry about.
    Normal,
    /// Something may be wrong.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Records Events for one reporting controller and instance; cheap to clone.
#[derive(Debug, Clone)]
pub struct Recorder {
    queue: mpsc::Sender<Event>,
    dropped: Arc<AtomicU64>,
    reporting_controller: String,
    reporting_instance: String,
}

impl Recorder {
    pub(crate) fn new(
        queue: mpsc::Sender<Event>,
        dropped: Arc<AtomicU64>,
        reporting_controller: String,
        reporting_instance: String,
    ) -> Self {
        Self {
            queue,
            dropped,
            reporting_controller,
            reporting_instance,
        }
    }

    /// Records that `action` was taken (or failed) on `regarding` (and `related`) for `reason`,
    /// with a human-readable `note`. Never waits: the Event is queued, or dropped and counted
    /// when the queue is full. Repeats (same regarding, related, reason, action, note and
    /// controller) become one Event with a series count.
    ///
    /// The Event lives in `regarding`'s namespace (`default` when it has none) and is named
    /// `<regarding name>.<event time in hex nanoseconds>`, as client-go names it.
    pub fn event(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        type_: EventType,
        reason: &str,
        action: &str,
        note: &str,
    ) {
        let now = Timestamp::now();
        let namespace = regarding
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let regarding_name = regarding.name.as_deref().unwrap_or_default();
        let event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{regarding_name}.{:x}", now.as_nanosecond())),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: related.cloned(),
            type_: Some(type_.as_str().to_owned()),
            reason: Some(reason.to_owned()),
            action: Some(action.to_owned()),
            note: Some(note.to_owned()),
            reporting_controller: Some(self.reporting_controller.clone()),
            reporting_instance: Some(self.reporting_instance.clone()),
            ..Event::default()
        };
        if let Err(e) = self.queue.try_send(event) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(error = %e, reason, "event dropped");
        }
    }
}
