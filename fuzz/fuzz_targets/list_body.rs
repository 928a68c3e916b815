//! List bodies as a server may send them, in chunks of any size: items or a typed error, never
//! a panic, and the same answer whatever the chunks (the body read in one piece is the
//! reference). The first byte picks the chunk size.
#![no_main]

use k8s_openapi::api::core::v1::Pod;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let [chunk, body @ ..] = data else {
        return;
    };
    let chunked = kcache_reflector::fuzzing::list_body::<Pod>(body, usize::from(*chunk) + 1);
    let whole = kcache_reflector::fuzzing::list_body::<Pod>(body, body.len().max(1));
    assert_eq!(chunked, whole, "chunks of {} bytes", usize::from(*chunk) + 1);
});
