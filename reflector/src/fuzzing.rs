//! Entry points for `cargo fuzz` (the `fuzzing` feature): the decoders of bodies the server
//! sends, reachable without a connection. Hidden and not a stable API; see `fuzz/` at the
//! repository root.

use serde::de::DeserializeOwned;

/// Feeds `body` to the watch-line splitter in chunks of `chunk` bytes (bounding lines at
/// `max_line`) and decodes every line as an event on `K` (objects of another kind than
/// `expected_kind` are skipped), as a watch does. Returns how many events were decoded before
/// the first error, if any. Must never panic.
pub fn watch_body<K: DeserializeOwned>(
    body: &[u8],
    chunk: usize,
    max_line: usize,
    expected_kind: Option<&str>,
) -> usize {
    crate::kube::decode_watch_body::<K>(body, chunk, max_line, expected_kind)
}

/// Feeds `body` to the list-page scanner in chunks of `chunk` bytes and decodes its items as
/// `K` and its metadata, as a list does. Returns the number of items, or `None` for an error.
/// Must never panic.
pub fn list_body<K: DeserializeOwned>(body: &[u8], chunk: usize) -> Option<usize> {
    crate::list_scan::decode_list_body::<K>(body, chunk)
}
