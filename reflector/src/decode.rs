//! JSON decoding of list bodies and watch lines, meant to run on blocking threads, off the task
//! that reads the socket.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use kcache_store::{TransformFunc, namespace_key};
use kube_core::Status;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::lister_watcher::{Bookmark, ListWatchError, WatchEvent, transformed};

/// The metadata of a list: its resource version, continue token and remaining item count.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListMeta {
    #[serde(default)]
    pub(crate) resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    pub(crate) continue_token: Option<String>,
    #[serde(default)]
    pub(crate) remaining_item_count: Option<i64>,
}

/// A list body without its items: only the kind and the metadata are read.
#[derive(Deserialize)]
struct ListEnvelope<'a> {
    #[serde(default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    metadata: ListMeta,
    /// What the scanner left of the items: `[]`, `null` or nothing, unless they were not an
    /// array (then this fails, rather than reading the list as empty).
    #[serde(default, rename = "items")]
    _items: Option<Vec<serde::de::IgnoredAny>>,
}

/// Reads the metadata of a list body's envelope (the body with its items left out). A `Status`
/// instead of a list (some proxies and servers answer 200 with one) is an error, as in
/// client-go: a failure Status is that API error, any other is not a list.
pub(crate) fn decode_list_meta(envelope: &[u8]) -> Result<ListMeta, ListWatchError> {
    let list = serde_json::from_slice::<ListEnvelope<'_>>(envelope)
        .map_err(|e| ListWatchError::decode_failed("list body", e))?;
    if list.kind.as_deref() != Some("Status") {
        return Ok(list.metadata);
    }
    let status: Status = serde_json::from_slice(envelope)
        .map_err(|e| ListWatchError::decode_failed("list body Status", e))?;
    Err(if status.is_failure() {
        ListWatchError::from(status)
    } else {
        ListWatchError::decode(format!(
            "list body is a Status, not a list: {}",
            status.message
        ))
    })
}

/// What a lister-watcher knows of the objects already held: the known `Arc` under a key, if
/// its resource version is the given one.
pub(crate) type KnownLookup<K> = Arc<dyn Fn(&str, &str) -> Option<Arc<K>> + Send + Sync>;

/// Just the identity of a listed object.
#[derive(Deserialize)]
struct Identity<'a> {
    #[serde(borrow)]
    metadata: IdentityMeta<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IdentityMeta<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    resource_version: Option<Cow<'a, str>>,
}

/// The known object for the JSON `item`, if its key and resource version match: read without
/// allocating anything but the key.
fn known_copy<K>(item: &[u8], known: &KnownLookup<K>) -> Option<Arc<K>> {
    let meta = serde_json::from_slice::<Identity<'_>>(item).ok()?.metadata;
    let key = namespace_key(meta.namespace.as_deref(), &meta.name?);
    known(&key, &meta.resource_version?)
}

/// Decodes objects with simd-json (a quarter less time than serde_json on realistic pods,
/// measured), reusing its buffers from one object to the next; whatever it rejects goes to
/// serde_json, whose verdict and error message stand.
#[derive(Default)]
pub(crate) struct ObjectDecoder {
    scratch: Vec<u8>,
    buffers: simd_json::Buffers,
}

/// The most bytes of input a thread's decoder keeps buffers for between calls: past it, they
/// are freed after use rather than held by the thread.
const KEPT_DECODER_BYTES: usize = 1024 * 1024;

thread_local! {
    /// Each thread's decoder: its buffers outlive a batch, so decoding a watch line allocates
    /// only the object (fresh buffers per batch cost a large allocation each, and with glibc
    /// every large allocation also consolidates the thread's freed small chunks).
    static LOCAL_DECODER: std::cell::RefCell<ObjectDecoder> =
        std::cell::RefCell::new(ObjectDecoder::default());
}

impl ObjectDecoder {
    /// Runs `f` with this thread's decoder.
    pub(crate) fn with_local<R>(f: impl FnOnce(&mut ObjectDecoder) -> R) -> R {
        LOCAL_DECODER.with(|cell| match cell.try_borrow_mut() {
            Ok(mut decoder) => {
                let out = f(&mut decoder);
                if decoder.scratch.capacity() > KEPT_DECODER_BYTES {
                    *decoder = ObjectDecoder::default();
                }
                out
            }
            // Only reached if `f` itself decodes again: that call gets fresh buffers.
            Err(_) => f(&mut ObjectDecoder::default()),
        })
    }

    pub(crate) fn decode<K: DeserializeOwned>(
        &mut self,
        json: &[u8],
    ) -> Result<K, serde_json::Error> {
        // simd-json rewrites its input in place: it works on a copy.
        self.scratch.clear();
        self.scratch.extend_from_slice(json);
        simd_json::serde::from_slice_with_buffers(&mut self.scratch, &mut self.buffers)
            .or_else(|_| serde_json::from_slice(json))
    }
}

/// Decodes the items at `ranges` of `body`; an item unchanged since its `known` copy is that copy.
pub(crate) fn decode_items<K: DeserializeOwned>(
    body: &Bytes,
    ranges: &[Range<usize>],
    known: Option<&KnownLookup<K>>,
    transform: Option<&TransformFunc<K>>,
) -> Result<Vec<Arc<K>>, ListWatchError> {
    ObjectDecoder::with_local(|decoder| {
        ranges
            .iter()
            .map(|r| {
                let slice = body.get(r.clone()).unwrap_or_default();
                if let Some(copy) = known.and_then(|known| known_copy(slice, known)) {
                    return Ok(copy);
                }
                let obj = decoder
                    .decode::<K>(slice)
                    .map(Arc::new)
                    .map_err(|e| ListWatchError::decode_failed("list item", e))?;
                transformed(obj, transform).map_err(ListWatchError::Transform)
            })
            .collect()
    })
}

#[derive(Deserialize)]
struct EventEnvelope<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    object: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TypeFields<'a> {
    #[serde(default, borrow)]
    kind: Option<&'a str>,
    #[serde(default, borrow)]
    api_version: Option<&'a str>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct BookmarkMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
struct BookmarkObject {
    #[serde(default)]
    metadata: BookmarkMeta,
}

/// What decoding one watch line gave.
#[derive(Debug)]
pub(crate) enum Decoded<K> {
    /// An event to deliver.
    Event(WatchEvent<K>),
    /// An object of another kind than expected: skipped (logged by the caller).
    WrongKind(String),
    /// A blank line.
    Nothing,
}

/// The common line as API servers write it, `{"type":"MODIFIED","object":{...}}`, decoded in one
/// pass: the object is read straight from between the envelope's head and its closing brace,
/// without first finding its end. `None` for any other line (then the general path decides).
fn decode_object_event_in_one_pass<K: DeserializeOwned>(
    line: &[u8],
    decoder: &mut ObjectDecoder,
) -> Option<WatchEvent<K>> {
    type Make<K> = fn(Arc<K>) -> WatchEvent<K>;
    let heads: [(&[u8], Make<K>); 3] = [
        (br#"{"type":"ADDED","object":"#, WatchEvent::Added),
        (br#"{"type":"MODIFIED","object":"#, WatchEvent::Modified),
        (br#"{"type":"DELETED","object":"#, WatchEvent::Deleted),
    ];
    let (object, event) = heads
        .iter()
        .find_map(|(head, event)| Some((line.strip_prefix(*head)?, event)))?;
    let object = object.trim_ascii_end().strip_suffix(b"}")?;
    // Trailing characters (another envelope field) make this fail: the general path takes it.
    decoder
        .decode::<K>(object)
        .ok()
        .map(|obj| event(Arc::new(obj)))
}

/// Decodes one line of a watch stream. `expected_kind` is used only to tell an object of
/// another kind (skipped) from a broken one (an error) when decoding fails.
pub(crate) fn decode_event<K: DeserializeOwned>(
    line: &[u8],
    expected_kind: Option<&str>,
    decoder: &mut ObjectDecoder,
) -> Result<Decoded<K>, ListWatchError> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(Decoded::Nothing);
    }
    if let Some(event) = decode_object_event_in_one_pass(line, decoder) {
        return Ok(Decoded::Event(event));
    }
    let envelope: EventEnvelope<'_> = serde_json::from_slice(line)
        .map_err(|e| ListWatchError::decode_failed("watch event", e))?;
    let object = envelope.object.get();
    let decode_object = || match serde_json::from_str::<K>(object) {
        Ok(obj) => Ok(Arc::new(obj)),
        Err(e) => {
            let types: Option<TypeFields<'_>> = serde_json::from_str(object).ok();
            match (types, expected_kind) {
                (
                    Some(TypeFields {
                        kind: Some(kind),
                        api_version,
                    }),
                    Some(expected),
                ) if kind != expected => Err(Ok(format!(
                    "expected kind {expected}, got {} {kind}",
                    api_version.unwrap_or("")
                ))),
                _ => Err(Err(ListWatchError::decode_failed("watch event object", e))),
            }
        }
    };
    let event = match envelope.kind {
        "ADDED" | "MODIFIED" | "DELETED" => match decode_object() {
            Ok(obj) => match envelope.kind {
                "ADDED" => WatchEvent::Added(obj),
                "MODIFIED" => WatchEvent::Modified(obj),
                _ => WatchEvent::Deleted(obj),
            },
            Err(Ok(reason)) => return Ok(Decoded::WrongKind(reason)),
            Err(Err(e)) => return Err(e),
        },
        "BOOKMARK" => {
            let b: BookmarkObject = serde_json::from_str(object)
                .map_err(|e| ListWatchError::decode_failed("bookmark", e))?;
            WatchEvent::Bookmark(Bookmark {
                resource_version: b.metadata.resource_version.unwrap_or_default(),
                annotations: b.metadata.annotations.unwrap_or_default(),
            })
        }
        "ERROR" => {
            let status: Status = serde_json::from_str(object)
                .map_err(|e| ListWatchError::decode_failed("error event", e))?;
            WatchEvent::Error(status)
        }
        other => {
            return Err(ListWatchError::decode(format!(
                "unknown watch event type {other:?}"
            )));
        }
    };
    Ok(Decoded::Event(event))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    #[test]
    fn watch_lines_decode_to_events() {
        let added = br#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","resourceVersion":"5"}}}"#;
        let Ok(Decoded::Event(WatchEvent::Added(p))) =
            decode_event::<Pod>(added, Some("Pod"), &mut ObjectDecoder::default())
        else {
            panic!()
        };
        assert_eq!(p.metadata.resource_version.as_deref(), Some("5"));
        let bookmark = br#"{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"Pod","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;
        let Ok(Decoded::Event(WatchEvent::Bookmark(b))) =
            decode_event::<Pod>(bookmark, Some("Pod"), &mut ObjectDecoder::default())
        else {
            panic!()
        };
        assert!(b.is_initial_events_end());
        assert_eq!(b.resource_version, "9");
        let error = br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}}"#;
        let Ok(Decoded::Event(WatchEvent::Error(s))) =
            decode_event::<Pod>(error, Some("Pod"), &mut ObjectDecoder::default())
        else {
            panic!()
        };
        assert_eq!(s.code, 410);
    }

    #[test]
    fn object_decoder_gives_what_serde_json_gives() {
        let mut decoder = ObjectDecoder::default();
        for i in 0..50 {
            let json =
                serde_json::to_vec(&kcache_store::testing::pod_json(i, 7, i as u64)).unwrap();
            let expected: Pod = serde_json::from_slice(&json).unwrap();
            assert_eq!(decoder.decode::<Pod>(&json).unwrap(), expected);
        }
        // What simd-json rejects still gets serde_json's answer.
        let huge = br#"{"metadata":{"name":"a","generation":1e400}}"#;
        assert_eq!(
            decoder.decode::<Pod>(huge).unwrap_err().to_string(),
            serde_json::from_slice::<Pod>(huge).unwrap_err().to_string()
        );
    }

    #[test]
    fn watch_lines_in_other_shapes_take_the_general_path() {
        let object =
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","resourceVersion":"5"}}"#;
        let extra_field = format!(r#"{{"type":"MODIFIED","object":{object},"x":1}}"#);
        assert!(matches!(
            decode_event::<Pod>(
                extra_field.as_bytes(),
                Some("Pod"),
                &mut ObjectDecoder::default()
            ),
            Ok(Decoded::Event(WatchEvent::Modified(_)))
        ));
        let object_first = format!(r#"{{ "object": {object}, "type": "DELETED" }}"#);
        assert!(matches!(
            decode_event::<Pod>(
                object_first.as_bytes(),
                Some("Pod"),
                &mut ObjectDecoder::default()
            ),
            Ok(Decoded::Event(WatchEvent::Deleted(_)))
        ));
    }

    #[test]
    fn wrong_kind_is_skipped_and_garbage_is_an_error() {
        let cm = br#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}}"#;
        assert!(matches!(
            decode_event::<Pod>(cm, Some("Pod"), &mut ObjectDecoder::default()),
            Ok(Decoded::WrongKind(_))
        ));
        for bad in [
            &b"{\"type\":"[..],
            b"{\"type\":\"ADDED\",\"object\":{\"spec\":7}}",
            b"[1]",
            b"{\"type\":\"WHAT\",\"object\":{}}",
        ] {
            assert!(matches!(
                decode_event::<Pod>(bad, Some("Pod"), &mut ObjectDecoder::default()),
                Err(ListWatchError::Decode { .. })
            ));
        }
        assert!(matches!(
            decode_event::<Pod>(b"  \n", None, &mut ObjectDecoder::default()),
            Ok(Decoded::Nothing)
        ));
    }
}
