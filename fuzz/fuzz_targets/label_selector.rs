//! Label selectors as clients send them: parsed or a `SelectorError`, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|selector: &str| {
    let _ = kcache_store::parse_label_selector(selector);
});
