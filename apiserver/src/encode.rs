//! Response encodings: lists, Tables and watch streams, built from objects' shared encodings.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::Stream;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::WaitForCancellationFutureOwned;

use crate::cache::{Msg, WatchKind, event_frame};
use crate::object::{Object, write_json};
use crate::printers::{self, IncludeObject};
use crate::resource::ResourceDef;

/// The representation a client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    /// A `meta.k8s.io` Table of the given version (`v1` or `v1beta1`).
    Table(&'static str, IncludeObject),
    /// `meta.k8s.io`'s `PartialObjectMetadata` of the given version: each object's metadata
    /// alone. `list`: the client asked for `PartialObjectMetadataList`, which only a list
    /// answers (and `PartialObjectMetadata` only a single object or a watch).
    Metadata {
        version: &'static str,
        list: bool,
    },
}

impl Format {
    /// The first media type of the Accept header that can be served, in the order given, as
    /// Kubernetes negotiates: JSON with `as=Table`, `as=PartialObjectMetadata` or
    /// `as=PartialObjectMetadataList` (the `v=` parameter the version) or plain; types it cannot
    /// serve (protobuf, an unknown `as=`) are passed over, and JSON is the answer when none is
    /// left. `include` is what Table rows carry.
    pub(crate) fn from_accept(accept: Option<&str>, include: IncludeObject) -> Self {
        for media in accept.unwrap_or_default().split(',') {
            let mut parts = media.split(';').map(str::trim);
            if !matches!(
                parts.next(),
                Some("application/json" | "application/*" | "*/*")
            ) {
                continue;
            }
            let mut as_kind = None;
            let mut version = "v1";
            for (name, value) in parts.filter_map(|p| p.split_once('=')) {
                match (name.trim(), value.trim()) {
                    ("as", kind) => as_kind = Some(kind),
                    ("v", "v1beta1") => version = "v1beta1",
                    _ => {}
                }
            }
            match as_kind {
                None => return Self::Json,
                Some("Table") => return Self::Table(version, include),
                Some("PartialObjectMetadata") => {
                    return Self::Metadata {
                        version,
                        list: false,
                    };
                }
                Some("PartialObjectMetadataList") => {
                    return Self::Metadata {
                        version,
                        list: true,
                    };
                }
                Some(_) => {}
            }
        }
        Self::Json
    }
}

/// The list metadata of a response.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListMeta {
    pub(crate) resource_version: u64,
    pub(crate) continue_token: Option<String>,
    pub(crate) remaining: Option<u64>,
}

fn list_meta_json(meta: &ListMeta) -> Value {
    let mut m = json!({"resourceVersion": meta.resource_version.to_string()});
    if let Some(c) = &meta.continue_token {
        m["continue"] = Value::String(c.clone());
    }
    if let Some(r) = meta.remaining {
        m["remainingItemCount"] = json!(r);
    }
    m
}

const CHUNK: usize = 256 * 1024;

/// A list body, streamed in chunks of about 256 KiB, each object's shared encoding copied once
/// (objects stored in another version than `def`'s are converted first); with `metadata`, a
/// `PartialObjectMetadataList` of that version instead, each item its object's metadata.
pub(crate) fn list_body(
    def: &Arc<ResourceDef>,
    meta: &ListMeta,
    items: Vec<Arc<Object>>,
    metadata: Option<&'static str>,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let def = Arc::clone(def);
    let api_version = def.api.api_version.clone();
    let (kind, list_version) = match metadata {
        Some(version) => (
            "PartialObjectMetadataList".to_owned(),
            format!("meta.k8s.io/{version}"),
        ),
        None => (def.list_kind(), api_version.clone()),
    };
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(b"{\"kind\":");
    write_json(&mut head, &kind);
    head.extend_from_slice(b",\"apiVersion\":");
    write_json(&mut head, &list_version);
    head.extend_from_slice(b",\"metadata\":");
    write_json(&mut head, &list_meta_json(meta));
    head.extend_from_slice(b",\"items\":[");
    let mut items = items.into_iter().enumerate();
    let mut head = Some(head);
    let mut done = false;
    futures::stream::poll_fn(move |_cx| {
        if done {
            return Poll::Ready(None);
        }
        let mut buf = BytesMut::with_capacity(CHUNK + 16 * 1024);
        if let Some(h) = head.take() {
            buf.extend_from_slice(&h);
        }
        while buf.len() < CHUNK {
            match items.next() {
                Some((i, obj)) => {
                    if i > 0 {
                        buf.extend_from_slice(b",");
                    }
                    if let Some(version) = metadata {
                        buf.extend_from_slice(obj.partial_metadata(version).to_string().as_bytes());
                    } else if obj.api_version() == api_version {
                        buf.extend_from_slice(obj.raw());
                    } else {
                        buf.extend_from_slice(crate::convert::served(&def, &obj).raw());
                    }
                }
                None => {
                    buf.extend_from_slice(b"]}");
                    done = true;
                    break;
                }
            }
        }
        Poll::Ready(Some(Ok(buf.freeze())))
    })
}

/// How a Table is encoded: its version, what rows carry, and whether the column definitions
/// are sent (a watch sends them with its first event only).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TableForm {
    pub(crate) version: &'static str,
    pub(crate) include: IncludeObject,
    pub(crate) columns: bool,
}

/// A `meta.k8s.io` Table of `items` (what `kubectl get` asks for).
pub(crate) fn table(
    def: &ResourceDef,
    meta: &ListMeta,
    items: &[Arc<Object>],
    form: TableForm,
) -> Bytes {
    let rows: Vec<Value> = items
        .iter()
        .map(|o| printers::row(def, o, &crate::convert::served(def, o), form.include))
        .collect();
    let columns = if form.columns {
        Value::Array(printers::columns(def))
    } else {
        Value::Null
    };
    let v = json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{}", form.version),
        "metadata": list_meta_json(meta),
        "columnDefinitions": columns,
        "rows": rows,
    });
    Bytes::from(v.to_string())
}

/// A bookmark object: an empty object of the type with only `metadata.resourceVersion` (and the
/// initial-events-end annotation when asked).
pub(crate) fn bookmark_frame(def: &ResourceDef, rv: u64, initial_events_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_events_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let obj = json!({"kind": def.api.kind, "apiVersion": def.api.api_version, "metadata": meta});
    event_frame("BOOKMARK", obj.to_string().as_bytes())
}

/// A watch stream that carries one ERROR event and ends.
pub(crate) fn error_frame(status: &Value) -> Bytes {
    event_frame("ERROR", status.to_string().as_bytes())
}

/// The body of a watch: the initial messages, then the watcher's channel, until the deadline,
/// the end of all watches, or the dispatcher dropping the watcher.
pub(crate) struct WatchBody {
    def: Arc<ResourceDef>,
    format: Format,
    pending: VecDeque<Bytes>,
    initial: std::vec::IntoIter<Msg>,
    rx: mpsc::Receiver<Msg>,
    deadline: Pin<Box<tokio::time::Sleep>>,
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    done: bool,
    /// Whether a Table event with the column definitions was sent.
    columns_sent: bool,
}

impl WatchBody {
    pub(crate) fn new(
        def: Arc<ResourceDef>,
        format: Format,
        initial: Vec<Msg>,
        rx: mpsc::Receiver<Msg>,
        deadline: tokio::time::Instant,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Self {
        Self {
            def,
            format,
            pending: VecDeque::new(),
            initial: initial.into_iter(),
            rx,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            cancelled: Box::pin(cancel.cancelled_owned()),
            done: false,
            columns_sent: false,
        }
    }

    fn encode(&mut self, msg: Msg) {
        match (msg, self.format) {
            (Msg::Event(kind, event), Format::Json) => {
                let obj = event.object_for(kind);
                let frame = if obj.api_version() == self.def.api.api_version {
                    event.frame(kind)
                } else {
                    event_frame(kind.as_str(), crate::convert::served(&self.def, obj).raw())
                };
                self.pending.push_back(frame);
            }
            (Msg::Event(kind, event), Format::Table(..)) => {
                let obj = Arc::clone(event.object_for(kind));
                self.push_table(kind, &obj);
            }
            (Msg::Initial(obj), Format::Json) => {
                let obj = crate::convert::served(&self.def, &obj);
                self.pending
                    .push_back(Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":"));
                self.pending.push_back(obj.raw().clone());
                self.pending.push_back(Bytes::from_static(b"}\n"));
            }
            (Msg::Initial(obj), Format::Table(..)) => self.push_table(WatchKind::Added, &obj),
            (Msg::Event(kind, event), Format::Metadata { version, .. }) => {
                self.push_metadata(kind, event.object_for(kind), version)
            }
            (Msg::Initial(obj), Format::Metadata { version, .. }) => {
                self.push_metadata(WatchKind::Added, &obj, version)
            }
            (Msg::Bookmark(rv), _) => self.pending.push_back(bookmark_frame(&self.def, rv, false)),
            (Msg::InitialEventsEnd(rv), _) => {
                self.pending.push_back(bookmark_frame(&self.def, rv, true))
            }
            #[cfg(feature = "testing")]
            (Msg::Raw(bytes), _) => self.pending.push_back(bytes),
        }
    }

    /// Encodes initial messages: JSON objects are copied into one chunk of about 256 KiB (far
    /// fewer HTTP chunks for a watch-list of many objects); anything else is encoded alone.
    fn encode_initial_batch(&mut self) {
        let mut buf = BytesMut::new();
        while buf.len() < CHUNK {
            match self.initial.as_slice().first() {
                Some(Msg::Initial(obj)) if self.format == Format::Json => {
                    buf.extend_from_slice(b"{\"type\":\"ADDED\",\"object\":");
                    buf.extend_from_slice(crate::convert::served(&self.def, obj).raw());
                    buf.extend_from_slice(b"}\n");
                    self.initial.next();
                }
                Some(_) if buf.is_empty() => {
                    if let Some(msg) = self.initial.next() {
                        self.encode(msg);
                    }
                    return;
                }
                _ => break,
            }
        }
        if !buf.is_empty() {
            self.pending.push_back(buf.freeze());
        }
    }

    /// A `PartialObjectMetadata` event of one object.
    fn push_metadata(&mut self, kind: WatchKind, obj: &Object, version: &str) {
        let partial = obj.partial_metadata(version).to_string();
        self.pending
            .push_back(event_frame(kind.as_str(), partial.as_bytes()));
    }

    /// A Table event of one object; only the first carries the column definitions.
    fn push_table(&mut self, kind: WatchKind, obj: &Arc<Object>) {
        let Format::Table(version, include) = self.format else {
            return;
        };
        let meta = ListMeta {
            resource_version: obj.resource_version_u64(),
            ..ListMeta::default()
        };
        let form = TableForm {
            version,
            include,
            columns: !self.columns_sent,
        };
        self.columns_sent = true;
        let t = table(&self.def, &meta, std::slice::from_ref(obj), form);
        self.pending.push_back(event_frame(kind.as_str(), &t));
    }
}

impl Stream for WatchBody {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(b) = this.pending.pop_front() {
                return Poll::Ready(Some(Ok(b)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            if this.deadline.as_mut().poll(cx).is_ready()
                || this.cancelled.as_mut().poll(cx).is_ready()
            {
                this.done = true;
                continue;
            }
            if this.initial.len() > 0 {
                this.encode_initial_batch();
                continue;
            }
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(msg)) => this.encode(msg),
                Poll::Ready(None) => this.done = true,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
