//! CronJob schedules and time zones (`validateScheduleFormat` and `validateTimeZone` in
//! `pkg/apis/batch/validation/validation.go`).
//!
//! Kubernetes parses a schedule with `cron.ParseStandard` of `github.com/robfig/cron/v3` and
//! puts the parser's error text in the field error, so the parser is written here with
//! robfig's grammar and words (five fields of minute, hour, day of month, month and day of
//! week; `*`/`?`, numbers, `jan`–`dec` and `sun`–`sat`, ranges, steps and lists; the
//! `@yearly`... descriptors and `@every <Go duration>`): no Rust crate answers with those
//! texts. Time zone names are looked up in chrono-tz's copy of the IANA database (Go's
//! `time.LoadLocation`).

use std::str::FromStr;

use super::field::go_string;

/// A field's bounds and names.
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [&'static str],
    /// The value of `names[0]`.
    first_name: u64,
}

impl Bounds {
    /// A field of numbers only.
    const fn numbers(min: u64, max: u64) -> Self {
        Bounds {
            min,
            max,
            names: &[],
            first_name: 0,
        }
    }
}

const MINUTES: Bounds = Bounds::numbers(0, 59);
const HOURS: Bounds = Bounds::numbers(0, 23);
const DOM: Bounds = Bounds::numbers(1, 31);
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
    first_name: 1,
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
    first_name: 0,
};

const DESCRIPTORS: &[&str] = &[
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];

/// Go's `strconv.Atoi` error text.
fn atoi(text: &str) -> Result<i64, String> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            go_string(text)
        ));
    }
    text.parse::<i64>().map_err(|_| {
        format!(
            "strconv.Atoi: parsing {}: value out of range",
            go_string(text)
        )
    })
}

/// robfig's `mustParseInt`.
fn parse_int(expr: &str) -> Result<u64, String> {
    let n = atoi(expr).map_err(|e| format!("failed to parse int from {expr}: {e}"))?;
    u64::try_from(n).map_err(|_| format!("negative number ({n}) not allowed: {expr}"))
}

fn parse_int_or_name(expr: &str, bounds: &Bounds) -> Result<u64, String> {
    let lower = expr.to_lowercase();
    match bounds.names.iter().position(|n| *n == lower) {
        Some(i) => Ok(bounds.first_name + i as u64),
        None => parse_int(expr),
    }
}

/// robfig's `getRange`: `*`, `?`, `n`, `a-b`, each optionally `/step`.
fn range(expr: &str, bounds: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (bounds.min, bounds.max)
    } else {
        let start = parse_int_or_name(low_and_high[0], bounds)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], bounds)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        (start, end)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = parse_int(range_and_step[1])?;
            if low_and_high.len() == 1 {
                end = bounds.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < bounds.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            bounds.min
        ));
    }
    if end > bounds.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            bounds.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

/// Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`.
fn parse_duration(text: &str) -> Result<(), String> {
    let invalid = || format!("time: invalid duration {}", go_string(text));
    let mut s = text.strip_prefix(['+', '-']).unwrap_or(text);
    if s == "0" {
        return Ok(());
    }
    if s.is_empty() {
        return Err(invalid());
    }
    while !s.is_empty() {
        if !s.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        let whole = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        s = &s[whole..];
        let mut fraction = 0;
        if let Some(rest) = s.strip_prefix('.') {
            fraction = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            s = &rest[fraction..];
        }
        if whole == 0 && fraction == 0 {
            return Err(invalid());
        }
        let unit_len = s
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        let unit = &s[..unit_len];
        if unit.is_empty() {
            return Err(format!(
                "time: missing unit in duration {}",
                go_string(text)
            ));
        }
        if !["ns", "us", "\u{b5}s", "\u{3bc}s", "ms", "s", "m", "h"].contains(&unit) {
            return Err(format!(
                "time: unknown unit {} in duration {}",
                go_string(unit),
                go_string(text)
            ));
        }
        s = &s[unit_len..];
    }
    Ok(())
}

/// Go's `time.LoadLocation` of a zone name (`""` and `UTC` are UTC, `Local` the local zone).
fn load_location(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "UTC" || name == "Local" || chrono_tz::Tz::from_str(name).is_ok()
    {
        return Ok(());
    }
    Err(format!("unknown time zone {name}"))
}

/// `cron.ParseStandard(schedule)`'s error, None when the schedule parses.
pub(crate) fn schedule_error(schedule: &str) -> Option<String> {
    let mut spec = schedule;
    if spec.is_empty() {
        return Some("empty spec string".to_owned());
    }
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or(0);
        let space = spec.find(' ').unwrap_or(spec.len());
        let zone = spec.get(eq + 1..space).unwrap_or("");
        if let Err(e) = load_location(zone) {
            return Some(format!("provided bad location {zone}: {e}"));
        }
        spec = spec[space..].trim();
    }
    if spec.starts_with('@') {
        if DESCRIPTORS.contains(&spec) {
            return None;
        }
        return match spec.strip_prefix("@every ") {
            Some(duration) => parse_duration(duration)
                .err()
                .map(|e| format!("failed to parse duration {spec}: {e}")),
            None => Some(format!("unrecognized descriptor: {spec}")),
        };
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Some(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    fields
        .iter()
        .zip([MINUTES, HOURS, DOM, MONTHS, DOW])
        .find_map(|(field, bounds)| {
            field
                .split(',')
                .filter(|r| !r.is_empty())
                .find_map(|r| range(r, &bounds).err())
        })
}

/// `validateTimeZone`'s error texts for a set `timeZone`.
pub(crate) fn time_zone_errors(zone: &str) -> Vec<String> {
    if zone.is_empty() {
        return vec!["timeZone must be nil or non-empty string".to_owned()];
    }
    let bad_part = |part: &str| {
        part == "."
            || part == ".."
            || part.starts_with('-')
            || !(1..=14).contains(&part.len())
            || !part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b))
    };
    if zone.split('/').any(bad_part) {
        return vec![format!("unknown time zone {zone}")];
    }
    let mut errors = Vec::new();
    if zone.eq_ignore_ascii_case("local") {
        errors.push(
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
                .to_owned(),
        );
    }
    if let Err(e) = load_location(zone) {
        errors.push(e);
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cases of robfig/cron v3's parser_test.go (TestParseScheduleErrors, TestStandardSpecSchedule)
    /// and of Kubernetes' TestValidateCronJob schedules.
    #[test]
    fn schedules_parse_as_robfig_cron_parse_standard() {
        for ok in [
            "* * * * *",
            "*/5 1-5/2 ? jan-MAR sun,sat",
            "0 0 1 1 *",
            "@hourly",
            "@every 1h30m",
            "@every 1.5s",
            "5 0 * * 1-5",
            "TZ=UTC 0 * * * *",
        ] {
            assert_eq!(schedule_error(ok), None, "{ok}");
        }
        for (bad, error) in [
            ("xyz", "expected exactly 5 fields, found 1: [xyz]"),
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            (
                "a * * * *",
                "failed to parse int from a: strconv.Atoi: parsing \"a\": invalid syntax",
            ),
            (
                "5-1 * * * *",
                "beginning of range (5) beyond end of range (1): 5-1",
            ),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            ("*/1/2 * * * *", "too many slashes: */1/2"),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
            ("@unrecognized", "unrecognized descriptor: @unrecognized"),
            (
                "@every Xm",
                "failed to parse duration @every Xm: time: invalid duration \"Xm\"",
            ),
            (
                "@every 5",
                "failed to parse duration @every 5: time: missing unit in duration \"5\"",
            ),
            (
                "TZ=Mars/Olympus 0 * * * *",
                "provided bad location Mars/Olympus: unknown time zone Mars/Olympus",
            ),
        ] {
            assert_eq!(schedule_error(bad).as_deref(), Some(error), "{bad}");
        }
    }

    /// TestValidateCronJob's time zone cases.
    #[test]
    fn time_zones_are_iana_names() {
        assert!(time_zone_errors("America/New_York").is_empty());
        assert!(time_zone_errors("Etc/GMT+5").is_empty());
        assert_eq!(
            time_zone_errors("Continent/Zone"),
            ["unknown time zone Continent/Zone"]
        );
        assert_eq!(
            time_zone_errors("../etc/passwd"),
            ["unknown time zone ../etc/passwd"]
        );
        assert_eq!(
            time_zone_errors("Local"),
            [
                "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
            ]
        );
        assert_eq!(
            time_zone_errors(""),
            ["timeZone must be nil or non-empty string"]
        );
    }
}
