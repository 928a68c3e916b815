//! Parsing label selectors (`a=b,c!=d,e in (x,y),!f`) into kube-core's [`Selector`].

use std::collections::BTreeSet;

use kube_core::{Expression, Selector};

/// Why a label selector string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectorError {
    /// The selector is malformed at the given byte offset.
    #[error("invalid label selector {selector:?} at position {position}: {reason}")]
    Syntax {
        /// The whole selector.
        selector: String,
        /// Byte offset of the problem.
        position: usize,
        /// What was expected.
        reason: String,
    },
    /// A key or value does not satisfy the label syntax rules.
    #[error("invalid label selector {selector:?}: {reason}")]
    Invalid {
        /// The whole selector.
        selector: String,
        /// Which key or value is wrong, and why.
        reason: String,
    },
}

/// Parses a label selector in the Kubernetes string syntax: requirements separated by commas,
/// each `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (v1,v2)` or
/// `key notin (v1,v2)`. The empty string selects everything.
///
/// ```
/// use kube_core::SelectorExt;
/// let sel = kcache_store::parse_label_selector("app=web,tier in (front,back),!canary").unwrap();
/// let labels = [("app".to_string(), "web".to_string()), ("tier".to_string(), "front".to_string())].into();
/// assert!(sel.matches(&labels));
/// assert!(kcache_store::parse_label_selector("app in web").is_err());
/// ```
pub fn parse_label_selector(selector: &str) -> Result<Selector, SelectorError> {
    let mut parser = Parser {
        src: selector,
        pos: 0,
    };
    let mut exprs = Vec::new();
    parser.skip_ws();
    if parser.at_end() {
        return Ok(Selector::default());
    }
    loop {
        exprs.push(parser.requirement()?);
        parser.skip_ws();
        if parser.at_end() {
            break;
        }
        parser.expect(",")?;
    }
    Ok(exprs.into_iter().collect())
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn at_end(&self) -> bool {
        self.rest().is_empty()
    }

    fn skip_ws(&mut self) {
        let trimmed = self.rest().trim_start();
        self.pos = self.src.len() - trimmed.len();
    }

    fn error(&self, reason: impl Into<String>) -> SelectorError {
        SelectorError::Syntax {
            selector: self.src.to_owned(),
            position: self.pos,
            reason: reason.into(),
        }
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: &str) -> Result<(), SelectorError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.error(format!("expected {token:?}")))
        }
    }

    /// A run of label characters, possibly empty.
    fn word(&mut self) -> &str {
        self.skip_ws();
        let start = self.pos;
        let len = self
            .rest()
            .find(|c: char| !is_word_char(c))
            .unwrap_or(self.rest().len());
        self.pos += len;
        &self.src[start..self.pos]
    }

    /// A keyword (`in`, `notin`) followed by a non-word character.
    fn eat_keyword(&mut self, keyword: &str) -> bool {
        self.skip_ws();
        // What follows is looked at by character: the next one may be several bytes long.
        let follows_ok = self
            .rest()
            .strip_prefix(keyword)
            .is_some_and(|after| after.chars().next().is_none_or(|c| !is_word_char(c)));
        if follows_ok {
            self.pos += keyword.len();
        }
        follows_ok
    }

    fn key(&mut self) -> Result<String, SelectorError> {
        let key = self.word().to_owned();
        if key.is_empty() {
            return Err(self.error("expected a label key"));
        }
        validate_key(&key).map_err(|reason| self.invalid(reason))?;
        Ok(key)
    }

    fn value(&mut self) -> Result<String, SelectorError> {
        let value = self.word().to_owned();
        validate_value(&value).map_err(|reason| self.invalid(reason))?;
        Ok(value)
    }

    fn invalid(&self, reason: String) -> SelectorError {
        SelectorError::Invalid {
            selector: self.src.to_owned(),
            reason,
        }
    }

    fn value_set(&mut self) -> Result<BTreeSet<String>, SelectorError> {
        self.expect("(")?;
        let mut values = BTreeSet::new();
        loop {
            values.insert(self.value()?);
            if self.eat(")") {
                return Ok(values);
            }
            self.expect(",")?;
        }
    }

    fn requirement(&mut self) -> Result<Expression, SelectorError> {
        if self.eat("!") {
            return Ok(Expression::DoesNotExist(self.key()?));
        }
        let key = self.key()?;
        self.skip_ws();
        if self.at_end() || self.rest().starts_with(',') {
            return Ok(Expression::Exists(key));
        }
        if self.eat("!=") {
            return Ok(Expression::NotEqual(key, self.value()?));
        }
        if self.eat("==") || self.eat("=") {
            return Ok(Expression::Equal(key, self.value()?));
        }
        if self.eat_keyword("notin") {
            return Ok(Expression::NotIn(key, self.value_set()?));
        }
        if self.eat_keyword("in") {
            return Ok(Expression::In(key, self.value_set()?));
        }
        if self.rest().starts_with(['<', '>']) {
            return Err(self.error("the gt/lt operators are not supported"));
        }
        Err(self.error("expected one of '=', '==', '!=', 'in', 'notin', ',' or the end"))
    }
}

fn validate_name(part: &str, what: &str) -> Result<(), String> {
    if part.len() > 63 {
        return Err(format!("{what} {part:?} is longer than 63 characters"));
    }
    let ok_ends = part
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && part
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    let ok_chars = part
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok_ends && ok_chars {
        Ok(())
    } else {
        Err(format!(
            "{what} {part:?} must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

/// Checks a label key: an optional DNS subdomain prefix and `/`, then a name of at most 63 characters.
fn validate_key(key: &str) -> Result<(), String> {
    let name = match key.split_once('/') {
        Some((prefix, name)) => {
            let prefix_ok = !prefix.is_empty()
                && prefix.len() <= 253
                && prefix.split('.').all(|label| {
                    !label.is_empty()
                        && label
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                });
            if !prefix_ok {
                return Err(format!(
                    "prefix part of key {key:?} must be a DNS-1123 subdomain"
                ));
            }
            name
        }
        None => key,
    };
    validate_name(name, "key name")
}

/// Checks a label value: empty, or a name of at most 63 characters.
fn validate_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        Ok(())
    } else {
        validate_name(value, "value")
    }
}
