//! Label selectors as clients send them: parsed or a `SelectorError`, never a panic; and a
//! parsed selector prints (kube-core's `Display`, what kcache sends to a server) as a string
//! that parses back to the same selector.
#![no_main]

libfuzzer_sys::fuzz_target!(|selector: &str| {
    if let Ok(parsed) = kcache_store::parse_label_selector(selector) {
        let printed = parsed.to_string();
        let reparsed = kcache_store::parse_label_selector(&printed)
            .unwrap_or_else(|e| panic!("{selector:?} printed as {printed:?}, which fails: {e}"));
        assert_eq!(reparsed, parsed, "{selector:?} printed as {printed:?}");
    }
});
