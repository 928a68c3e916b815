//! List bodies as a server may send them, in chunks of any size: items or a typed error, never
//! a panic. The first byte picks the chunk size.
#![no_main]

use k8s_openapi::api::core::v1::Pod;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let [chunk, body @ ..] = data else {
        return;
    };
    kcache_reflector::fuzzing::list_body::<Pod>(body, usize::from(*chunk) + 1);
});
