//! Resource versions: the one parser of the numbers clients, objects and the reflector carry.
//!
//! A resource version is what Go's `strconv.ParseUint(rv, 10, 64)` accepts: one or more ASCII
//! digits, no sign, within `u64`. Callers choose the status a bad one gets (it differs between
//! a get, a watch, a precondition and an update's body, as in Kubernetes).

use std::fmt;

/// Why a resource version is not a number; displayed as Kubernetes words the field error
/// (`Invalid value: "x": strconv.ParseUint: parsing "x": invalid syntax`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InvalidResourceVersion {
    value: String,
    out_of_range: bool,
}

impl fmt::Display for InvalidResourceVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let quoted = serde_json::to_string(&self.value).unwrap_or_default();
        let why = if self.out_of_range {
            "value out of range"
        } else {
            "invalid syntax"
        };
        write!(
            f,
            "Invalid value: {quoted}: strconv.ParseUint: parsing {quoted}: {why}"
        )
    }
}

impl std::error::Error for InvalidResourceVersion {}

/// Parses a resource version.
pub(crate) fn parse(rv: &str) -> Result<u64, InvalidResourceVersion> {
    let invalid = |out_of_range| InvalidResourceVersion {
        value: rv.to_owned(),
        out_of_range,
    };
    if rv.is_empty() || !rv.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(false));
    }
    rv.parse().map_err(|_| invalid(true))
}

/// The `resourceVersion` of a request: `None` when absent or empty.
pub(crate) fn parse_optional(rv: Option<&str>) -> Result<Option<u64>, InvalidResourceVersion> {
    rv.filter(|rv| !rv.is_empty()).map(parse).transpose()
}

/// A resource version this server wrote (an object's, a reflector's): 0 when it is not one.
pub(crate) fn parse_or_zero(rv: &str) -> u64 {
    parse(rv).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_digits_within_u64_are_resource_versions() {
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("42"), Ok(42));
        assert_eq!(parse("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn signs_spaces_fractions_and_empty_strings_are_invalid_syntax_as_in_go() {
        for rv in ["", "+1", "-1", " 1", "1.5", "abc", "1_000"] {
            let err = parse(rv).unwrap_err();
            assert!(err.to_string().ends_with(": invalid syntax"), "{rv}: {err}");
        }
    }

    #[test]
    fn an_overflowing_resource_version_is_out_of_range_in_the_kubernetes_wording() {
        assert_eq!(
            parse("18446744073709551616").unwrap_err().to_string(),
            "Invalid value: \"18446744073709551616\": strconv.ParseUint: parsing \"18446744073709551616\": value out of range"
        );
    }

    #[test]
    fn an_absent_or_empty_request_resource_version_is_none() {
        assert_eq!(parse_optional(None), Ok(None));
        assert_eq!(parse_optional(Some("")), Ok(None));
        assert_eq!(parse_optional(Some("7")), Ok(Some(7)));
        assert!(parse_optional(Some("x")).is_err());
    }

    #[test]
    fn a_resource_version_that_is_not_a_number_counts_as_zero_where_the_server_wrote_it() {
        assert_eq!(parse_or_zero("12"), 12);
        assert_eq!(parse_or_zero(""), 0);
        assert_eq!(parse_or_zero("x"), 0);
    }
}
