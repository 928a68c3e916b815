//! Response encodings: lists, Tables and watch streams, built from objects' shared encodings.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::Stream;
use kube_core::Resource;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::WaitForCancellationFutureOwned;

use crate::cache::{Msg, WatchKind, event_frame};
use crate::object::{Object, write_json};
use crate::resource::ResourceDef;

/// The representation a client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Table,
}

impl Format {
    /// `as=Table` in the Accept header selects the Table form.
    pub(crate) fn from_accept(accept: Option<&str>) -> Self {
        match accept {
            Some(a)
                if a.split(',')
                    .next()
                    .is_some_and(|first| first.contains("as=Table")) =>
            {
                Self::Table
            }
            _ => Self::Json,
        }
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

/// A list body, streamed in chunks of about 256 KiB, each object's shared encoding copied once.
pub(crate) fn list_body(
    def: &ResourceDef,
    meta: &ListMeta,
    items: Vec<Arc<Object>>,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(b"{\"kind\":");
    write_json(&mut head, &def.list_kind());
    head.extend_from_slice(b",\"apiVersion\":");
    write_json(&mut head, &def.api.api_version);
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
                    buf.extend_from_slice(obj.raw());
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

/// A human-readable age (`45s`, `12m`, `5h`, `3d`).
fn age(obj: &Object) -> String {
    let Some(created) = obj.meta().creation_timestamp.as_ref() else {
        return "<unknown>".into();
    };
    let secs = (k8s_openapi::jiff::Timestamp::now().as_second() - created.0.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

fn table_columns(def: &ResourceDef) -> Value {
    if !def.printer_columns.is_empty() {
        return Value::Array(crate::crd::column_definitions(&def.printer_columns));
    }
    let mut cols = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}),
    ];
    if def.api.kind == "Pod" || def.api.kind == "Namespace" || def.api.kind == "Node" {
        cols.push(json!({"name": "Status", "type": "string", "format": "", "description": "The status of the object.", "priority": 0}));
    }
    cols.push(json!({"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0}));
    Value::Array(cols)
}

fn table_row(def: &ResourceDef, obj: &Object) -> Value {
    let mut cells = vec![Value::String(obj.meta().name.clone().unwrap_or_default())];
    if !def.printer_columns.is_empty() {
        cells.extend(crate::crd::column_cells(
            &def.printer_columns,
            &obj.to_value(),
        ));
        return row_json(cells, obj);
    }
    match def.api.kind.as_str() {
        "Pod" | "Namespace" => cells.push(Value::String(
            obj.field("status.phase")
                .map(|s| s.into_owned())
                .unwrap_or_default(),
        )),
        "Node" => cells.push(Value::String("Ready".into())),
        _ => {}
    }
    cells.push(Value::String(age(obj)));
    row_json(cells, obj)
}

fn row_json(cells: Vec<Value>, obj: &Object) -> Value {
    json!({
        "cells": cells,
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.full_meta()}
    })
}

/// A `meta.k8s.io/v1` Table of `items` (what `kubectl get` asks for).
pub(crate) fn table(def: &ResourceDef, meta: &ListMeta, items: &[Arc<Object>]) -> Bytes {
    let rows: Vec<Value> = items.iter().map(|o| table_row(def, o)).collect();
    let v = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta_json(meta),
        "columnDefinitions": table_columns(def),
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
        }
    }

    fn encode(&mut self, msg: Msg) {
        match (msg, self.format) {
            (Msg::Event(kind, event), Format::Json) => self.pending.push_back(event.frame(kind)),
            (Msg::Event(kind, event), Format::Table) => {
                let obj = Arc::clone(event.object_for(kind));
                self.push_table(kind, &obj);
            }
            (Msg::Initial(obj), Format::Json) => {
                self.pending
                    .push_back(Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":"));
                self.pending.push_back(obj.raw().clone());
                self.pending.push_back(Bytes::from_static(b"}\n"));
            }
            (Msg::Initial(obj), Format::Table) => self.push_table(WatchKind::Added, &obj),
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
                    buf.extend_from_slice(obj.raw());
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

    fn push_table(&mut self, kind: WatchKind, obj: &Arc<Object>) {
        let meta = ListMeta {
            resource_version: obj.resource_version_u64(),
            ..ListMeta::default()
        };
        let t = table(&self.def, &meta, std::slice::from_ref(obj));
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
