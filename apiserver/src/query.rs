//! Query-string parsing with the API server's rules.

/// The decoded query parameters of a request.
#[derive(Debug, Default, Clone)]
pub(crate) struct Query {
    params: Vec<(String, String)>,
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes a form-encoded component (`+` is a space, `%XX` a byte).
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Query {
    /// Parses `a=b&c=d` (empty pairs, as kube-client sends, are skipped).
    pub(crate) fn parse(query: Option<&str>) -> Self {
        let params = query
            .unwrap_or("")
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| match p.split_once('=') {
                Some((k, v)) => (decode(k), decode(v)),
                None => (decode(p), String::new()),
            })
            .collect();
        Self { params }
    }

    /// The first value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
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
}
