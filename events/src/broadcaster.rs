//! [`EventBroadcaster`]: the bounded queue between [`Recorder`]s and the task that writes
//! Events (client-go's `eventBroadcasterImpl` with `StartRecordingToSink`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::events::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube_client::Client;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, interval_at};
use tokio_util::sync::CancellationToken;

use crate::recorder::Recorder;
use crate::series::{FINISH_TIME, Series};
use crate::sink::Sink;

/// How many Events wait for the writer before new ones are dropped (client-go's
/// `maxQueuedEvents`).
pub const DEFAULT_CAPACITY: usize = 1000;

/// How often the running series are written again (client-go's `refreshTime`).
const REFRESH_TIME: Duration = Duration::from_secs(30 * 60);

/// The queue of Events on their way to the API server and the task that writes them; hands
/// out [`Recorder`]s.
///
/// Recording never waits: when the queue is full (the API server slow or unreachable), the
/// Event is dropped and counted ([`EventBroadcaster::dropped`]). [`EventBroadcaster::shutdown`]
/// writes what is queued and the latest count of each running series before it returns.
#[derive(Debug)]
pub struct EventBroadcaster {
    queue: mpsc::Sender<Event>,
    dropped: Arc<AtomicU64>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl EventBroadcaster {
    /// Starts writing Events through `client`, queueing at most [`DEFAULT_CAPACITY`].
    pub fn new(client: Client) -> Self {
        Self::with_capacity(client, DEFAULT_CAPACITY)
    }

    /// Starts writing Events through `client`, queueing at most `capacity` (at least 1).
    pub fn with_capacity(client: Client, capacity: usize) -> Self {
        let (queue, rx) = mpsc::channel(capacity.max(1));
        let stop = CancellationToken::new();
        let task = tokio::spawn(write_events(Sink::new(client), rx, stop.clone()));
        Self {
            queue,
            dropped: Arc::default(),
            stop,
            task,
        }
    }

    /// A recorder for `reporting_controller` (for example `example.com/my-controller`) and
    /// `reporting_instance` (client-go uses `<controller>-<hostname>`).
    pub fn recorder(
        &self,
        reporting_controller: impl Into<String>,
        reporting_instance: impl Into<String>,
    ) -> Recorder {
        Recorder::new(
            self.queue.clone(),
            Arc::clone(&self.dropped),
            reporting_controller.into(),
            reporting_instance.into(),
        )
    }

    /// How many Events were dropped because the queue was full or shut down.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Stops accepting Events, writes those queued and the latest count of every running series
    /// (one try each), and returns when done.
    pub async fn shutdown(self) {
        self.stop.cancel();
        if let Err(e) = self.task.await {
            tracing::warn!(error = &e as &dyn std::error::Error, "event writer failed");
        }
    }
}

/// The writer task: aggregates and writes each Event in queue order; finishes idle series every
/// six minutes and rewrites running ones every thirty; on `stop`, drains the queue and rewrites
/// the running series.
async fn write_events(sink: Sink, mut rx: mpsc::Receiver<Event>, stop: CancellationToken) {
    let mut series = Series::default();
    let mut finish = interval_at(Instant::now() + FINISH_TIME, FINISH_TIME);
    let mut refresh = interval_at(Instant::now() + REFRESH_TIME, REFRESH_TIME);
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            event = rx.recv() => match event {
                Some(event) => write_one(&sink, &mut series, event, &stop).await,
                None => break,
            },
            _ = finish.tick() => series.finish(Timestamp::now()),
            _ = refresh.tick() => rewrite_running(&sink, &mut series, &stop).await,
        }
    }
    rx.close();
    while let Some(event) = rx.recv().await {
        write_one(&sink, &mut series, event, &stop).await;
    }
    rewrite_running(&sink, &mut series, &stop).await;
}

async fn write_one(sink: &Sink, series: &mut Series, event: Event, stop: &CancellationToken) {
    if let Some(to_write) = series.observe(event, Timestamp::now())
        && let Some(written) = sink.record(&to_write, stop).await
    {
        series.written(written);
    }
}

async fn rewrite_running(sink: &Sink, series: &mut Series, stop: &CancellationToken) {
    for event in series.running() {
        if let Some(written) = sink.record(&event, stop).await {
            series.written(written);
        }
    }
}
