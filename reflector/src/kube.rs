//! [`KubeListerWatcher`]: lists and watches over kube-client, decoding off the socket task.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::{
    AsyncBufRead, AsyncBufReadExt, AsyncReadExt, FutureExt, StreamExt, TryStreamExt, stream,
};
use kube_client::{Api, Client};
use kube_core::{ApiResource, DynamicObject, PartialObjectMeta, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use crate::decode::{Decoded, ParsedList, decode_event, decode_items, parse_list};
use crate::lister_watcher::{
    ListFuture, ListOptions, ListPage, ListWatchError, ListerWatcher, WatchEvent, WatchFuture,
    WatchStream,
};

const JSON: &str = "application/json";
const METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
const METADATA: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
/// Lines read at once from a watch body before they are handed to a decoder.
const MAX_BATCH_BYTES: usize = 512 * 1024;

/// Changes the options of every request (selectors, typically): client-go's
/// `TweakListOptionsFunc`.
pub type TweakListOptions = Arc<dyn Fn(&mut ListOptions) + Send + Sync>;

struct Prefetch {
    options: ListOptions,
    body: JoinHandle<Result<Bytes, ListWatchError>>,
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
    next_page: Arc<Mutex<Option<Prefetch>>>,
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
            next_page: Arc::new(Mutex::new(None)),
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
            next_page: Arc::new(Mutex::new(None)),
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

async fn fetch(client: Client, url: String, accept: &'static str) -> Result<Bytes, ListWatchError> {
    let request = http::Request::get(url)
        .header(http::header::ACCEPT, accept)
        .body(Vec::new())
        .map_err(|e| ListWatchError::Other(format!("building request: {e}")))?;
    let mut reader = Box::pin(client.request_stream(request).await.map_err(map_error)?);
    let mut body = Vec::new();
    reader
        .read_to_end(&mut body)
        .await
        .map_err(|e| ListWatchError::Connection(error_chain(&e)))?;
    Ok(Bytes::from(body))
}

impl<K> KubeListerWatcher<K>
where
    K: DeserializeOwned + Send + Sync + 'static,
{
    fn start_fetch(&self, options: &ListOptions) -> JoinHandle<Result<Bytes, ListWatchError>> {
        let accept = if self.metadata_only {
            METADATA_LIST
        } else {
            JSON
        };
        tokio::spawn(fetch(
            self.client.clone(),
            request_url(&self.url_path, options, false),
            accept,
        ))
    }

    /// The body for `options`: the prefetched one if it was for these options.
    async fn body_for(&self, options: &ListOptions) -> Result<Bytes, ListWatchError> {
        let prefetched = self.next_page.lock().take();
        let handle = match prefetched {
            Some(p) if p.options == *options => p.body,
            Some(p) => {
                p.body.abort();
                self.start_fetch(options)
            }
            None => self.start_fetch(options),
        };
        handle.await.map_err(join_error)?
    }

    async fn list_page(&self, options: ListOptions) -> Result<ListPage<K>, ListWatchError> {
        let options = self.tweaked(&options);
        let body = self.body_for(&options).await?;
        let parsed: ParsedList = tokio::task::spawn_blocking(move || parse_list(body))
            .await
            .map_err(join_error)??;
        if self.prefetch
            && let Some(token) = &parsed.continue_token
        {
            let next = ListOptions {
                continue_token: Some(token.clone()),
                resource_version: None,
                resource_version_match: None,
                ..options.clone()
            };
            let body = self.start_fetch(&next);
            *self.next_page.lock() = Some(Prefetch {
                options: next,
                body,
            });
        }
        let items = self.decode_parallel(&parsed).await?;
        Ok(ListPage {
            items,
            resource_version: parsed.resource_version,
            continue_token: parsed.continue_token,
            remaining_item_count: parsed.remaining_item_count,
        })
    }

    async fn decode_parallel(&self, parsed: &ParsedList) -> Result<Vec<Arc<K>>, ListWatchError> {
        let n = parsed.items.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        // Small chunks, `parallelism` of them decoding at a time, collected in order: every core
        // stays busy even when one is slowed down by other work.
        let chunk = (n / (self.parallelism * 4)).clamp(16, 256);
        let jobs: Vec<Vec<Range<usize>>> = parsed.items.chunks(chunk).map(<[_]>::to_vec).collect();
        let body = parsed.body.clone();
        let chunks: Vec<Vec<Arc<K>>> = stream::iter(jobs)
            .map(move |ranges| {
                let body = body.clone();
                tokio::task::spawn_blocking(move || decode_items::<K>(&body, &ranges))
                    .map(|joined| joined.map_err(join_error)?)
            })
            .buffered(self.parallelism)
            .try_collect()
            .await?;
        let mut items = Vec::with_capacity(n);
        for c in chunks {
            items.extend(c);
        }
        Ok(items)
    }

    async fn open_watch(&self, options: ListOptions) -> Result<WatchStream<K>, ListWatchError> {
        let options = self.tweaked(&options);
        let accept = if self.metadata_only { METADATA } else { JSON };
        let request = http::Request::get(request_url(&self.url_path, &options, true))
            .header(http::header::ACCEPT, accept)
            // One gzip member per event is not decoded by kube-client's middleware.
            .header(http::header::ACCEPT_ENCODING, "identity")
            .body(Vec::new())
            .map_err(|e| ListWatchError::Other(format!("building request: {e}")))?;
        let reader = self
            .client
            .request_stream(request)
            .await
            .map_err(map_error)?;
        let expected_kind: Option<Arc<str>> = self.expected_kind.as_deref().map(Arc::from);
        let batches = line_batches(Box::pin(reader));
        let decoded = batches
            .map(move |batch| {
                let expected_kind = expected_kind.clone();
                async move {
                    match batch {
                        Ok(lines) => tokio::task::spawn_blocking(move || {
                            decode_batch::<K>(&lines, expected_kind.as_deref())
                        })
                        .await
                        .unwrap_or_else(|e| vec![Err(join_error(e))]),
                        Err(e) => vec![Err(e)],
                    }
                }
            })
            .buffered(self.parallelism.max(2))
            .flat_map(stream::iter);
        Ok(stop_after_error(decoded).boxed())
    }
}

/// Decodes a batch of watch lines in order; wrong-kind objects are logged and skipped.
fn decode_batch<K: DeserializeOwned>(
    lines: &[Bytes],
    expected_kind: Option<&str>,
) -> Vec<Result<WatchEvent<K>, ListWatchError>> {
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        match decode_event::<K>(line, expected_kind) {
            Ok(Decoded::Event(e)) => out.push(Ok(e)),
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

/// Splits a body into batches of complete lines: everything already received, up to
/// [`MAX_BATCH_BYTES`], so that a busy stream gives big batches and a quiet one single lines.
fn line_batches<R: AsyncBufRead + Send + Unpin + 'static>(
    reader: R,
) -> impl futures::Stream<Item = Result<Vec<Bytes>, ListWatchError>> + Send + 'static {
    stream::unfold(Some((reader, BytesMut::new())), |state| async move {
        let (mut reader, mut buf) = state?;
        let mut lines = Vec::new();
        let mut batch_bytes = 0;
        loop {
            // Wait for data only when no complete line is at hand.
            let chunk = if lines.is_empty() {
                reader.fill_buf().await
            } else {
                match reader.fill_buf().now_or_never() {
                    Some(r) => r,
                    None => return Some((Ok(lines), Some((reader, buf)))),
                }
            };
            let chunk = match chunk {
                Ok(c) => c,
                Err(e) if lines.is_empty() => {
                    return Some((Err(ListWatchError::Connection(error_chain(&e))), None));
                }
                Err(_) => return Some((Ok(lines), None)),
            };
            if chunk.is_empty() {
                // End of body: a last line without newline still counts.
                if !buf.is_empty() {
                    lines.push(buf.split().freeze());
                }
                return if lines.is_empty() {
                    None
                } else {
                    Some((Ok(lines), None))
                };
            }
            let n = chunk.len();
            // Only the new bytes can hold the end of the partial line already buffered.
            let mut from = buf.len();
            buf.extend_from_slice(chunk);
            reader.consume_unpin(n);
            while let Some(pos) = memchr::memchr(b'\n', buf.get(from..).unwrap_or_default()) {
                let line = buf.split_to(from + pos + 1).freeze();
                batch_bytes += line.len();
                lines.push(line);
                from = 0;
            }
            if batch_bytes >= MAX_BATCH_BYTES {
                return Some((Ok(lines), Some((reader, buf))));
            }
        }
    })
}

impl<K> ListerWatcher<K> for KubeListerWatcher<K>
where
    K: DeserializeOwned + Send + Sync + 'static,
{
    fn list(&self, options: &ListOptions) -> ListFuture<'_, K> {
        self.list_page(options.clone()).boxed()
    }

    fn watch(&self, options: &ListOptions) -> WatchFuture<'_, K> {
        self.open_watch(options.clone()).boxed()
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

    #[tokio::test]
    async fn line_batches_split_lines_across_chunks() {
        let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from_static(b"{\"a\":1}\n{\"b\"")),
            Ok(Bytes::from_static(b":2}\n\n{\"c\":3}")),
        ];
        let reader = futures::TryStreamExt::into_async_read(stream::iter(chunks));
        let batches: Vec<_> = line_batches(reader).collect().await;
        let lines: Vec<Bytes> = batches.into_iter().flat_map(Result::unwrap).collect();
        assert_eq!(
            lines,
            [&b"{\"a\":1}\n"[..], b"{\"b\":2}\n", b"\n", b"{\"c\":3}"]
        );
    }
}
