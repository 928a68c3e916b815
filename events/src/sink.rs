//! Writing one Event to the API server as client-go's `recordEvent` and `attemptRecording` do:
//! a new Event is created, a series is patched (created if it is gone), a rejection by the
//! server is final and an unreachable server is retried.

use std::time::Duration;

use k8s_openapi::api::events::v1::Event;
use kube_client::api::{Patch, PatchParams, PostParams};
use kube_client::{Api, Client};
use rand::Rng;
use tokio_util::sync::CancellationToken;

/// How many times an Event is tried before it is given up (client-go's `maxTriesPerEvent`).
const MAX_TRIES: u32 = 12;

/// The wait between tries (client-go's `defaultSleepDuration`; the first is randomised).
const RETRY_SLEEP: Duration = Duration::from_secs(10);

/// Writes Events through a kube client.
#[derive(Clone)]
pub(crate) struct Sink {
    client: Client,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink").finish_non_exhaustive()
    }
}

impl Sink {
    pub(crate) fn new(client: Client) -> Self {
        Self { client }
    }

    /// Writes `event`, retrying while the server cannot be reached (until `give_up` is
    /// cancelled: then one try only). The server's copy on success.
    pub(crate) async fn record(&self, event: &Event, give_up: &CancellationToken) -> Option<Event> {
        for tries in 1..=MAX_TRIES {
            match self.write(event).await {
                Ok(written) => return Some(written),
                Err(kube_client::Error::Api(status)) => {
                    tracing::warn!(reason = %status.reason, message = %status.message, "server rejected event (will not retry!)");
                    return None;
                }
                Err(e) => {
                    tracing::warn!(
                        error = &e as &dyn std::error::Error,
                        tries,
                        "unable to write event (may retry after sleeping)"
                    );
                }
            }
            let mut delay = RETRY_SLEEP;
            if tries == 1 {
                delay = delay.mul_f64(rand::rng().random::<f64>());
            }
            tokio::select! {
                () = give_up.cancelled() => return None,
                () = tokio::time::sleep(delay) => {}
            }
        }
        tracing::warn!("unable to write event (retry limit exceeded!)");
        None
    }

    async fn write(&self, event: &Event) -> Result<Event, kube_client::Error> {
        let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        let name = event.metadata.name.as_deref().unwrap_or_default();
        if let Some(series) = &event.series {
            let patch = serde_json::json!({ "series": series });
            match api
                .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Err(kube_client::Error::Api(status)) if status.code == 404 => {}
                written => return written,
            }
        }
        let mut new = event.clone();
        new.metadata.resource_version = None;
        api.create(&PostParams::default(), &new).await
    }
}
