//! Field selectors as clients send them to the API server: parsed or a 400, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|selector: &str| {
    if let Err(e) = kcache_apiserver::fuzzing::field_selector(selector) {
        assert_eq!(e.code, 400, "{selector:?}: {e}");
    }
});
