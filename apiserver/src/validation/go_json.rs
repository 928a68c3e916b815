//! The syntax error Go's `encoding/json` reports for a document (its `checkValid`, the scanner
//! of `encoding/json/scanner.go`), so that an undecodable body is answered with the text the
//! API server sends (`couldn't get version/kind; json parse error: invalid character 'x'
//! looking for beginning of value`). serde_json still decodes: this only words its refusal.

/// Where the scanner stands inside an object or array.
#[derive(Clone, Copy, PartialEq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// The scanner's state: what the next byte may be.
#[derive(Clone, Copy, PartialEq)]
enum State {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    /// Inside `\u`, with this many hex digits read.
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside a literal (`true`, `false`, `null`): the literal and how much of it was read.
    Literal(&'static str, usize),
}

const MAX_DEPTH: usize = 10000;

/// Go's `quoteChar`.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_owned(),
        b'"' => "'\"'".to_owned(),
        0x07 => r"'\a'".to_owned(),
        0x08 => r"'\b'".to_owned(),
        0x0c => r"'\f'".to_owned(),
        b'\n' => r"'\n'".to_owned(),
        b'\r' => r"'\r'".to_owned(),
        b'\t' => r"'\t'".to_owned(),
        0x0b => r"'\v'".to_owned(),
        c if c < 0x20 || c == 0x7f => format!("'\\x{c:02x}'"),
        c if (0x80..=0xa0).contains(&c) || c == 0xad => format!("'\\u{c:04x}'"),
        c => format!("'{}'", char::from(c)),
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

struct Scanner {
    state: State,
    stack: Vec<Parse>,
}

impl Scanner {
    fn error(c: u8, context: &str) -> Result<(), String> {
        Err(format!("invalid character {} {context}", quote_char(c)))
    }

    fn push(&mut self, parse: Parse) -> Result<(), String> {
        self.stack.push(parse);
        if self.stack.len() > MAX_DEPTH {
            return Err("exceeded max depth".to_owned());
        }
        Ok(())
    }

    fn pop(&mut self) {
        self.stack.pop();
        self.state = if self.stack.is_empty() {
            State::EndTop
        } else {
            State::EndValue
        };
    }

    fn begin_value(&mut self, c: u8) -> Result<(), String> {
        self.state = match c {
            c if is_space(c) => return Ok(()),
            b'{' => {
                self.push(Parse::ObjectKey)?;
                State::BeginStringOrEmpty
            }
            b'[' => {
                self.push(Parse::ArrayValue)?;
                State::BeginValueOrEmpty
            }
            b'"' => State::InString,
            b'-' => State::Neg,
            b'0' => State::Zero,
            b't' => State::Literal("true", 1),
            b'f' => State::Literal("false", 1),
            b'n' => State::Literal("null", 1),
            b'1'..=b'9' => State::One,
            c => return Self::error(c, "looking for beginning of value"),
        };
        Ok(())
    }

    fn end_value(&mut self, c: u8) -> Result<(), String> {
        let Some(&top) = self.stack.last() else {
            self.state = State::EndTop;
            return self.step(c);
        };
        if is_space(c) {
            self.state = State::EndValue;
            return Ok(());
        }
        let last = self.stack.len() - 1;
        match (top, c) {
            (Parse::ObjectKey, b':') => {
                self.stack[last] = Parse::ObjectValue;
                self.state = State::BeginValue;
            }
            (Parse::ObjectKey, c) => return Self::error(c, "after object key"),
            (Parse::ObjectValue, b',') => {
                self.stack[last] = Parse::ObjectKey;
                self.state = State::BeginString;
            }
            (Parse::ObjectValue, b'}') | (Parse::ArrayValue, b']') => self.pop(),
            (Parse::ObjectValue, c) => return Self::error(c, "after object key:value pair"),
            (Parse::ArrayValue, b',') => self.state = State::BeginValue,
            (Parse::ArrayValue, c) => return Self::error(c, "after array element"),
        }
        Ok(())
    }

    fn step(&mut self, c: u8) -> Result<(), String> {
        let digit = c.is_ascii_digit();
        match self.state {
            State::BeginValue => self.begin_value(c),
            State::BeginValueOrEmpty if is_space(c) => Ok(()),
            State::BeginValueOrEmpty if c == b']' => self.end_value(c),
            State::BeginValueOrEmpty => self.begin_value(c),
            State::BeginStringOrEmpty if is_space(c) => Ok(()),
            State::BeginStringOrEmpty if c == b'}' => {
                let last = self.stack.len() - 1;
                self.stack[last] = Parse::ObjectValue;
                self.end_value(c)
            }
            State::BeginStringOrEmpty | State::BeginString => match c {
                c if is_space(c) => Ok(()),
                b'"' => {
                    self.state = State::InString;
                    Ok(())
                }
                c => Self::error(c, "looking for beginning of object key string"),
            },
            State::EndValue => self.end_value(c),
            State::EndTop if is_space(c) => Ok(()),
            State::EndTop => Self::error(c, "after top-level value"),
            State::InString => {
                match c {
                    b'"' => self.state = State::EndValue,
                    b'\\' => self.state = State::InStringEsc,
                    c if c < 0x20 => return Self::error(c, "in string literal"),
                    _ => {}
                }
                Ok(())
            }
            State::InStringEsc => {
                self.state = match c {
                    b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => State::InString,
                    b'u' => State::InStringEscU(0),
                    c => return Self::error(c, "in string escape code"),
                };
                Ok(())
            }
            State::InStringEscU(n) => {
                if !c.is_ascii_hexdigit() {
                    return Self::error(c, "in \\u hexadecimal character escape");
                }
                self.state = if n == 3 {
                    State::InString
                } else {
                    State::InStringEscU(n + 1)
                };
                Ok(())
            }
            State::Neg => {
                self.state = match c {
                    b'0' => State::Zero,
                    b'1'..=b'9' => State::One,
                    c => return Self::error(c, "in numeric literal"),
                };
                Ok(())
            }
            State::One if digit => Ok(()),
            State::One | State::Zero => match c {
                b'.' => {
                    self.state = State::Dot;
                    Ok(())
                }
                b'e' | b'E' => {
                    self.state = State::E;
                    Ok(())
                }
                c => self.end_value(c),
            },
            State::Dot if digit => {
                self.state = State::Dot0;
                Ok(())
            }
            State::Dot => Self::error(c, "after decimal point in numeric literal"),
            State::Dot0 | State::E0 if digit => Ok(()),
            State::Dot0 if c == b'e' || c == b'E' => {
                self.state = State::E;
                Ok(())
            }
            State::Dot0 | State::E0 => self.end_value(c),
            State::E if c == b'+' || c == b'-' => {
                self.state = State::ESign;
                Ok(())
            }
            State::E | State::ESign if digit => {
                self.state = State::E0;
                Ok(())
            }
            State::E | State::ESign => Self::error(c, "in exponent of numeric literal"),
            State::Literal(word, read) => {
                let expected = word.as_bytes()[read];
                if c != expected {
                    let context = format!("in literal {word} (expecting {})", quote_char(expected));
                    return Self::error(c, &context);
                }
                self.state = if read + 1 == word.len() {
                    State::EndValue
                } else {
                    State::Literal(word, read + 1)
                };
                Ok(())
            }
        }
    }
}

/// Go's `json.Unmarshal` syntax error for `data` (None: Go finds no syntax error).
pub(crate) fn syntax_error(data: &[u8]) -> Option<String> {
    let mut scanner = Scanner {
        state: State::BeginValue,
        stack: Vec::new(),
    };
    for &c in data {
        if let Err(e) = scanner.step(c) {
            return Some(e);
        }
    }
    if scanner.state == State::EndTop {
        return None;
    }
    // Go's `eof`: a space ends a number at the top level.
    match scanner.step(b' ') {
        Ok(()) if scanner.state == State::EndTop => None,
        Ok(()) => Some("unexpected end of JSON input".to_owned()),
        Err(e) => Some(e),
    }
}

#[cfg(test)]
mod tests {
    use super::syntax_error;

    /// Messages of Go's `encoding/json` (scanner_test.go's TestIndentErrors, decode_test.go's
    /// syntax cases and what `json.Unmarshal` answers for them).
    #[test]
    fn syntax_errors_are_worded_as_gos_scanner() {
        for (doc, error) in [
            (&b"{}"[..], None),
            (b" [1, -2.5e+3, true, null, \"a\\u00e9\"] ", None),
            (b"", Some("unexpected end of JSON input")),
            (b"{", Some("unexpected end of JSON input")),
            (b"{\"a\":1", Some("unexpected end of JSON input")),
            (
                b"{bad",
                Some("invalid character 'b' looking for beginning of object key string"),
            ),
            (
                b"x",
                Some("invalid character 'x' looking for beginning of value"),
            ),
            (
                b"{\"X\": \"foo\", \"Y\"}",
                Some("invalid character '}' after object key"),
            ),
            (
                b"{\"a\":1 \"b\":2}",
                Some("invalid character '\"' after object key:value pair"),
            ),
            (b"[1 2]", Some("invalid character '2' after array element")),
            (
                b"{} {}",
                Some("invalid character '{' after top-level value"),
            ),
            (
                b"tru",
                Some("invalid character ' ' in literal true (expecting 'e')"),
            ),
            (
                b"trUe",
                Some("invalid character 'U' in literal true (expecting 'u')"),
            ),
            (
                b"\"a\nb\"",
                Some("invalid character '\\n' in string literal"),
            ),
            (
                b"\"\\x\"",
                Some("invalid character 'x' in string escape code"),
            ),
            (b"-", Some("invalid character ' ' in numeric literal")),
            (b"-a", Some("invalid character 'a' in numeric literal")),
            (
                b"1.a",
                Some("invalid character 'a' after decimal point in numeric literal"),
            ),
            (
                b"1e",
                Some("invalid character ' ' in exponent of numeric literal"),
            ),
            (
                b"\xff\xfe",
                Some("invalid character '\u{ff}' looking for beginning of value"),
            ),
            (b"123", None),
            (
                b"'a'",
                Some("invalid character '\\'' looking for beginning of value"),
            ),
        ] {
            assert_eq!(
                syntax_error(doc).as_deref(),
                error,
                "{}",
                String::from_utf8_lossy(doc)
            );
        }
    }
}
