//! Request bodies as clients send them to the API server's writes: its strict JSON decoder
//! (which also reports duplicate fields) decodes or refuses, never panics, and agrees with
//! serde_json, the reference: the same bodies accepted, the same value (the last of duplicate
//! fields wins, as in Go), and a decoded value re-encoded reads back the same with no duplicates.
#![no_main]

libfuzzer_sys::fuzz_target!(|body: &[u8]| {
    let strict = kcache_apiserver::fuzzing::request_body(body);
    let reference = serde_json::from_slice::<serde_json::Value>(body);
    match (strict, reference) {
        (Ok((value, _duplicates)), Ok(expected)) => {
            assert_eq!(value, expected);
            let encoded = serde_json::to_vec(&value).expect("a Value always encodes");
            let (again, duplicates) = kcache_apiserver::fuzzing::request_body(&encoded)
                .expect("an encoded value decodes");
            assert_eq!(again, value);
            assert!(duplicates.is_empty(), "{duplicates:?} in {encoded:?}");
        }
        (Err(_), Err(_)) => {}
        (strict, reference) => panic!(
            "the strict decoder answered {:?}, serde_json {:?}",
            strict.map(|(v, _)| v),
            reference
        ),
    }
});
