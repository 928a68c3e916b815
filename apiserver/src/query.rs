//! Query-string parsing with the API server's rules.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

use crate::error::ApiError;

/// The decoded query parameters of a request.
#[derive(Debug, Default, Clone)]
pub(crate) struct Query {
    params: Vec<Param>,
}

#[derive(Debug, Clone)]
struct Param {
    key: String,
    /// The decoded value (lossily, when the bytes are not UTF-8).
    value: String,
    /// Whether the decoded bytes were UTF-8.
    utf8: bool,
}

/// Decodes a form-encoded component (`+` is a space, `%XX` a byte); also tells whether the
/// decoded bytes were UTF-8.
fn decode(s: &str) -> (String, bool) {
    let spaced = if s.contains('+') {
        Cow::Owned(s.replace('+', " "))
    } else {
        Cow::Borrowed(s)
    };
    let bytes = percent_decode_str(&spaced);
    match bytes.clone().decode_utf8() {
        Ok(text) => (text.into_owned(), true),
        Err(_) => (bytes.decode_utf8_lossy().into_owned(), false),
    }
}

impl Query {
    /// Parses `a=b&c=d` (empty pairs, as kube-client sends, are skipped).
    pub(crate) fn parse(query: Option<&str>) -> Self {
        let params = query
            .unwrap_or("")
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (key, value) = p.split_once('=').unwrap_or((p, ""));
                let (value, utf8) = decode(value);
                Param {
                    key: decode(key).0,
                    value,
                    utf8,
                }
            })
            .collect();
        Self { params }
    }

    /// The first value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.param(key).map(|p| p.value.as_str())
    }

    /// Every value of `key`, in order (a list option such as `dryRun`).
    pub(crate) fn all(&self, key: &str) -> Vec<&str> {
        self.params
            .iter()
            .filter(|p| p.key == key)
            .map(|p| p.value.as_str())
            .collect()
    }

    fn param(&self, key: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.key == key)
    }

    /// A parameter that must be text, as a label selector: 400 BadRequest when its value is
    /// not UTF-8 once percent-decoded.
    pub(crate) fn text(&self, key: &str) -> Result<Option<&str>, ApiError> {
        match self.param(key) {
            Some(p) if !p.utf8 => Err(ApiError::bad_request(format!(
                "invalid {key}: not valid UTF-8 once percent-decoded"
            ))),
            p => Ok(p.map(|p| p.value.as_str())),
        }
    }

    /// A boolean parameter: absent, `0` or `false` (any case) are false; anything else is true.
    pub(crate) fn flag(&self, key: &str) -> bool {
        match self.get(key) {
            None => false,
            Some(v) => !(v == "0" || v.eq_ignore_ascii_case("false")),
        }
    }

    /// A boolean parameter that may be absent.
    pub(crate) fn opt_flag(&self, key: &str) -> Option<bool> {
        self.get(key).map(|_| self.flag(key))
    }

    /// A non-empty string parameter.
    pub(crate) fn non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_follow_the_api_server_rules() {
        let q = Query::parse(Some(
            "&watch=&a=0&b=FALSE&c=yes&labelSelector=app%3Dweb%2Ctier+in+(a)",
        ));
        assert!(q.flag("watch"));
        assert!(!q.flag("a"));
        assert!(!q.flag("b"));
        assert!(q.flag("c"));
        assert!(!q.flag("missing"));
        assert_eq!(q.get("labelSelector"), Some("app=web,tier in (a)"));
    }

    #[test]
    fn percent_escapes_and_plus_signs_decode_and_bad_escapes_stay_as_they_are() {
        let q = Query::parse(Some("a=%41%2b+b&b=100%&c=%zz%4&d%3D=x"));
        assert_eq!(q.get("a"), Some("A+ b"));
        assert_eq!(q.get("b"), Some("100%"));
        assert_eq!(q.get("c"), Some("%zz%4"));
        assert_eq!(q.get("d="), Some("x"));
    }

    #[test]
    fn a_text_parameter_that_is_not_utf8_once_decoded_is_400() {
        let q = Query::parse(Some(
            "fieldSelector=metadata.name%3D%FF%FE&labelSelector=a%3Db",
        ));
        let err = q.text("fieldSelector").unwrap_err();
        assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
        assert_eq!(q.text("labelSelector").unwrap(), Some("a=b"));
        assert_eq!(q.text("missing").unwrap(), None);
    }
}
