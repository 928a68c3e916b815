//! Continue tokens as clients send them to the API server: decoded or a 400, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|token: &str| {
    if let Err(e) = kcache_apiserver::fuzzing::continue_token(token) {
        assert_eq!(e.code, 400, "{token:?}: {e}");
    }
});
