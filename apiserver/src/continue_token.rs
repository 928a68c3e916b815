//! Continue tokens: the one format of the `continue` of a paged list, served to clients and
//! read back, and used by the watch cache's own lister-watcher.
//!
//! As Kubernetes' etcd3 store: URL-safe base64 (unpadded) of
//! `{"v":"meta.k8s.io/v1","rv":REVISION,"start":KEY}`, where `KEY` is the key to continue
//! from, relative to the resource's key prefix. A bad token is 400 BadRequest, worded as
//! `storage.DecodeContinue` and `ValidateListOptions` word it.

use std::borrow::Cow;

use base64::Engine as _;

use crate::error::ApiError;

/// The version tag of the token format.
const VERSION: &str = "meta.k8s.io/v1";

/// A decoded continue token: where the next page of a list starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContinueToken {
    /// The revision the list is read at (that of its first page).
    pub(crate) revision: u64,
    /// The key the next page starts at, relative to the resource's key prefix.
    pub(crate) start: String,
}

/// The token's JSON; a missing field is its zero value, as Go's `json.Unmarshal` leaves it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Wire<'a> {
    #[serde(borrow, default)]
    v: Cow<'a, str>,
    #[serde(default)]
    rv: u64,
    #[serde(borrow, default)]
    start: Cow<'a, str>,
}

/// The offset Go's `base64.RawURLEncoding` reports for `err` decoding `token`.
fn base64_offset(token: &str, err: &base64::DecodeError) -> usize {
    use base64::DecodeError;
    match err {
        DecodeError::InvalidByte(at, _) | DecodeError::InvalidLastSymbol(at, _) => *at,
        DecodeError::InvalidPadding => token.find('=').unwrap_or(token.len()),
        DecodeError::InvalidLength(len) => len.saturating_sub(1),
    }
}

/// Whether `/{key}` is what Go's `path.Clean` leaves as it is: no empty, `.` or `..`
/// segment and no trailing slash (the bare `/` aside).
fn is_clean(rooted: &str) -> bool {
    rooted == "/"
        || rooted[1..]
            .split('/')
            .all(|segment| !matches!(segment, "" | "." | ".."))
}

impl ContinueToken {
    /// The token of the page after `last_key` (relative to the resource's prefix) at
    /// `revision`: it starts just after that key.
    pub(crate) fn after(revision: u64, last_key: &str) -> Self {
        Self {
            revision,
            start: format!("{last_key}\u{0}"),
        }
    }

    /// The token as a client sees it.
    pub(crate) fn encode(&self) -> String {
        let wire = Wire {
            v: Cow::Borrowed(VERSION),
            rv: self.revision,
            start: Cow::Borrowed(&self.start),
        };
        let json = serde_json::to_vec(&wire).unwrap_or_default();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    /// Reads a token a client sent, as `storage.DecodeContinue`: not unpadded base64 or not
    /// JSON, another version, revision 0, an empty start or one `path.Clean` would change is
    /// 400 BadRequest. A start with a leading `/` is read without it.
    pub(crate) fn decode(token: &str) -> Result<Self, ApiError> {
        let bad = |why: &str| {
            ApiError::bad_request(format!(
                "invalid continue token: continue key is not valid{why}"
            ))
        };
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|e| {
                let at = base64_offset(token, &e);
                bad(&format!(": illegal base64 data at input byte {at}"))
            })?;
        let wire: Wire<'_> = serde_json::from_slice(&bytes).map_err(|e| bad(&format!(": {e}")))?;
        if wire.v != VERSION {
            return Err(bad(&format!(
                ": server does not recognize this encoded version {}",
                wire.v
            )));
        }
        if wire.rv == 0 {
            return Err(bad(
                ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ));
        }
        if wire.start.is_empty() {
            return Err(bad(": encoded start key empty (version meta.k8s.io/v1)"));
        }
        let rooted = if wire.start.starts_with('/') {
            wire.start.to_string()
        } else {
            format!("/{}", wire.start)
        };
        if !is_clean(&rooted) {
            return Err(bad(&format!(": {}", wire.start)));
        }
        Ok(Self {
            revision: wire.rv,
            start: rooted[1..].to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    #[test]
    fn a_token_decodes_to_the_revision_and_the_key_after_the_last_one() {
        let token = ContinueToken::after(42, "ns/a");
        let back = ContinueToken::decode(&token.encode()).unwrap();
        assert_eq!(back, token);
        assert_eq!(back.start, "ns/a\u{0}");
    }

    /// The message of decoding `token` (which must fail, with 400 BadRequest).
    fn refusal(token: &str) -> String {
        let err = ContinueToken::decode(token).unwrap_err();
        assert_eq!(
            (err.code, err.reason.as_str()),
            (400, "BadRequest"),
            "{token}"
        );
        err.message
    }

    #[test]
    fn a_start_with_a_leading_slash_is_read_without_it() {
        let token = raw(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"/ns/a"}"#);
        assert_eq!(ContinueToken::decode(&token).unwrap().start, "ns/a");
    }

    #[test]
    fn bad_tokens_are_400_with_decode_continues_messages() {
        const PREFIX: &str = "invalid continue token: continue key is not valid";
        let padded = format!("{}==", ContinueToken::after(7, "abc").encode());
        let cases = [
            (
                "not base64!".to_owned(),
                ": illegal base64 data at input byte 3".to_owned(),
            ),
            (
                padded.clone(),
                format!(": illegal base64 data at input byte {}", padded.len() - 2),
            ),
            (
                raw(r#"{"v":"meta.k8s.io/v2","rv":1,"start":"a"}"#),
                ": server does not recognize this encoded version meta.k8s.io/v2".to_owned(),
            ),
            (
                raw(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#),
                ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)".to_owned(),
            ),
            (
                raw(r#"{"v":"meta.k8s.io/v1","rv":1,"start":""}"#),
                ": encoded start key empty (version meta.k8s.io/v1)".to_owned(),
            ),
            (
                raw(r#"{"v":"meta.k8s.io/v1","rv":1}"#),
                ": encoded start key empty (version meta.k8s.io/v1)".to_owned(),
            ),
        ];
        for (token, why) in cases {
            assert_eq!(refusal(&token), format!("{PREFIX}{why}"), "{token}");
        }
        for start in ["../x", "a/../b", "a//b", "./a", "a/", "/a/."] {
            let token = raw(&format!(
                r#"{{"v":"meta.k8s.io/v1","rv":1,"start":"{start}"}}"#
            ));
            assert_eq!(refusal(&token), format!("{PREFIX}: {start}"), "{start}");
        }
        assert!(refusal(&raw("\"just a string\"")).starts_with(&format!("{PREFIX}: ")));
    }
}
