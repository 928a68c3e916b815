//! [`KubeListerWatcher`]: lists and watches over kube-client, decoding off the socket task.

use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::stream::FuturesOrdered;
use futures::{FutureExt, Stream, StreamExt, TryStreamExt, stream};
use http_body_util::BodyExt;
use kcache_store::{KnownObjects, TransformFunc};
use kube_client::client::Body;
use kube_client::{Api, Client};
use kube_core::{ApiResource, DynamicObject, PartialObjectMeta, Resource, Status};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::task::AbortOnDropHandle;

use crate::decode::{
    Decoded, KnownLookup, ListMeta, ObjectDecoder, decode_event, decode_items, transform_event,
};
use crate::list_scan::{ItemBatch, ListScanner};
use crate::lister_watcher::{
    ListFuture, ListOptions, ListPage, ListWatchError, ListerWatcher, WatchEvent, WatchFuture,
    WatchStream,
};

const JSON: &str = "application/json";
const METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
const METADATA: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
/// Item batches (of 256 KiB) of a list body read ahead of the decoders: the rest waits in the
/// connection, so a relist never holds the whole raw body next to the decoded objects.
const LIST_READ_AHEAD_BATCHES: usize = 8;
/// The most bytes of watch lines handed to one decoder at once.
const MAX_BATCH_BYTES: usize = 512 * 1024;
/// The most bytes of complete watch lines read ahead of the decoders (a longer line is still
/// read whole, up to the line bound).
const MAX_READ_AHEAD_BYTES: usize = 4 * 1024 * 1024;
/// The default bound on one watch line: the API server stores objects of up to 3 MiB (etcd's
/// request limit) and their JSON, with escaping and the event envelope, can be several times
/// that.
pub const DEFAULT_MAX_WATCH_LINE_BYTES: usize = 32 * 1024 * 1024;

/// Changes the options of every request (selectors, typically): client-go's
/// `TweakListOptionsFunc`.
pub type TweakListOptions = Arc<dyn Fn(&mut ListOptions) + Send + Sync>;

/// A part of a list body, in order: batches of items, then the list's metadata.
enum ListPart {
    Items(ItemBatch),
    End(ListMeta),
}

/// A decoded [`ListPart`].
enum PagePart<K> {
    Items(Vec<Arc<K>>),
    End(ListMeta),
}

type Parts = mpsc::Receiver<Result<ListPart, ListWatchError>>;

/// A list request under way: the parts of its body arrive on `parts` as they are read.
struct PageRead {
    options: ListOptions,
    parts: Parts,
    /// Told when the page is taken by a `list` call (only then may it prefetch its successor).
    taken: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

/// A [`ListerWatcher`] over a kube-client [`Client`] for typed objects, [`DynamicObject`]s or
/// [`PartialObjectMeta`] (metadata only).
///
/// It reads raw bytes from the connection and decodes them on blocking threads: a list page is
/// split into chunks decoded in parallel (order kept), the next page is fetched while the
/// current one is decoded, and watch lines are decoded in batches, several batches at once,
/// delivered in order. Each object is decoded once into the `Arc<K>` the store keeps.
///
/// ```no_run
/// use k8s_openapi::api::core::v1::Pod;
/// use kcache_reflector::KubeListerWatcher;
/// use kube_client::{Api, Client};
///
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// let client = Client::try_default().await?;
/// let lw = KubeListerWatcher::new(Api::<Pod>::all(client))
///     .tweak_list_options(|o| o.label_selector = Some("app=web".into()));
/// # let _ = lw; Ok(()) }
/// ```
pub struct KubeListerWatcher<K> {
    client: Client,
    url_path: String,
    metadata_only: bool,
    expected_kind: Option<String>,
    tweak: Option<TweakListOptions>,
    parallelism: usize,
    prefetch: bool,
    max_watch_line: usize,
    next_page: Arc<Mutex<Option<PageRead>>>,
    known: Mutex<Option<KnownLookup<K>>>,
    transform: Option<TransformFunc<K>>,
    _object: PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for KubeListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeListerWatcher")
            .field("url_path", &self.url_path)
            .field("metadata_only", &self.metadata_only)
            .field("expected_kind", &self.expected_kind)
            .field("tweak", &self.tweak.is_some())
            .field("parallelism", &self.parallelism)
            .field("prefetch", &self.prefetch)
            .field("max_watch_line", &self.max_watch_line)
            .field("reuses_known_objects", &self.known.lock().is_some())
            .field("transform", &self.transform.is_some())
            .finish_non_exhaustive()
    }
}

impl<K> Clone for KubeListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            url_path: self.url_path.clone(),
            metadata_only: self.metadata_only,
            expected_kind: self.expected_kind.clone(),
            tweak: self.tweak.clone(),
            parallelism: self.parallelism,
            prefetch: self.prefetch,
            max_watch_line: self.max_watch_line,
            next_page: Arc::new(Mutex::new(None)),
            known: Mutex::new(self.known.lock().clone()),
            transform: self.transform.clone(),
            _object: PhantomData,
        }
    }
}

fn default_parallelism() -> usize {
    std::thread::available_parallelism()
        .map_or(2, usize::from)
        .clamp(1, 16)
}

impl<K: Resource> KubeListerWatcher<K>
where
    K::DynamicType: Default,
{
    /// Lists and watches the typed resource of `api` (its namespace, or all).
    pub fn new(api: Api<K>) -> Self {
        let kind = K::kind(&K::DynamicType::default()).into_owned();
        Self::from_parts(api, Some(kind), false)
    }
}

impl KubeListerWatcher<DynamicObject> {
    /// Lists and watches a resource known at run time (a custom resource, for example).
    pub fn dynamic(api: Api<DynamicObject>, resource: &ApiResource) -> Self {
        Self::from_parts(api, Some(resource.kind.clone()), false)
    }
}

impl<K: Resource> KubeListerWatcher<PartialObjectMeta<K>> {
    /// Lists and watches only the metadata of the objects of `api` (`PartialObjectMetadata`).
    pub fn metadata(api: Api<K>) -> Self {
        let url_path = api.resource_url().to_owned();
        Self::with_url(api.into(), url_path, None, true)
    }
}

impl<K> KubeListerWatcher<K> {
    fn from_parts<R: Resource>(
        api: Api<R>,
        expected_kind: Option<String>,
        metadata_only: bool,
    ) -> Self {
        let url_path = api.resource_url().to_owned();
        Self::with_url(api.into(), url_path, expected_kind, metadata_only)
    }

    fn with_url(
        client: Client,
        url_path: String,
        expected_kind: Option<String>,
        metadata_only: bool,
    ) -> Self {
        Self {
            client,
            url_path,
            metadata_only,
            expected_kind,
            tweak: None,
            parallelism: default_parallelism(),
            prefetch: true,
            max_watch_line: DEFAULT_MAX_WATCH_LINE_BYTES,
            next_page: Arc::new(Mutex::new(None)),
            known: Mutex::new(None),
            transform: None,
            _object: PhantomData,
        }
    }

    /// Changes the options of every list and watch (client-go's tweak-list-options hook),
    /// typically to set label or field selectors.
    #[must_use]
    pub fn tweak_list_options(
        mut self,
        f: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> Self {
        self.tweak = Some(Arc::new(f));
        self
    }

    /// How many blocking threads decode at once (default: the number of cores).
    #[must_use]
    pub fn decode_parallelism(mut self, n: usize) -> Self {
        self.parallelism = n.max(1);
        self
    }

    /// Whether the next list page is fetched while the current one is decoded (default on).
    #[must_use]
    pub fn prefetch_pages(mut self, on: bool) -> Self {
        self.prefetch = on;
        self
    }

    /// The longest watch line (one event, without its newline) accepted, in bytes (default
    /// [`DEFAULT_MAX_WATCH_LINE_BYTES`]). A longer one ends the watch with
    /// [`ListWatchError::WatchLineTooLarge`] after the events before it; the reflector then
    /// relists. List bodies have no such bound: they are read item by item.
    #[must_use]
    pub fn max_watch_line_bytes(mut self, limit: usize) -> Self {
        self.max_watch_line = limit;
        self
    }

    /// A transform run on every decoded object (list items and watch events) as soon as its
    /// batch is decoded, on the decoding thread: only the transformed object is ever held, from
    /// the moment a list page or event exists (for example without `managedFields`). It must be
    /// idempotent, since a relist may reuse objects that already went through it. A list item
    /// it rejects fails the list ([`ListWatchError::Transform`]); a watch event it rejects is
    /// logged and skipped.
    #[must_use]
    pub fn transform(mut self, transform: TransformFunc<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// The path of the resource's collection.
    pub fn url_path(&self) -> &str {
        &self.url_path
    }

    fn tweaked(&self, options: &ListOptions) -> ListOptions {
        let mut options = options.clone();
        if let Some(t) = &self.tweak {
            t(&mut options);
        }
        options
    }
}

/// Appends `key=value`, form-encoded, to a query string.
fn push_pair(query: &mut String, key: &str, value: &str) {
    query.push(if query.contains('?') { '&' } else { '?' });
    query.push_str(key);
    query.push('=');
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                query.push(char::from(b));
            }
            b' ' => query.push('+'),
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                query.push('%');
                query.push(char::from(HEX[usize::from(b >> 4)]));
                query.push(char::from(HEX[usize::from(b & 15)]));
            }
        }
    }
}

/// The URL of a list (`watch` false) or watch request with `options`.
pub(crate) fn request_url(path: &str, options: &ListOptions, watch: bool) -> String {
    let mut url = path.to_owned();
    if watch {
        push_pair(&mut url, "watch", "true");
    }
    if let Some(s) = &options.label_selector {
        push_pair(&mut url, "labelSelector", s);
    }
    if let Some(s) = &options.field_selector {
        push_pair(&mut url, "fieldSelector", s);
    }
    if let Some(l) = options.limit {
        push_pair(&mut url, "limit", &l.to_string());
    }
    if let Some(c) = &options.continue_token {
        push_pair(&mut url, "continue", c);
    }
    if let Some(rv) = &options.resource_version {
        push_pair(&mut url, "resourceVersion", rv);
    }
    if let Some(m) = options.resource_version_match {
        push_pair(&mut url, "resourceVersionMatch", m.as_str());
    }
    if let Some(t) = options.timeout_seconds {
        push_pair(&mut url, "timeoutSeconds", &t.to_string());
    }
    if options.allow_watch_bookmarks {
        push_pair(&mut url, "allowWatchBookmarks", "true");
    }
    if let Some(s) = options.send_initial_events {
        push_pair(
            &mut url,
            "sendInitialEvents",
            if s { "true" } else { "false" },
        );
    }
    url
}

fn map_error(err: kube_client::Error) -> ListWatchError {
    use kube_client::Error as E;
    match err {
        E::Api(status) => ListWatchError::Api(*status),
        E::HyperError(e) => ListWatchError::Connection(error_chain(&e)),
        E::Service(e) => ListWatchError::Connection(error_chain(&*e)),
        E::ReadEvents(e) => ListWatchError::Connection(error_chain(&e)),
        E::SerdeError(e) => ListWatchError::Decode(e.to_string()),
        other => ListWatchError::Other(error_chain(&other)),
    }
}

fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        out.push_str(": ");
        out.push_str(&e.to_string());
        source = e.source();
    }
    out
}

fn join_error(e: tokio::task::JoinError) -> ListWatchError {
    ListWatchError::Other(format!("decoding task failed: {e}"))
}

/// Sends a GET and returns the response body, or the server's `Status` for an error answer.
async fn send(
    client: &Client,
    url: String,
    accept: &'static str,
    identity: bool,
) -> Result<Body, ListWatchError> {
    let mut request = http::Request::get(url).header(http::header::ACCEPT, accept);
    if identity {
        request = request.header(http::header::ACCEPT_ENCODING, "identity");
    }
    let request = request
        .body(Body::empty())
        .map_err(|e| ListWatchError::Other(format!("building request: {e}")))?;
    let response = client.send(request).await.map_err(map_error)?;
    let code = response.status();
    if code.is_client_error() || code.is_server_error() {
        let body = response
            .into_body()
            .collect_bytes()
            .await
            .map_err(map_error)?;
        return Err(ListWatchError::Api(error_status(code, &body)));
    }
    Ok(response.into_body())
}

/// The `Status` of an error answer: its body if it is one, else one made from the HTTP code
/// and the body's text (a proxy's or load balancer's answer, for example).
fn error_status(code: http::StatusCode, body: &[u8]) -> Status {
    serde_json::from_slice::<Status>(body)
        .ok()
        .filter(|s| s.code != 0 || !s.reason.is_empty())
        .unwrap_or_else(|| {
            Status::failure(String::from_utf8_lossy(body).trim(), "").with_code(code.as_u16())
        })
}

/// Reads list pages: each body is split into item batches while it arrives, and the next page is
/// requested as soon as a body has been read (client-go's pager also prefetches).
#[derive(Clone)]
struct Pager {
    client: Client,
    url_path: String,
    accept: &'static str,
    prefetch: bool,
    next_page: Arc<Mutex<Option<PageRead>>>,
}

impl Pager {
    fn start(&self, options: ListOptions) -> PageRead {
        let (parts_tx, parts) = mpsc::channel(LIST_READ_AHEAD_BATCHES);
        let (taken, taken_rx) = oneshot::channel();
        let task = tokio::spawn(self.clone().read(options.clone(), parts_tx, taken_rx));
        PageRead {
            options,
            parts,
            taken,
            task,
        }
    }

    /// The parts of the page for `options`: those of the prefetched page if it is this one.
    fn take(&self, options: &ListOptions) -> Parts {
        let read = match self.next_page.lock().take() {
            Some(read) if read.options == *options => read,
            Some(stale) => {
                stale.task.abort();
                self.start(options.clone())
            }
            None => self.start(options.clone()),
        };
        // Nobody waits for a page that failed early.
        let _ = read.taken.send(());
        read.parts
    }

    async fn read(
        self,
        options: ListOptions,
        parts: mpsc::Sender<Result<ListPart, ListWatchError>>,
        taken: oneshot::Receiver<()>,
    ) {
        if let Err(e) = self.read_parts(&options, &parts, taken).await {
            // The receiver may be gone (the list was abandoned): nothing to tell then.
            let _ = parts.send(Err(e)).await;
        }
    }

    async fn read_parts(
        &self,
        options: &ListOptions,
        parts: &mpsc::Sender<Result<ListPart, ListWatchError>>,
        taken: oneshot::Receiver<()>,
    ) -> Result<(), ListWatchError> {
        let started = std::time::Instant::now();
        let url = request_url(&self.url_path, options, false);
        let mut body = send(&self.client, url, self.accept, false)
            .await?
            .into_data_stream();
        let mut scanner = ListScanner::default();
        let mut batches = Vec::new();
        let mut bytes = 0;
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(map_error)?;
            bytes += chunk.len();
            scanner.feed(&chunk, &mut batches)?;
            for batch in batches.drain(..) {
                if parts.send(Ok(ListPart::Items(batch))).await.is_err() {
                    return Ok(());
                }
            }
        }
        let meta = scanner.finish()?;
        tracing::debug!(bytes, elapsed = ?started.elapsed(), "list body received");
        if self.prefetch
            && let Some(token) = meta.continue_token.as_deref().filter(|t| !t.is_empty())
            // A prefetched page fetches its own successor only once it is taken.
            && taken.await.is_ok()
        {
            let next = ListOptions {
                continue_token: Some(token.to_owned()),
                resource_version: None,
                resource_version_match: None,
                ..options.clone()
            };
            let read = self.start(next);
            if let Some(stale) = self.next_page.lock().replace(read) {
                stale.task.abort();
            }
        }
        let _ = parts.send(Ok(ListPart::End(meta))).await;
        Ok(())
    }
}

impl<K> KubeListerWatcher<K>
where
    K: DeserializeOwned + Send + Sync + 'static,
{
    fn pager(&self) -> Pager {
        Pager {
            client: self.client.clone(),
            url_path: self.url_path.clone(),
            accept: if self.metadata_only {
                METADATA_LIST
            } else {
                JSON
            },
            prefetch: self.prefetch,
            next_page: Arc::clone(&self.next_page),
        }
    }

    /// One page: item batches are decoded on blocking threads while the body is still being
    /// read, `parallelism` of them at a time, and collected in order.
    async fn list_page(&self, options: ListOptions) -> Result<ListPage<K>, ListWatchError> {
        let options = self.tweaked(&options);
        let mut parts = self.pager().take(&options);
        let known = self.known.lock().clone();
        let transform = self.transform.clone();
        let mut decoded = stream::poll_fn(move |cx| parts.poll_recv(cx))
            .map(|part| {
                let (known, transform) = (known.clone(), transform.clone());
                async move {
                    match part? {
                        ListPart::Items(batch) => tokio::task::spawn_blocking(move || {
                            decode_items::<K>(
                                &batch.body,
                                &batch.items,
                                known.as_ref(),
                                transform.as_ref(),
                            )
                        })
                        .await
                        .map_err(join_error)?
                        .map(PagePart::Items),
                        ListPart::End(meta) => Ok(PagePart::End(meta)),
                    }
                }
            })
            .buffered(self.parallelism);
        let mut items = Vec::new();
        while let Some(part) = decoded.next().await {
            match part? {
                PagePart::Items(mut batch) => items.append(&mut batch),
                PagePart::End(meta) => {
                    return Ok(ListPage {
                        items,
                        resource_version: meta.resource_version.unwrap_or_default(),
                        continue_token: meta.continue_token.filter(|c| !c.is_empty()),
                        remaining_item_count: meta.remaining_item_count,
                    });
                }
            }
        }
        Err(ListWatchError::Other(
            "the list reader stopped before the end of the body".into(),
        ))
    }

    async fn open_watch(&self, options: ListOptions) -> Result<WatchStream<K>, ListWatchError> {
        let options = self.tweaked(&options);
        let accept = if self.metadata_only { METADATA } else { JSON };
        let body = send(
            &self.client,
            request_url(&self.url_path, &options, true),
            accept,
            // One gzip member per event is not decoded by kube-client's middleware.
            true,
        )
        .await?;
        let decoding = EventDecoding {
            expected_kind: self.expected_kind.as_deref().map(Arc::from),
            transform: self.transform.clone(),
        };
        // Reading and decoding run on their own task, ahead of the caller, which applies the
        // events; the task ends (and the connection closes) when the stream is dropped.
        let parallelism = self.parallelism.max(2);
        let (events_tx, mut events) = mpsc::channel(parallelism * 2);
        let driver = AbortOnDropHandle::new(tokio::spawn(decode_watch::<K, _>(
            body.into_data_stream().map_err(map_error),
            Lines::new(self.max_watch_line),
            decoding,
            parallelism,
            events_tx,
        )));
        let decoded = stream::poll_fn(move |cx| {
            let _driver = &driver;
            events.poll_recv(cx)
        })
        .flat_map(stream::iter);
        Ok(stop_after_error(decoded).boxed())
    }
}

/// What decoding a watch event needs besides the line: the kind to expect and the transform.
struct EventDecoding<K> {
    expected_kind: Option<Arc<str>>,
    transform: Option<TransformFunc<K>>,
}

impl<K> Clone for EventDecoding<K> {
    fn clone(&self) -> Self {
        Self {
            expected_kind: self.expected_kind.clone(),
            transform: self.transform.clone(),
        }
    }
}

/// Decodes a batch of watch lines in order; wrong-kind objects, and objects the transform
/// rejects, are logged and skipped.
fn decode_batch<K: DeserializeOwned>(
    lines: &[Bytes],
    decoding: &EventDecoding<K>,
) -> Vec<Result<WatchEvent<K>, ListWatchError>> {
    let mut out = Vec::with_capacity(lines.len());
    let mut decoder = ObjectDecoder::default();
    for line in lines {
        match decode_event::<K>(line, decoding.expected_kind.as_deref(), &mut decoder) {
            Ok(Decoded::Event(e)) => match transform_event(e, decoding.transform.as_ref()) {
                Ok(e) => out.push(Ok(e)),
                Err(err) => {
                    tracing::error!(error = %err, "transform failed, watch event skipped");
                }
            },
            Ok(Decoded::Nothing) => {}
            Ok(Decoded::WrongKind(reason)) => {
                tracing::error!(reason = %reason, "watch event object of unexpected kind, skipped");
            }
            Err(e) => {
                out.push(Err(e));
                break;
            }
        }
    }
    out
}

/// Ends a stream after its first error.
fn stop_after_error<T: Send + 'static>(
    s: impl futures::Stream<Item = Result<T, ListWatchError>> + Send + 'static,
) -> impl futures::Stream<Item = Result<T, ListWatchError>> + Send + 'static {
    s.scan(false, |failed, item| {
        let out = if *failed {
            None
        } else {
            *failed = item.is_err();
            Some(item)
        };
        futures::future::ready(out)
    })
}

/// The lines of a watch body: complete ones waiting to be decoded, and the partial last one,
/// none longer than `max_line` bytes (newline excluded).
#[derive(Debug)]
struct Lines {
    partial: BytesMut,
    complete: VecDeque<Bytes>,
    complete_bytes: usize,
    max_line: usize,
}

impl Lines {
    fn new(max_line: usize) -> Self {
        Self {
            partial: BytesMut::new(),
            complete: VecDeque::new(),
            complete_bytes: 0,
            max_line,
        }
    }

    /// Takes the next bytes of the body. Past a line longer than the bound, an error: the lines
    /// before it are kept, the rest is dropped.
    fn push(&mut self, chunk: &[u8]) -> Result<(), ListWatchError> {
        // Only the new bytes can hold the end of the partial line already buffered.
        let mut from = self.partial.len();
        self.partial.extend_from_slice(chunk);
        while let Some(pos) = memchr::memchr(b'\n', self.partial.get(from..).unwrap_or_default()) {
            let line = self.partial.split_to(from + pos + 1).freeze();
            self.push_line(line)?;
            from = 0;
        }
        if self.partial.len() > self.max_line {
            self.partial = BytesMut::new();
            return Err(self.too_large());
        }
        Ok(())
    }

    /// The body ended: a last line without newline still counts.
    fn finish(&mut self) -> Result<(), ListWatchError> {
        if self.partial.is_empty() {
            return Ok(());
        }
        let last = self.partial.split().freeze();
        self.push_line(last)
    }

    fn push_line(&mut self, line: Bytes) -> Result<(), ListWatchError> {
        if line.strip_suffix(b"\n").unwrap_or(&line).len() > self.max_line {
            self.partial = BytesMut::new();
            return Err(self.too_large());
        }
        self.complete_bytes += line.len();
        self.complete.push_back(line);
        Ok(())
    }

    fn too_large(&self) -> ListWatchError {
        ListWatchError::WatchLineTooLarge {
            limit: self.max_line,
        }
    }

    /// Whether more of the body may be read now: while the complete lines waiting stay under
    /// the read-ahead bound, and always while none is complete (a long line must be read whole).
    fn wants_more(&self) -> bool {
        self.complete.is_empty() || self.buffered_bytes() < MAX_READ_AHEAD_BYTES
    }

    fn buffered_bytes(&self) -> usize {
        self.complete_bytes + self.partial.len()
    }

    /// The complete lines waiting, up to [`MAX_BATCH_BYTES`] (at least one line).
    fn take_batch(&mut self) -> Option<Vec<Bytes>> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while let Some(line) = self.complete.front() {
            if !batch.is_empty() && bytes + line.len() > MAX_BATCH_BYTES {
                break;
            }
            bytes += line.len();
            batch.extend(self.complete.pop_front());
        }
        self.complete_bytes -= bytes;
        (!batch.is_empty()).then_some(batch)
    }
}

type EventBatch<K> = Vec<Result<WatchEvent<K>, ListWatchError>>;

/// Reads a watch body, splits it into lines and decodes them on blocking threads, `parallelism`
/// batches at a time, sending the events to `events` in order. A batch is every complete line
/// waiting when a decoder is free: single lines while events trickle in, big batches when they
/// pour. Ends after an error (sent last) or at the end of the body.
async fn decode_watch<K, S>(
    mut chunks: S,
    mut lines: Lines,
    decoding: EventDecoding<K>,
    parallelism: usize,
    events: mpsc::Sender<EventBatch<K>>,
) where
    K: DeserializeOwned + Send + Sync + 'static,
    S: Stream<Item = Result<Bytes, ListWatchError>> + Unpin,
{
    let mut in_flight = FuturesOrdered::new();
    let mut body_error = None;
    let mut body_open = true;
    loop {
        while in_flight.len() < parallelism
            && let Some(batch) = lines.take_batch()
        {
            let decoding_batch = decoding.clone();
            in_flight.push_back(tokio::task::spawn_blocking(move || {
                decode_batch::<K>(&batch, &decoding_batch)
            }));
        }
        tokio::select! {
            Some(done) = in_flight.next(), if !in_flight.is_empty() => {
                let batch = done.unwrap_or_else(|e| vec![Err(join_error(e))]);
                let failed = batch.iter().any(Result::is_err);
                if events.send(batch).await.is_err() || failed {
                    return;
                }
            }
            chunk = chunks.next(), if body_open && lines.wants_more() => {
                let read = match chunk {
                    Some(Ok(chunk)) => lines.push(&chunk),
                    Some(Err(e)) => Err(e),
                    None => {
                        body_open = false;
                        lines.finish()
                    }
                };
                if let Err(e) = read {
                    body_error = Some(e);
                    body_open = false;
                }
            }
            else => break,
        }
    }
    if let Some(e) = body_error {
        let _ = events.send(vec![Err(e)]).await;
    }
}

/// The whole decoding of a watch body, synchronously: [`crate::fuzzing::watch_body`].
#[cfg(feature = "fuzzing")]
pub(crate) fn decode_watch_body<K: DeserializeOwned>(
    body: &[u8],
    chunk: usize,
    max_line: usize,
    expected_kind: Option<&str>,
) -> usize {
    let mut lines = Lines::new(max_line);
    let mut events = 0;
    let decoding = EventDecoding {
        expected_kind: expected_kind.map(Arc::from),
        transform: None,
    };
    let mut decode = |lines: &mut Lines| {
        while let Some(batch) = lines.take_batch() {
            for event in decode_batch::<K>(&batch, &decoding) {
                if event.is_err() {
                    return false;
                }
                events += 1;
            }
        }
        true
    };
    for part in body.chunks(chunk.max(1)) {
        if lines.push(part).is_err() || !decode(&mut lines) {
            return events;
        }
    }
    if lines.finish().is_ok() {
        decode(&mut lines);
    }
    events
}

impl<K> ListerWatcher<K> for KubeListerWatcher<K>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
{
    fn list(&self, options: &ListOptions) -> ListFuture<'_, K> {
        self.list_page(options.clone()).boxed()
    }

    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, K> {
        self.open_watch(options.clone()).boxed()
    }

    /// Listed objects whose key and resource version match a known one are not decoded: the
    /// known `Arc` is returned (only their metadata is read).
    fn reuse_known_objects(&self, known: Arc<dyn KnownObjects<K>>) {
        let lookup: KnownLookup<K> = Arc::new(move |key, rv| {
            known
                .get_by_key(key)
                .filter(|obj| obj.meta().resource_version.as_deref() == Some(rv))
        });
        *self.known.lock() = Some(lookup);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lister_watcher::ResourceVersionMatch;

    #[test]
    fn list_and_watch_urls_carry_every_option_form_encoded() {
        let options = ListOptions {
            label_selector: Some("app in (a,b),tier!=x".into()),
            limit: Some(500),
            resource_version: Some("0".into()),
            ..ListOptions::default()
        };
        assert_eq!(
            request_url("/api/v1/pods", &options, false),
            "/api/v1/pods?labelSelector=app+in+%28a%2Cb%29%2Ctier%21%3Dx&limit=500&resourceVersion=0"
        );
        let watch = ListOptions {
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            send_initial_events: Some(true),
            allow_watch_bookmarks: true,
            timeout_seconds: Some(301),
            ..ListOptions::default()
        };
        assert_eq!(
            request_url("/api/v1/namespaces/ns/pods", &watch, true),
            "/api/v1/namespaces/ns/pods?watch=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=301&allowWatchBookmarks=true&sendInitialEvents=true"
        );
    }

    #[test]
    fn watch_lines_are_split_across_chunks_and_batched() {
        let mut lines = Lines::new(64);
        lines.push(b"{\"a\":1}\n{\"b\"").unwrap();
        lines.push(b":2}\n\n{\"c\":3}").unwrap();
        assert_eq!(lines.buffered_bytes(), 24);
        let first = lines.take_batch().unwrap();
        assert_eq!(first, [&b"{\"a\":1}\n"[..], b"{\"b\":2}\n", b"\n"]);
        assert_eq!(lines.take_batch(), None, "a partial line waits");
        lines.finish().unwrap();
        assert_eq!(lines.take_batch().unwrap(), [&b"{\"c\":3}"[..]]);
        assert_eq!(lines.buffered_bytes(), 0);
    }

    #[test]
    fn watch_lines_up_to_the_bound_are_kept_and_a_longer_one_is_an_error() {
        let mut lines = Lines::new(8);
        lines.push(b"12345678\n1234").unwrap();
        lines.push(b"5678").unwrap();
        assert!(lines.wants_more());
        assert!(matches!(
            lines.push(b"9"),
            Err(ListWatchError::WatchLineTooLarge { limit: 8 })
        ));
        assert_eq!(lines.take_batch().unwrap(), [&b"12345678\n"[..]]);
        let mut lines = Lines::new(8);
        assert!(matches!(
            lines.push(b"1\n123456789\n2\n"),
            Err(ListWatchError::WatchLineTooLarge { limit: 8 })
        ));
        assert_eq!(
            lines.take_batch().unwrap(),
            [&b"1\n"[..]],
            "lines before it stay"
        );
        let mut lines = Lines::new(8);
        lines.push(b"123456789").unwrap_err();
        let mut lines = Lines::new(8);
        lines.push(b"12345678").unwrap();
        lines.finish().unwrap();
        assert_eq!(lines.take_batch().unwrap(), [&b"12345678"[..]]);
    }
}
