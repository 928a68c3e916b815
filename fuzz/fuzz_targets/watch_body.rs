//! Watch bodies as a server may send them, in chunks of any size: events, skipped objects or a
//! typed error, never a panic, and the same events whatever the chunks (the body read in one
//! piece is the reference). The first byte picks the chunk size, the second the line bound.
#![no_main]

use k8s_openapi::api::core::v1::Pod;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let [chunk, max_line, body @ ..] = data else {
        return;
    };
    let chunk = usize::from(*chunk) + 1;
    let max_line = usize::from(*max_line) * 64 + 1;
    let decode = |chunk| {
        kcache_reflector::fuzzing::watch_body::<Pod>(body, chunk, max_line, Some("Pod"))
    };
    assert_eq!(
        decode(chunk),
        decode(body.len().max(1)),
        "chunks of {chunk} bytes"
    );
});
