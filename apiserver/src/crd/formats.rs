//! The string checks of a custom object's schema beyond types and bounds: `pattern` (Go's RE2
//! syntax, which the `regex` crate follows closely) and the `format`s Kubernetes' OpenAPI
//! validator checks (kube-openapi's `strfmt.Default` registry).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use base64::Engine;
use parking_lot::RwLock;
use regex::Regex;

/// Compiled patterns, by their source: a schema's patterns compile once, not on every write.
/// Cleared when it grows past `PATTERN_CACHE` (CRDs come and go).
static PATTERNS: LazyLock<RwLock<HashMap<String, Option<Regex>>>> =
    LazyLock::new(|| RwLock::new(HashMap::new()));
const PATTERN_CACHE: usize = 4096;

/// Whether `value` matches `pattern` (unanchored, as Go's `regexp.MatchString`); `None` when the
/// pattern does not compile (a CRD with such a pattern is refused, so only for stored ones).
pub(crate) fn matches(pattern: &str, value: &str) -> Option<bool> {
    if let Some(compiled) = PATTERNS.read().get(pattern) {
        return compiled.as_ref().map(|re| re.is_match(value));
    }
    let compiled = Regex::new(pattern).ok();
    let result = compiled.as_ref().map(|re| re.is_match(value));
    let mut cache = PATTERNS.write();
    if cache.len() >= PATTERN_CACHE {
        cache.clear();
    }
    cache.insert(pattern.to_owned(), compiled);
    result
}

/// Why `pattern` is not a valid regular expression, if it is not.
pub(crate) fn pattern_error(pattern: &str) -> Option<String> {
    Regex::new(pattern).err().map(|e| match e {
        regex::Error::Syntax(text) => text.lines().last().unwrap_or_default().to_owned(),
        other => other.to_string(),
    })
}

/// A constant regex of this file (each covered by a test; one that failed would match nothing).
fn re(source: &str) -> Option<Regex> {
    Regex::new(source).ok()
}

/// Whether the constant regex `re` matches `s`.
fn fits(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|re| re.is_match(s))
}

/// The captures of the constant regex `re` in `s`.
fn captures<'s>(re: &LazyLock<Option<Regex>>, s: &'s str) -> Option<regex::Captures<'s>> {
    re.as_ref().and_then(|re| re.captures(s))
}

static HOSTNAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static EMAIL: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"^[^@\s]+@[a-zA-Z0-9.-]+$|^[^<>]*<[^@\s]+@[a-zA-Z0-9.-]+>$"));
static UUID: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID_V: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?([345])[0-9a-f]{3}-?([0-9a-f])[0-9a-f]{3}-?[0-9a-f]{12}$")
});
static MAC: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$|^([0-9A-Fa-f]{2}[:-]){7}([0-9A-Fa-f]{2})$|^([0-9A-Fa-f]{2}[:-]){19}([0-9A-Fa-f]{2})$|^([0-9A-Fa-f]{4}\.){2}([0-9A-Fa-f]{4})$",
    )
});
static DATE: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"^(\d{4})-(\d{2})-(\d{2})$"));
static DATE_TIME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$")
});
static DURATION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"^(?:[-+]?\d+(?:\.\d+)?\s*(?:ns|us|µs|ms|s|m|h|d|w|hr|hrs|hours?|min|mins|minutes?|sec|secs|seconds?|days?|weeks?|millis|milliseconds?|nanos|nanoseconds?|micros|microseconds?))+$",
    )
});
static HEX_COLOR: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGB_COLOR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
    )
});
static SSN: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static BSON_OBJECT_ID: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"^[0-9a-fA-F]{24}$"));

fn days_in(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A calendar date from the three captured groups of `DATE`/`DATE_TIME`.
fn valid_date(caps: &regex::Captures<'_>) -> bool {
    let n = |i: usize| caps.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
    matches!((n(1), n(2), n(3)), (Some(y), Some(m @ 1..=12), Some(d)) if d >= 1 && d <= days_in(y, m))
}

fn valid_date_time(s: &str) -> bool {
    let Some(caps) = captures(&DATE_TIME, s) else {
        return false;
    };
    let n = |i: usize| caps.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
    valid_date(&caps)
        && matches!(
            (n(4), n(5), n(6)),
            (Some(0..=23), Some(0..=59), Some(0..=60))
        )
}

fn valid_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => bits <= 32,
        Ok(IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// Luhn's checksum over the digits of `s` (spaces and dashes ignored).
fn valid_credit_card(s: &str) -> bool {
    let digits: Vec<u32> = s
        .chars()
        .filter(|c| *c != ' ' && *c != '-')
        .map(|c| c.to_digit(10))
        .collect::<Option<_>>()
        .unwrap_or_default();
    if !(12..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| match (i % 2 == 1, d * 2) {
            (true, x) if x > 9 => x - 9,
            (true, x) => x,
            (false, _) => d,
        })
        .sum();
    sum.is_multiple_of(10)
}

fn valid_isbn10(s: &str) -> bool {
    let chars: Vec<char> = s.chars().filter(|c| *c != ' ' && *c != '-').collect();
    if chars.len() != 10 {
        return false;
    }
    let mut sum = 0;
    for (i, c) in chars.iter().enumerate() {
        let v = match (c.to_digit(10), i, c) {
            (Some(d), _, _) => d,
            (None, 9, 'X' | 'x') => 10,
            _ => return false,
        };
        sum += v * (10 - i as u32);
    }
    sum.is_multiple_of(11)
}

fn valid_isbn13(s: &str) -> bool {
    let digits: Option<Vec<u32>> = s
        .chars()
        .filter(|c| *c != ' ' && *c != '-')
        .map(|c| c.to_digit(10))
        .collect();
    let Some(digits) = digits.filter(|d| d.len() == 13) else {
        return false;
    };
    let sum: u32 = digits
        .iter()
        .enumerate()
        .map(|(i, d)| if i % 2 == 1 { d * 3 } else { *d })
        .sum();
    sum.is_multiple_of(10)
}

fn valid_uri(s: &str) -> bool {
    // Go's url.ParseRequestURI: an absolute URI or an absolute path, no fragment-only text.
    !s.is_empty()
        && !s.contains(char::is_whitespace)
        && (s.starts_with('/')
            || s.split_once(':').is_some_and(|(scheme, _)| {
                scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                    && scheme
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            }))
}

/// Whether `value` is valid for `format`; `None` for a format no check is known for (any
/// value passes, as Kubernetes).
pub(crate) fn valid(format: &str, value: &str) -> Option<bool> {
    let ok = match format {
        "bsonobjectid" => fits(&BSON_OBJECT_ID, value),
        "uri" => valid_uri(value),
        "email" => fits(&EMAIL, value),
        "hostname" => value.len() <= 255 && fits(&HOSTNAME, value),
        "ipv4" => value.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => value.parse::<Ipv6Addr>().is_ok(),
        "cidr" => valid_cidr(value),
        "mac" => fits(&MAC, value),
        "uuid" => fits(&UUID, value),
        "uuid3" | "uuid4" | "uuid5" => captures(&UUID_V, value).is_some_and(|c| {
            let version = &format[4..];
            let variant_ok = c
                .get(2)
                .is_some_and(|m| matches!(m.as_str(), "8" | "9" | "a" | "b" | "A" | "B"));
            c.get(1).is_some_and(|m| m.as_str() == version) && (version == "3" || variant_ok)
        }),
        "isbn" => valid_isbn10(value) || valid_isbn13(value),
        "isbn10" => valid_isbn10(value),
        "isbn13" => valid_isbn13(value),
        "creditcard" => valid_credit_card(value),
        "ssn" => fits(&SSN, value),
        "hexcolor" => fits(&HEX_COLOR, value),
        "rgbcolor" => fits(&RGB_COLOR, value),
        "byte" => base64::engine::general_purpose::STANDARD
            .decode(value)
            .is_ok(),
        "date" => captures(&DATE, value).is_some_and(|c| valid_date(&c)),
        "date-time" | "datetime" => valid_date_time(value),
        "duration" => fits(&DURATION, value),
        _ => return None,
    };
    Some(ok)
}

#[cfg(test)]
mod tests {
    use super::{matches, pattern_error, valid};

    #[test]
    fn every_format_regex_compiles_and_checks() {
        let cases = [
            ("bsonobjectid", "507f1f77bcf86cd799439011", "507f"),
            ("uri", "https://example.com/x", "not a uri"),
            ("email", "a@example.com", "a.example.com"),
            ("hostname", "example.com", "-bad-.com"),
            ("ipv4", "10.0.0.1", "10.0.0.256"),
            ("ipv6", "::1", "1::2::3"),
            ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
            ("mac", "01:23:45:67:89:ab", "01:23:45"),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
            (
                "uuid4",
                "123e4567-e89b-42d3-a456-426614174000",
                "123e4567-e89b-12d3-a456-426614174000",
            ),
            ("isbn10", "0306406152", "0306406153"),
            ("isbn13", "9780306406157", "9780306406158"),
            ("creditcard", "4111 1111 1111 1111", "4111 1111 1111 1112"),
            ("ssn", "123-45-6789", "123-456-789"),
            ("hexcolor", "#ffaa00", "#ffaa0"),
            ("rgbcolor", "rgb(1, 2, 255)", "rgb(1, 2, 256)"),
            ("byte", "aGVsbG8=", "hello!"),
            ("date", "2024-02-29", "2023-02-29"),
            ("date-time", "2024-02-29T10:11:12Z", "2024-02-29T25:11:12Z"),
            ("duration", "3h2m", "three hours"),
        ];
        for (format, good, bad) in cases {
            assert_eq!(valid(format, good), Some(true), "{format} {good}");
            assert_eq!(valid(format, bad), Some(false), "{format} {bad}");
        }
        assert_eq!(valid("int-or-nonsense", "x"), None);
    }

    #[test]
    fn patterns_match_unanchored_and_bad_ones_are_reported() {
        assert_eq!(matches("^[a-z]+$", "abc"), Some(true));
        assert_eq!(matches("b", "abc"), Some(true));
        assert_eq!(matches("^[a-z]+$", "ab1"), Some(false));
        assert_eq!(matches("(", "x"), None);
        assert!(pattern_error("(").is_some());
        assert!(pattern_error("^a$").is_none());
    }
}
