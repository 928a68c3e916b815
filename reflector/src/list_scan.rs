//! [`ListScanner`]: finds the items of a list body while its bytes arrive, so that items can be
//! decoded on other threads while the rest of the body is still on the wire.
//!
//! It follows only the JSON structure (strings, nesting, the top-level `items` key); the items
//! themselves are decoded later, where any malformed JSON is reported. Everything outside the
//! `items` array (kind, apiVersion, metadata) is kept as a small envelope, parsed at the end.

use std::ops::Range;

use bytes::{Bytes, BytesMut};

use crate::decode::{ListMeta, decode_list_meta};
use crate::lister_watcher::ListWatchError;

/// Bytes of complete items gathered before they are handed out as one batch to decode.
const BATCH_BYTES: usize = 256 * 1024;

/// Complete items of a list body: `body` holds them, each range is one item's JSON.
#[derive(Debug)]
pub(crate) struct ItemBatch {
    pub(crate) body: Bytes,
    pub(crate) items: Vec<Range<usize>>,
}

/// Where the scanner is in the body's top-level object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Phase {
    /// Before the `items` array: bytes stay in the buffer (a key may straddle two chunks).
    #[default]
    Head,
    /// Inside the `items` array.
    Items,
    /// After the `items` array: bytes go to the envelope.
    Tail,
}

/// An incremental splitter of a list body into item batches; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct ListScanner {
    /// Bytes received and not yet handed out.
    buf: BytesMut,
    /// How far `buf` has been scanned.
    scanned: usize,
    phase: Phase,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// In the head, at depth 1: the next string is a key.
    expect_key: bool,
    /// Where the current depth-1 key starts in `buf` (after its quote).
    key_start: usize,
    /// The last depth-1 key was `items` and its value has not started yet.
    items_key: bool,
    /// Start of the current item in `buf`, in the items phase.
    item_start: usize,
    /// Complete items in `buf` not yet handed out.
    items: Vec<Range<usize>>,
    envelope: Vec<u8>,
}

fn malformed(what: &str) -> ListWatchError {
    ListWatchError::decode(format!("list body: {what}"))
}

impl ListScanner {
    /// Takes the next bytes of the body; pushes every batch that became full onto `out`.
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        out: &mut Vec<ItemBatch>,
    ) -> Result<(), ListWatchError> {
        if self.phase == Phase::Tail {
            self.envelope.extend_from_slice(chunk);
            return Ok(());
        }
        self.buf.extend_from_slice(chunk);
        while self.scanned < self.buf.len() {
            if self.in_string {
                self.skip_string();
                continue;
            }
            let i = self.scanned;
            let byte = self.buf.get(i).copied().unwrap_or_default();
            self.scanned += 1;
            match byte {
                b'"' => {
                    self.in_string = true;
                    if self.phase == Phase::Head && self.depth == 1 && self.expect_key {
                        self.key_start = i + 1;
                    }
                }
                b'[' if self.depth == 0 => return Err(malformed("not a JSON object")),
                b'{' | b'[' => {
                    if self.phase == Phase::Head && self.depth == 1 {
                        if byte == b'[' && self.items_key {
                            self.start_items(i);
                            continue;
                        }
                        self.items_key = false;
                    }
                    self.depth += 1;
                    if self.depth == 1 {
                        self.expect_key = true;
                    }
                }
                b'}' | b']' => {
                    if self.depth == 0 {
                        return Err(malformed("unbalanced brackets"));
                    }
                    self.depth -= 1;
                    if self.phase == Phase::Items && self.depth == 1 {
                        self.end_item(i);
                        self.end_items(i, out);
                        return Ok(());
                    }
                }
                b',' => match (self.phase, self.depth) {
                    (Phase::Head, 1) => {
                        self.expect_key = true;
                        self.items_key = false;
                    }
                    (Phase::Items, 2) => {
                        self.end_item(i);
                        self.item_start = i + 1;
                        if self.batch_bytes() >= BATCH_BYTES {
                            out.push(self.take_batch());
                        }
                    }
                    _ => {}
                },
                b':' if self.phase == Phase::Head && self.depth == 1 => self.expect_key = false,
                b' ' | b'\t' | b'\r' | b'\n' => {}
                _ => {
                    if self.phase == Phase::Head && self.depth == 1 {
                        self.items_key = false;
                    }
                }
            }
        }
        Ok(())
    }

    /// The list's metadata, once the whole body was fed (the closing of the `items` array
    /// already handed out the last batch).
    pub(crate) fn finish(mut self) -> Result<ListMeta, ListWatchError> {
        // The envelope's own parse below checks the rest of the structure.
        if self.phase == Phase::Items {
            return Err(malformed("the body ended inside the items"));
        }
        if self.phase == Phase::Head {
            self.envelope.extend_from_slice(&self.buf);
        }
        decode_list_meta(&self.envelope)
    }

    /// Moves past the rest of a string (or to the end of the buffer).
    fn skip_string(&mut self) {
        let rest = self.buf.get(self.scanned..).unwrap_or_default();
        if self.escaped {
            self.escaped = false;
            self.scanned += 1;
            return;
        }
        match memchr::memchr2(b'"', b'\\', rest) {
            None => self.scanned = self.buf.len(),
            Some(at) => {
                let i = self.scanned + at;
                self.scanned = i + 1;
                if rest.get(at) == Some(&b'\\') {
                    self.escaped = true;
                } else {
                    self.in_string = false;
                    if self.phase == Phase::Head && self.depth == 1 && self.expect_key {
                        self.items_key = self.buf.get(self.key_start..i) == Some(b"items");
                    }
                }
            }
        }
    }

    /// The `items` array opens at `at`: the head goes to the envelope.
    fn start_items(&mut self, at: usize) {
        let head = self.buf.split_to(at + 1);
        self.envelope.extend_from_slice(&head);
        self.scanned -= at + 1;
        self.phase = Phase::Items;
        self.depth = 2;
        self.item_start = 0;
    }

    /// An item (or nothing, for `[]`) ends at `at`.
    fn end_item(&mut self, at: usize) {
        let bytes = self.buf.get(self.item_start..at).unwrap_or_default();
        if bytes.iter().any(|b| !b.is_ascii_whitespace()) {
            self.items.push(self.item_start..at);
        }
    }

    /// The `items` array closes at `at`: the last items become a batch, the rest is envelope.
    fn end_items(&mut self, mut at: usize, out: &mut Vec<ItemBatch>) {
        if let Some(last) = self.items.last() {
            at -= last.end;
            out.push(self.take_batch());
        }
        self.envelope
            .extend_from_slice(self.buf.get(at..).unwrap_or_default());
        self.buf.clear();
        self.scanned = 0;
        self.phase = Phase::Tail;
    }

    fn batch_bytes(&self) -> usize {
        match (self.items.first(), self.items.last()) {
            (Some(first), Some(last)) => last.end - first.start,
            _ => 0,
        }
    }

    /// Hands out the complete items gathered so far; `buf` keeps what follows them.
    fn take_batch(&mut self) -> ItemBatch {
        let end = self.items.last().map_or(0, |r| r.end);
        let body = self.buf.split_to(end).freeze();
        self.scanned -= end;
        self.item_start -= end.min(self.item_start);
        ItemBatch {
            body,
            items: std::mem::take(&mut self.items),
        }
    }
}

/// The whole decoding of a list body, synchronously: [`crate::fuzzing::list_body`].
#[cfg(feature = "fuzzing")]
pub(crate) fn decode_list_body<K: serde::de::DeserializeOwned>(
    body: &[u8],
    chunk: usize,
) -> Option<usize> {
    let mut scanner = ListScanner::default();
    let mut batches = Vec::new();
    for part in body.chunks(chunk.max(1)) {
        scanner.feed(part, &mut batches).ok()?;
    }
    scanner.finish().ok()?;
    let mut items = 0;
    for batch in batches {
        items += crate::decode::decode_items::<K>(&batch.body, &batch.items, None, None)
            .ok()?
            .len();
    }
    Some(items)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    /// Feeds `body` in chunks of `chunk` bytes; returns the items (as JSON values) and metadata.
    fn scan(body: &[u8], chunk: usize) -> Result<(Vec<Value>, ListMeta), ListWatchError> {
        let mut scanner = ListScanner::default();
        let mut batches = Vec::new();
        for part in body.chunks(chunk.max(1)) {
            scanner.feed(part, &mut batches)?;
        }
        let meta = scanner.finish()?;
        let items = batches
            .iter()
            .flat_map(|b| {
                b.items
                    .iter()
                    .map(|r| serde_json::from_slice(&b.body[r.clone()]).unwrap())
            })
            .collect();
        Ok((items, meta))
    }

    #[test]
    fn list_body_is_split_into_items_and_metadata_in_any_key_order() {
        let items = json!([
            {"metadata": {"name": "a\"]},{"}, "items": [1, 2]},
            {"metadata": {"name": "b\\"}, "spec": {"x": [[], {}]}},
        ]);
        let head = json!({"kind": "PodList", "metadata": {"resourceVersion": "12", "continue": "c"}, "items": items});
        let (got, meta) = scan(head.to_string().as_bytes(), 7).unwrap();
        assert_eq!(Value::Array(got), items);
        assert_eq!(meta.resource_version.as_deref(), Some("12"));
        assert_eq!(meta.continue_token.as_deref(), Some("c"));
        let tail = format!(
            "{{\n  \"items\" : {},\n  \"metadata\": {{\"resourceVersion\": \"9\", \"remainingItemCount\": 4}}\n}}",
            serde_json::to_string_pretty(&items).unwrap()
        );
        let (got, meta) = scan(tail.as_bytes(), 3).unwrap();
        assert_eq!(Value::Array(got), items);
        assert_eq!(meta.resource_version.as_deref(), Some("9"));
        assert_eq!(meta.remaining_item_count, Some(4));
    }

    #[test]
    fn empty_and_null_item_lists_give_no_items() {
        for body in [
            r#"{"metadata":{"resourceVersion":"3"},"items":[]}"#,
            r#"{"metadata":{"resourceVersion":"3"},"items":null}"#,
            r#"{"metadata":{"resourceVersion":"3"}}"#,
            r#"{"items": [ ], "metadata":{"resourceVersion":"3"}}"#,
        ] {
            let (items, meta) = scan(body.as_bytes(), 5).unwrap();
            assert!(items.is_empty(), "{body}");
            assert_eq!(meta.resource_version.as_deref(), Some("3"), "{body}");
        }
    }

    #[test]
    fn malformed_list_bodies_are_errors() {
        for body in [
            &br#"{"metadata":{},"items":[{"a":1}"#[..],
            br#"{"metadata":{}}}"#,
            br#"{"metadata":{"resourceVersion":"#,
            br#"not json"#,
            br#"[{"a":1}]"#,
        ] {
            assert!(
                matches!(scan(body, 4), Err(ListWatchError::Decode { .. })),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn big_lists_are_handed_out_in_several_batches() {
        let item = json!({"metadata": {"name": "x".repeat(1000)}});
        let body = json!({"metadata": {}, "items": vec![item; 1000]}).to_string();
        let mut scanner = ListScanner::default();
        let mut batches = Vec::new();
        scanner.feed(body.as_bytes(), &mut batches).unwrap();
        scanner.finish().unwrap();
        assert!(batches.len() >= 3);
        let total: usize = batches.iter().map(|b| b.items.len()).sum();
        assert_eq!(total, 1000);
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            "[\\PC\"\\\\{}\\[\\],:]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\"\\[\\]{}]{0,5}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_list_body_in_any_chunks_gives_serdes_items(
            items in prop::collection::vec(json_value(), 0..8),
            chunk in 1usize..64,
            pretty in any::<bool>(),
        ) {
            let body = json!({"kind": "List", "metadata": {"resourceVersion": "5"}, "items": items});
            let text = if pretty { serde_json::to_string_pretty(&body).unwrap() } else { body.to_string() };
            let (got, meta) = scan(text.as_bytes(), chunk).unwrap();
            prop_assert_eq!(got, items);
            prop_assert_eq!(meta.resource_version.as_deref(), Some("5"));
        }
    }
}
