//! `[]byte` fields (a Secret's `data`, a ConfigMap's `binaryData`): JSON carries them as
//! standard base64, and Go's decoder refuses a value that is not with
//! `illegal base64 data at input byte N`. The base64 crate decodes; the offset Go reports
//! (its `decodeQuantum`, which skips `\r` and `\n` and wants padding) is computed here.

use serde_json::Value;

/// Where Go's `base64.StdEncoding.DecodeString` fails on `text` (None: it decodes).
fn go_error_offset(text: &str) -> Option<usize> {
    let src = text.as_bytes();
    let newline = |b: u8| b == b'\n' || b == b'\r';
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    let mut si = 0;
    loop {
        let mut j = 0;
        while j < 4 {
            let Some(&c) = src.get(si) else {
                return (j != 0).then_some(si - j);
            };
            si += 1;
            if alphabet(c) {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' || j < 2 {
                return Some(si - 1);
            }
            if j == 2 {
                while src.get(si).copied().is_some_and(newline) {
                    si += 1;
                }
                match src.get(si) {
                    None => return Some(src.len()),
                    Some(b'=') => si += 1,
                    Some(_) => return Some(si - 1),
                }
            }
            while src.get(si).copied().is_some_and(newline) {
                si += 1;
            }
            return (si < src.len()).then_some(si);
        }
    }
}

/// The error Go's decoder gives a map of `[]byte` values at `field` of `data`, if any.
pub(crate) fn byte_map_error(data: &Value, field: &str) -> Option<String> {
    let map = data.get(field)?.as_object()?;
    map.values().filter_map(Value::as_str).find_map(|text| {
        let offset = go_error_offset(text)?;
        Some(format!("illegal base64 data at input byte {offset}"))
    })
}

/// Decodes what [`go_error_offset`] accepts (for the tests: the two agree).
#[cfg(test)]
fn decodes(text: &str) -> bool {
    use base64::Engine as _;
    let clean: String = text.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    base64::engine::general_purpose::STANDARD
        .decode(clean)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cases of Go's `encoding/base64` TestDecodeCorrupt (StdEncoding).
    #[test]
    fn offsets_are_those_of_go_decode_corrupt() {
        for (text, offset) in [
            ("", None),
            ("\n", None),
            ("AAA=", None),
            ("AA==", None),
            ("AAAA\n", None),
            ("!!!!", Some(0)),
            ("====", Some(0)),
            ("x===", Some(1)),
            ("=AAA", Some(0)),
            ("A=AA", Some(1)),
            ("AA=A", Some(2)),
            ("AA==A", Some(4)),
            ("AAA=AAAA", Some(4)),
            ("AAAAA", Some(4)),
            ("AAAAAA", Some(4)),
            ("A=", Some(1)),
            ("A==", Some(1)),
            ("AA=", Some(3)),
            ("AA==\n", None),
            ("AAAA=", Some(4)),
            ("AAA\n=", None),
            ("not base64!", Some(3)),
        ] {
            assert_eq!(go_error_offset(text), offset, "{text:?}");
            assert_eq!(decodes(text), offset.is_none(), "{text:?}");
        }
    }
}
