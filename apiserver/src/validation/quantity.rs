//! Resource quantities as apimachinery's `resource.Quantity` reads and prints them
//! (`k8s.io/apimachinery/pkg/api/resource/quantity.go`): `ParseQuantity` (sign, digits, an
//! optional fraction, then a decimal-SI, binary-SI or exponent suffix; values finer than a
//! nano rounded up), `Cmp` and `String` (the canonical form: `0.5` is `500m`, `1024Mi` is
//! `1Gi`, a string already canonical is kept as written).
//!
//! Values are exact decimals (an `i128` mantissa and a power of ten); numbers with more than
//! 38 significant digits are refused here where Go would still read them.

use std::cmp::Ordering;

use serde_json::Value;

/// Why a text is not a quantity: `resource.ParseQuantity`'s errors, and values beyond what
/// this parser represents (Go reads those).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum QuantityError {
    /// `ErrFormatWrong`.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    /// `ErrSuffix`.
    #[error("unable to parse quantity's suffix")]
    Suffix,
    /// More than 38 significant digits, or an exponent out of range.
    #[error("quantity beyond the range this server represents")]
    Unrepresentable,
}

/// How a quantity was written, which decides how it prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// `m`, `k`, `M`... (and no suffix).
    DecimalSi,
    /// `Ki`, `Mi`, `Gi`...
    BinarySi,
    /// `e3`, `E-2`...
    DecimalExponent,
}

/// A parsed quantity: `mantissa * 10^exponent`, with the format it prints in.
#[derive(Clone, Debug)]
pub(crate) struct Quantity {
    mantissa: i128,
    exponent: i32,
    format: Format,
    /// The text as written, when `ParseQuantity` keeps it (it is already canonical).
    written: Option<String>,
}

const DECIMAL_SUFFIXES: &[(&str, i32)] = &[
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("", 0),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];
const BINARY_SUFFIXES: &[(&str, u32)] = &[
    ("Ki", 10),
    ("Mi", 20),
    ("Gi", 30),
    ("Ti", 40),
    ("Pi", 50),
    ("Ei", 60),
];

/// `parseQuantityString`: the sign, the digits before and after the point, and the suffix.
fn split(text: &str) -> Option<(bool, &str, &str, &str)> {
    let (positive, rest) = match text.as_bytes().first() {
        Some(b'-') => (false, &text[1..]),
        Some(b'+') => (true, &text[1..]),
        _ => (true, text),
    };
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let whole_len = digits(rest);
    let (whole, rest) = rest.split_at(whole_len);
    let (fraction, suffix) = match rest.strip_prefix('.') {
        Some(after) => after.split_at(digits(after)),
        None => ("", rest),
    };
    // The suffix: letters of `eEinumkKMGTP`, then an optional sign and digits.
    let letters = suffix
        .bytes()
        .take_while(|b| b"eEinumkKMGTP".contains(b))
        .count();
    let tail = &suffix[letters..];
    let tail = tail.strip_prefix(['-', '+']).unwrap_or(tail);
    if !tail.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((positive, whole, fraction, suffix))
}

/// `suffixHandler.interpret`: base 10 or 2, the exponent, and the format.
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    if let Some((_, e)) = DECIMAL_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        return Some((10, *e, Format::DecimalSi));
    }
    if let Some((_, e)) = BINARY_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        return Some((2, i32::try_from(*e).ok()?, Format::BinarySi));
    }
    let exponent = suffix.strip_prefix(['e', 'E']).filter(|e| !e.is_empty())?;
    Some((10, exponent.parse().ok()?, Format::DecimalExponent))
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

impl Quantity {
    /// `resource.ParseQuantity`.
    pub(crate) fn parse(text: &str) -> Result<Quantity, QuantityError> {
        if text.is_empty() {
            return Err(QuantityError::Format);
        }
        let (positive, whole, fraction, suffix) = split(text).ok_or(QuantityError::Format)?;
        let (base, exponent, format) = interpret(suffix).ok_or(QuantityError::Suffix)?;
        // As Go: leading zeros dropped, an empty whole part read as `0`.
        let whole = match whole.trim_start_matches('0') {
            "" => "0",
            w => w,
        };
        let digits = format!("{whole}{fraction}");
        let too_large = QuantityError::Unrepresentable;
        let mut mantissa: i128 = digits.parse().map_err(|_| too_large)?;
        let mut exp10 = -i32::try_from(fraction.len()).map_err(|_| too_large)?;
        if base == 10 {
            exp10 = exp10.checked_add(exponent).ok_or(too_large)?;
        } else {
            mantissa = mantissa.checked_mul(1i128 << exponent).ok_or(too_large)?;
        }
        if !positive {
            mantissa = -mantissa;
        }
        let mut q = Quantity {
            mantissa,
            exponent: exp10,
            format,
            written: None,
        };
        q.round_up_to_nano().ok_or(too_large)?;
        if format == Format::BinarySi
            && q.cmp_value(&Quantity::int(i64::MAX.into())) > Ordering::Equal
        {
            q = Quantity::int(i64::MAX.into());
        }
        if keeps_text(whole, fraction, base, exponent, format) && q.mantissa != 0 {
            q.written = Some(text.to_owned());
        }
        Ok(q)
    }

    /// A quantity as JSON carries it: a string (trimmed, as `UnmarshalJSON` does) or a number;
    /// `None` for other values.
    pub(crate) fn read_json(value: &Value) -> Option<Result<Quantity, QuantityError>> {
        match value {
            Value::String(s) => Some(Quantity::parse(s.trim())),
            Value::Number(n) => Some(Quantity::parse(&n.to_string())),
            _ => None,
        }
    }

    /// [`Quantity::read_json`] when it reads one.
    pub(crate) fn from_json(value: &Value) -> Option<Quantity> {
        Quantity::read_json(value)?.ok()
    }

    fn int(n: i128) -> Quantity {
        Quantity {
            mantissa: n,
            exponent: 0,
            format: Format::BinarySi,
            written: None,
        }
    }

    /// Values finer than 1n round up (away from zero), as `ParseQuantity` does.
    fn round_up_to_nano(&mut self) -> Option<()> {
        if self.exponent >= -9 {
            return Some(());
        }
        let drop = u32::try_from(-9 - self.exponent).ok()?;
        let Some(divisor) = pow10(drop) else {
            // Far below a nano: one nano of the same sign (zero stays zero).
            self.mantissa = self.mantissa.signum();
            self.exponent = -9;
            return Some(());
        };
        let magnitude = self.mantissa.abs();
        let rounded = magnitude / divisor + i128::from(magnitude % divisor != 0);
        self.mantissa = rounded * self.mantissa.signum();
        self.exponent = -9;
        Some(())
    }

    /// `Quantity.Add`: the sum, in `self`'s format (`other`'s when `self` is zero); None past
    /// what this server represents.
    pub(crate) fn add(&self, other: &Quantity) -> Option<Quantity> {
        let exponent = self.exponent.min(other.exponent);
        let scaled = |q: &Quantity| {
            pow10(u32::try_from(q.exponent - exponent).ok()?)
                .and_then(|p| q.mantissa.checked_mul(p))
        };
        let mantissa = scaled(self)?.checked_add(scaled(other)?)?;
        let format = if self.mantissa == 0 {
            other.format
        } else {
            self.format
        };
        Some(Quantity {
            mantissa,
            exponent,
            format,
            written: None,
        })
    }

    /// Zero (`0`, decimal).
    pub(crate) fn zero() -> Quantity {
        Quantity::int(0)
    }

    /// Whether the quantity is zero.
    pub(crate) fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// Whether the quantity is above zero.
    pub(crate) fn is_positive(&self) -> bool {
        self.mantissa > 0
    }

    /// Whether the quantity is below zero.
    pub(crate) fn is_negative(&self) -> bool {
        self.mantissa < 0
    }

    /// `Quantity.Cmp`: the order of the values.
    pub(crate) fn cmp_value(&self, other: &Quantity) -> Ordering {
        let (a, b) = (self.mantissa, other.mantissa);
        if a.signum() != b.signum() || a == 0 {
            return a.signum().cmp(&b.signum());
        }
        // Same sign, both non-zero: scale the one with the larger exponent down to the other.
        let (hi, lo, flipped) = if self.exponent >= other.exponent {
            (self, other, false)
        } else {
            (other, self, true)
        };
        let shift =
            u32::try_from(i64::from(hi.exponent) - i64::from(lo.exponent)).unwrap_or(u32::MAX);
        let order = match pow10(shift).and_then(|p| hi.mantissa.checked_mul(p)) {
            Some(scaled) => scaled.cmp(&lo.mantissa),
            // Past i128 the scaled value's magnitude is the larger one.
            None => hi.mantissa.signum().cmp(&0),
        };
        if flipped { order.reverse() } else { order }
    }

    /// The value as a whole number, when it is one.
    fn whole(&self) -> Option<i128> {
        if self.exponent >= 0 {
            return pow10(u32::try_from(self.exponent).ok()?)
                .and_then(|p| self.mantissa.checked_mul(p));
        }
        let p = pow10(u32::try_from(-self.exponent).ok()?)?;
        (self.mantissa % p == 0).then(|| self.mantissa / p)
    }

    /// `Quantity.Value()`: the value rounded up (away from zero) to a whole number.
    fn value_rounded_up(&self) -> Option<i128> {
        if self.exponent >= 0 {
            return self.whole();
        }
        let p = pow10(u32::try_from(-self.exponent).ok()?)?;
        let carry = i128::from(self.mantissa % p != 0) * self.mantissa.signum();
        Some(self.mantissa / p + carry)
    }

    /// `IsHugePageResourceValueDivisible`: `page` is a positive whole number and the value
    /// (rounded up) a multiple of it.
    pub(crate) fn is_multiple_of(&self, page: &Quantity) -> bool {
        match (self.value_rounded_up(), page.whole()) {
            (Some(value), Some(size)) if page.mantissa > 0 => value % size == 0,
            _ => false,
        }
    }

    /// `Quantity.String()`: the canonical form (`CanonicalizeBytes`), or the text as written
    /// when it already was canonical.
    pub(crate) fn canonical(&self) -> String {
        if let Some(text) = &self.written {
            return text.clone();
        }
        if self.mantissa == 0 {
            return "0".to_owned();
        }
        let mut format = self.format;
        if format == Format::BinarySi {
            let small = self.cmp_value(&Quantity::int(1024)) == Ordering::Less
                && self.cmp_value(&Quantity::int(-1024)) == Ordering::Greater;
            match self.whole() {
                Some(whole) if !small => return base1024(whole),
                _ => format = Format::DecimalSi,
            }
        }
        let (mut mantissa, mut exponent) = (self.mantissa, self.exponent);
        while mantissa % 10 == 0 {
            mantissa /= 10;
            exponent += 1;
        }
        while exponent % 3 != 0 {
            mantissa *= 10;
            exponent -= 1;
        }
        let suffix = match format {
            Format::DecimalSi => DECIMAL_SUFFIXES
                .iter()
                .find(|(_, e)| *e == exponent)
                .map_or_else(|| format!("e{exponent}"), |(s, _)| (*s).to_owned()),
            _ if exponent == 0 => String::new(),
            _ => format!("e{exponent}"),
        };
        format!("{mantissa}{suffix}")
    }
}

/// The built-in kinds whose objects hold quantities where [`malformed_in`] looks.
const QUANTITY_KINDS: &[&str] = &[
    "Pod",
    "PodTemplate",
    "ReplicationController",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "ResourceQuota",
    "Node",
];

/// The first quantity of an object of the built-in `kind` that Kubernetes' decoder refuses
/// (`resources.limits`/`requests`, `overhead`, `capacity`, `hard`, `emptyDir.sizeLimit`
/// anywhere in it but its metadata); values beyond what this parser represents pass.
pub(crate) fn malformed_in(kind: &str, value: &Value) -> Option<QuantityError> {
    let object = value.as_object()?;
    if !QUANTITY_KINDS.contains(&kind) {
        return None;
    }
    object
        .iter()
        .filter(|(k, _)| *k != "metadata")
        .find_map(|(_, v)| malformed(v))
}

fn malformed(value: &Value) -> Option<QuantityError> {
    let refused = |v: &Value| match Quantity::read_json(v) {
        Some(Err(e)) if e != QuantityError::Unrepresentable => Some(e),
        _ => None,
    };
    let in_map = |v: Option<&Value>| {
        v.and_then(Value::as_object)
            .and_then(|m| m.values().find_map(refused))
    };
    match value {
        Value::Object(map) => map.iter().find_map(|(key, v)| {
            let own = match key.as_str() {
                "resources" => in_map(v.get("limits")).or_else(|| in_map(v.get("requests"))),
                "overhead" | "capacity" | "hard" => in_map(Some(v)),
                "emptyDir" => v.get("sizeLimit").and_then(refused),
                _ => None,
            };
            own.or_else(|| malformed(v))
        }),
        Value::Array(items) => items.iter().find_map(malformed),
        _ => None,
    }
}

/// A whole number of bytes as `AsCanonicalBase1024Bytes` prints it (`1536Mi`, `2Gi`).
fn base1024(mut amount: i128) -> String {
    let mut times = 0;
    while amount != 0 && amount % 1024 == 0 && times < BINARY_SUFFIXES.len() {
        amount /= 1024;
        times += 1;
    }
    let suffix = times
        .checked_sub(1)
        .and_then(|i| BINARY_SUFFIXES.get(i))
        .map_or("", |(s, _)| s);
    format!("{amount}{suffix}")
}

/// Whether `ParseQuantity` keeps the text as written: it took the fast path (few enough
/// digits, no fraction for binary suffixes) and the number is already canonical.
fn keeps_text(whole: &str, fraction: &str, base: u32, exponent: i32, format: Format) -> bool {
    let digits = whole.len() + fraction.len();
    if format == Format::BinarySi {
        let precision = 15 - whole.len() as i64 - (exponent as f32 * 3.0 / 10.0) as i64 - 1;
        if !fraction.is_empty() || precision < 0 {
            return false;
        }
        let value: u64 = whole.parse().unwrap_or(0);
        return exponent % 10 == 0 && value & 0x07 != 0;
    }
    if base != 10 || digits > 18 {
        return false;
    }
    let scale = i64::from(exponent) - fraction.len() as i64;
    let shifted = format!("{whole}{fraction}");
    scale >= -9
        && scale % 3 == 0
        && !shifted.ends_with("000")
        && !shifted.starts_with('0')
        && !shifted.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        Quantity::parse(text).map_or_else(|e| e.to_string(), |q| q.canonical())
    }

    /// `TestQuantityString` of apimachinery's `quantity_test.go`: each canonical text is kept
    /// as written, its alternate prints canonical, and so do their negations.
    #[test]
    fn quantities_print_as_quantity_string_does() {
        for (expect, alternate) in [
            ("1Gi", "1024Mi"),
            ("300Mi", "307200Ki"),
            ("6Ki", ""),
            ("1001Gi", "1025024Mi"),
            ("1Ti", "1024Gi"),
            ("5", "5000m"),
            ("500m", "0.5"),
            ("1G", "1000M"),
            ("1G", "0.001T"),
            ("1m", "1000u"),
            ("80m", ""),
            ("1080m", "1.08"),
            ("1080m", "1080000000n"),
            ("300M", ""),
            ("1T", ""),
            ("1E", ""),
            ("1e21", "1000E"),
            ("5e21", "5000E"),
            ("1e24", "1000000E"),
            ("1234567M", ""),
            ("1234567m", ""),
            ("3k", ""),
            ("1025", ""),
            ("0", "00"),
            ("1e9", ".001e12"),
            ("1e-3", "0.001e0"),
            ("1e-9", "1000e-12"),
            ("80e-3", ""),
            ("300e6", ""),
            ("1e12", ""),
            ("3e3", ""),
            ("1n", ""),
            ("80n", ""),
            ("1080n", ""),
            ("1u", ""),
            ("1080u", ""),
        ] {
            assert_eq!(canonical(expect), expect);
            if !alternate.is_empty() {
                assert_eq!(canonical(alternate), expect, "{alternate}");
            }
            if expect != "0" {
                assert_eq!(canonical(&format!("-{expect}")), format!("-{expect}"));
            }
        }
    }

    /// `TestQuantityParseEmit`, and values `TestQuantityParse` rounds or caps.
    #[test]
    fn parsed_quantities_emit_their_canonical_form() {
        for (text, expect) in [
            ("1Ki", "1Ki"),
            ("1024Mi", "1Gi"),
            ("1000M", "1G"),
            (".001Ki", "1024m"),
            (".000001Ki", "1024u"),
            (".000000001Ki", "1024n"),
            (".000000000001Ki", "2n"),
            ("-.001Ki", "-1024m"),
            ("3.001n", "4n"),
            ("0.00000012345", "124n"),
            ("1.1E-9", "2e-9"),
            ("9Ei", "9223372036854775807"),
            ("100.035k", "100.035k"),
            ("1.", "1."),
            ("+1", "+1"),
            ("0.0", "0"),
            ("-0", "0"),
        ] {
            assert_eq!(canonical(text), expect, "{text}");
        }
    }

    /// The `invalid` list of `TestQuantityParse`, and the empty string.
    #[test]
    fn malformed_quantities_do_not_parse() {
        for bad in [
            "", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-",
            " 1", "1 ",
        ] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn quantities_compare_by_value() {
        let q = |t: &str| Quantity::parse(t).expect(t);
        assert_eq!(q("1").cmp_value(&q("1000m")), Ordering::Equal);
        assert_eq!(q("1Gi").cmp_value(&q("1G")), Ordering::Greater);
        assert_eq!(q("500m").cmp_value(&q("0.6")), Ordering::Less);
        assert_eq!(q("-1").cmp_value(&q("0")), Ordering::Less);
        assert_eq!(q("1e30").cmp_value(&q("1n")), Ordering::Greater);
        assert_eq!(q("1n").cmp_value(&q("1e30")), Ordering::Less);
        assert!(q("-1m").is_negative());
    }
}
