//! [`EventStream`]: an informer's notifications as an async [`Stream`].

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc;

use crate::handler::InformerEvent;
use crate::processor::{Notification, ResourceEventHandlerRegistration};

/// The notifications of a [`SharedIndexInformer`](crate::SharedIndexInformer) as a [`Stream`],
/// from [`event_stream`](crate::SharedIndexInformer::event_stream): for consumers who prefer
/// `while let Some(event) = events.next().await` over callbacks.
///
/// The stream has its own unbounded buffer (a slow consumer delays only itself) and ends when
/// the informer stops. Its [`registration`](Self::registration) reports synced once the
/// consumer has taken every initial item. Dropping the stream unsubscribes it.
pub struct EventStream<K> {
    rx: mpsc::UnboundedReceiver<Notification<K>>,
    registration: ResourceEventHandlerRegistration,
}

impl<K> fmt::Debug for EventStream<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("queued", &self.rx.len())
            .field("registration", &self.registration)
            .finish()
    }
}

impl<K> EventStream<K> {
    pub(crate) fn new(
        rx: mpsc::UnboundedReceiver<Notification<K>>,
        registration: ResourceEventHandlerRegistration,
    ) -> Self {
        Self { rx, registration }
    }

    /// The stream's registration: `has_synced`, and removal with
    /// [`remove_event_handler`](crate::SharedIndexInformer::remove_event_handler).
    pub fn registration(&self) -> &ResourceEventHandlerRegistration {
        &self.registration
    }

    /// The number of notifications waiting in the stream's buffer.
    pub fn queued(&self) -> usize {
        self.rx.len()
    }
}

impl<K> Stream for EventStream<K> {
    type Item = InformerEvent<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.rx.poll_recv(cx);
        polled.map(|notification| {
            notification.map(|(event, _sent)| {
                self.registration.taken(&event);
                event
            })
        })
    }
}
