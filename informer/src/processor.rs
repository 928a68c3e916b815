//! The processor: distributes notifications to listeners, each with its own unbounded buffer and
//! its own task, and decides which listeners are due a resync.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use kube_core::Resource;
use parking_lot::{Mutex, RwLock};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::handler::{InformerEvent, ResourceEventHandler};
use crate::metrics::{HandlerStats, ListenerStats};
use crate::panics::call_handler;
use crate::sync::{HasSynced, sync_changed};

/// The smallest resync period a handler can have (client-go's `minimumResyncPeriod`).
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// How many buffered notifications a listener task takes at once.
const LISTENER_BATCH: usize = 256;

/// The effective resync period of a listener that asked for `desired` when the informer checks
/// every `check` (client-go's `determineResyncPeriod`): zero means never.
pub(crate) fn determine_resync_period(name: &str, desired: Duration, check: Duration) -> Duration {
    if desired.is_zero() {
        return desired;
    }
    if check.is_zero() {
        tracing::warn!(
            informer = name,
            ?desired,
            "the informer's resync check period is 0, so this handler will never resync"
        );
        return Duration::ZERO;
    }
    desired.max(check)
}

/// Whether a registration saw all its initial items: the informer's own sync, and no initial
/// add still buffered for this listener.
pub(crate) type UpstreamSynced = Arc<dyn Fn() -> bool + Send + Sync>;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// What a listener's buffer holds: a notification and when it was sent.
pub(crate) type Notification<K> = (InformerEvent<K>, Instant);

/// The handle of one [`add_event_handler`](crate::SharedIndexInformer::add_event_handler):
/// remove the handler with it, and ask whether that handler has seen every initial item
/// (client-go's `ResourceEventHandlerRegistration`). Cheap to clone.
#[derive(Clone)]
pub struct ResourceEventHandlerRegistration {
    id: u64,
    pending: Arc<AtomicUsize>,
    stats: Arc<ListenerStats>,
    upstream: UpstreamSynced,
    resync_period: Duration,
}

impl fmt::Debug for ResourceEventHandlerRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEventHandlerRegistration")
            .field("id", &self.id)
            .field("pending_initial", &self.pending.load(Ordering::Relaxed))
            .field("resync_period", &self.resync_period)
            .finish()
    }
}

impl ResourceEventHandlerRegistration {
    /// True once the informer has synced and this handler has been handed every item of the
    /// initial list (for a handler added late: every replayed item).
    pub fn has_synced(&self) -> bool {
        (self.upstream)() && self.pending.load(Ordering::Acquire) == 0
    }

    /// The resync period this handler got after clamping (zero: never).
    pub fn resync_period(&self) -> Duration {
        self.resync_period
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// A consumer took one notification (event streams).
    pub(crate) fn taken(&self, event: &InformerEvent<impl Sized>) {
        self.stats.done();
        if event.is_initial_add() && self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            sync_changed();
        }
    }
}

impl HasSynced for ResourceEventHandlerRegistration {
    fn has_synced(&self) -> bool {
        ResourceEventHandlerRegistration::has_synced(self)
    }
    fn signals_sync(&self) -> bool {
        true
    }
}

struct Listener<K> {
    id: u64,
    name: Option<String>,
    tx: mpsc::UnboundedSender<Notification<K>>,
    pending: Arc<AtomicUsize>,
    stats: Arc<ListenerStats>,
    requested_resync: Duration,
    resync_period: Duration,
    next_resync: Instant,
    /// Due a resync at the last check: receives resync updates.
    syncing: bool,
    cancel: CancellationToken,
}

impl<K> Listener<K> {
    fn send(&self, event: InformerEvent<K>, sent: Instant) -> bool {
        if event.is_initial_add() {
            self.pending.fetch_add(1, Ordering::AcqRel);
        }
        self.stats.sent(sent);
        match self.tx.send((event, sent)) {
            Ok(()) => true,
            Err(mpsc::error::SendError((event, _))) => {
                if event.is_initial_add() {
                    self.pending.fetch_sub(1, Ordering::AcqRel);
                }
                self.stats.done();
                false
            }
        }
    }

    fn stats(&self) -> HandlerStats {
        let name = match &self.name {
            Some(name) => name.clone(),
            None => format!("handler-{}", self.id),
        };
        self.stats.snapshot(name)
    }

    fn should_resync(&self, now: Instant) -> bool {
        !self.resync_period.is_zero() && now >= self.next_resync
    }
}

/// What receives a listener's notifications.
pub(crate) enum Sink<K> {
    /// A handler called from the listener's own task.
    Handler(Arc<dyn ResourceEventHandler<K>>),
    /// Nothing: the caller reads the receiver (an event stream).
    Stream,
}

#[derive(Default)]
struct Tasks {
    handle: Option<tokio::runtime::Handle>,
    waiting: Vec<BoxFuture<'static, ()>>,
    running: JoinSet<()>,
    stopped: bool,
}

/// Distributes notifications to listeners (client-go's `sharedProcessor`).
pub(crate) struct Processor<K> {
    name: Arc<str>,
    listeners: RwLock<Vec<Listener<K>>>,
    tasks: Mutex<Tasks>,
    upstream: UpstreamSynced,
}

impl<K> fmt::Debug for Processor<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Processor")
            .field("name", &self.name)
            .field("listeners", &self.listeners.read().len())
            .finish_non_exhaustive()
    }
}

impl<K: Send + Sync + 'static> Processor<K> {
    pub(crate) fn new(name: Arc<str>, upstream: UpstreamSynced) -> Self {
        Self {
            name,
            listeners: RwLock::new(Vec::new()),
            tasks: Mutex::default(),
            upstream,
        }
    }

    /// Adds a listener; `replay` runs under the listeners' write lock with a sender, so that
    /// nothing is distributed between the replay and the listener joining. `None` if the
    /// processor stopped.
    pub(crate) fn add_listener(
        &self,
        sink: Sink<K>,
        name: Option<String>,
        requested_resync: Duration,
        resync_period: Duration,
        replay: impl FnOnce(&dyn Fn(InformerEvent<K>)),
    ) -> Option<(
        ResourceEventHandlerRegistration,
        Option<mpsc::UnboundedReceiver<Notification<K>>>,
    )> {
        let mut tasks = self.tasks.lock();
        if tasks.stopped {
            return None;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let listener = Listener {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            name,
            tx,
            pending: Arc::new(AtomicUsize::new(0)),
            stats: Arc::new(ListenerStats::new()),
            requested_resync,
            resync_period,
            next_resync: Instant::now() + resync_period,
            syncing: false,
            cancel: CancellationToken::new(),
        };
        let registration = ResourceEventHandlerRegistration {
            id: listener.id,
            pending: Arc::clone(&listener.pending),
            stats: Arc::clone(&listener.stats),
            upstream: Arc::clone(&self.upstream),
            resync_period,
        };
        let rx = match sink {
            Sink::Stream => Some(rx),
            Sink::Handler(handler) => {
                let task = run_listener(
                    Arc::clone(&self.name),
                    handler,
                    rx,
                    Arc::clone(&listener.pending),
                    Arc::clone(&listener.stats),
                    listener.cancel.clone(),
                );
                match tasks.handle.clone() {
                    Some(handle) => {
                        tasks.running.spawn_on(task, &handle);
                    }
                    None => tasks.waiting.push(Box::pin(task)),
                }
                None
            }
        };
        let mut listeners = self.listeners.write();
        let now = Instant::now();
        replay(&|event| {
            listener.send(event, now);
        });
        listeners.push(listener);
        Some((registration, rx))
    }

    /// Removes a listener; its buffered notifications are dropped. Idempotent.
    pub(crate) fn remove_listener(&self, id: u64) {
        let mut listeners = self.listeners.write();
        if let Some(i) = listeners.iter().position(|l| l.id == id) {
            let listener = listeners.swap_remove(i);
            listener.cancel.cancel();
        }
    }

    /// Hands `event` to every listener; an update whose old and new resource versions are equal
    /// is a resync (or an object unchanged by a relist) and goes only to the listeners due one
    /// (client-go's `sharedProcessor.distribute` with `isSync`).
    pub(crate) fn distribute(&self, event: InformerEvent<K>)
    where
        K: Resource,
    {
        let is_sync = match &event {
            InformerEvent::Update { old, new } => {
                old.meta().resource_version == new.meta().resource_version
            }
            _ => false,
        };
        let mut dead = false;
        {
            let sent = Instant::now();
            let listeners = self.listeners.read();
            for listener in listeners.iter() {
                if (!is_sync || listener.syncing) && !listener.send(event.clone(), sent) {
                    dead = true;
                }
            }
        }
        if dead {
            self.listeners.write().retain(|l| !l.tx.is_closed());
        }
    }

    /// Decides which listeners are due a resync now and whether any is (client-go's
    /// `shouldResync`, the reflector's resync gate).
    pub(crate) fn should_resync(&self) -> bool {
        let now = Instant::now();
        let mut any = false;
        for listener in self.listeners.write().iter_mut() {
            listener.syncing = listener.should_resync(now);
            if listener.syncing {
                any = true;
                listener.next_resync = now + listener.resync_period;
            }
        }
        any
    }

    /// Re-clamps every listener's resync period to a new check period.
    pub(crate) fn resync_check_period_changed(&self, check: Duration) {
        for listener in self.listeners.write().iter_mut() {
            listener.resync_period =
                determine_resync_period(&self.name, listener.requested_resync, check);
        }
    }

    /// The number of listeners.
    pub(crate) fn len(&self) -> usize {
        self.listeners.read().len()
    }

    /// Each listener's pending notifications, in the order they were added.
    pub(crate) fn handler_stats(&self) -> Vec<HandlerStats> {
        self.listeners.read().iter().map(Listener::stats).collect()
    }

    /// Starts the tasks of the listeners added so far; later ones start as they are added.
    pub(crate) fn run(&self) {
        let mut tasks = self.tasks.lock();
        let handle = tokio::runtime::Handle::current();
        for task in std::mem::take(&mut tasks.waiting) {
            tasks.running.spawn_on(task, &handle);
        }
        tasks.handle = Some(handle);
    }

    /// Marks the processor stopped, stops every listener (buffered notifications are dropped,
    /// streams end) and hands out the listener tasks.
    fn close(&self) -> JoinSet<()> {
        let running = {
            let mut tasks = self.tasks.lock();
            tasks.stopped = true;
            tasks.waiting.clear();
            std::mem::take(&mut tasks.running)
        };
        for listener in self.listeners.write().drain(..) {
            listener.cancel.cancel();
        }
        running
    }

    /// Stops every listener and aborts their tasks without waiting (the informer's `run` future
    /// was dropped).
    pub(crate) fn abort(&self) {
        drop(self.close());
    }

    /// Stops every listener and waits for every listener task to finish.
    pub(crate) async fn stop(&self) {
        let mut running = self.close();
        while let Some(result) = running.join_next().await {
            if let Err(err) = result {
                tracing::error!(informer = %self.name, error = &err as &dyn std::error::Error, "listener task failed");
            }
        }
    }
}

/// A listener's task: takes buffered notifications in order and calls the handler, surviving
/// its panics, until removed or stopped.
async fn run_listener<K: Send + Sync + 'static>(
    name: Arc<str>,
    handler: Arc<dyn ResourceEventHandler<K>>,
    mut rx: mpsc::UnboundedReceiver<Notification<K>>,
    pending: Arc<AtomicUsize>,
    stats: Arc<ListenerStats>,
    cancel: CancellationToken,
) {
    let mut batch = Vec::with_capacity(LISTENER_BATCH);
    loop {
        let received = tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            n = rx.recv_many(&mut batch, LISTENER_BATCH) => n,
        };
        if received == 0 {
            return;
        }
        for (event, sent) in batch.drain(..) {
            if cancel.is_cancelled() {
                return;
            }
            let initial = event.is_initial_add();
            stats.taking(sent);
            call_handler(&name, &*handler, &event);
            stats.done();
            if initial && pending.fetch_sub(1, Ordering::AcqRel) == 1 {
                sync_changed();
            }
        }
    }
}
