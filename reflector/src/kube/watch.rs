//! Watch streams: lines split as they arrive and decoded in batches on blocking threads, in
//! order, by a driver task running ahead of the caller.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::stream::FuturesOrdered;
use futures::{Stream, StreamExt, TryStreamExt, stream};
use http_body_util::BodyExt;
use kcache_store::TransformFunc;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::task::AbortOnDropHandle;

use super::request::{join_error, map_error, request_url, send};
use super::{JSON, KubeListerWatcher, METADATA};
use crate::decode::{Decoded, ObjectDecoder, decode_event};
use crate::lister_watcher::{
    ListOptions, ListWatchError, WatchEvent, WatchStream, transform_event,
};

/// The most bytes of watch lines handed to one decoder at once.
const MAX_BATCH_BYTES: usize = 512 * 1024;
/// The most bytes of complete watch lines read ahead of the decoders (a longer line is still
/// read whole, up to the line bound).
const MAX_READ_AHEAD_BYTES: usize = 4 * 1024 * 1024;

impl<K> KubeListerWatcher<K>
where
    K: DeserializeOwned + Send + Sync + 'static,
{
    pub(super) async fn open_watch(
        &self,
        options: ListOptions,
    ) -> Result<WatchStream<K>, ListWatchError> {
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
    ObjectDecoder::with_local(|decoder| {
        for line in lines {
            match decode_event::<K>(line, decoding.expected_kind.as_deref(), decoder) {
                Ok(Decoded::Event(e)) => {
                    if let Some(e) = transform_event(e, decoding.transform.as_ref()) {
                        out.push(Ok(e));
                    }
                }
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
    });
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

#[cfg(test)]
mod tests {
    use super::*;

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
