//! Continue tokens: the one format of the `continue` of a paged list, served to clients and
//! read back, and used by the watch cache's own lister-watcher.
//!
//! As Kubernetes' etcd3 store: URL-safe base64 (unpadded) of
//! `{"v":"meta.k8s.io/v1","rv":REVISION,"start":KEY}`, where `KEY` is the key to continue
//! from, relative to the resource's key prefix. A bad token is 400 BadRequest.

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

#[derive(serde::Serialize, serde::Deserialize)]
struct Wire<'a> {
    #[serde(borrow)]
    v: Cow<'a, str>,
    rv: u64,
    #[serde(borrow)]
    start: Cow<'a, str>,
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

    /// Reads a token a client sent; a bad one (not base64 or JSON, another version, a key
    /// escaping the resource's prefix) is 400 BadRequest.
    pub(crate) fn decode(token: &str) -> Result<Self, ApiError> {
        let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.trim_end_matches('='))
            .map_err(|_| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
        let wire: Wire<'_> =
            serde_json::from_slice(&bytes).map_err(|_| bad("the token is not JSON"))?;
        if wire.v != VERSION {
            return Err(bad("server does not recognize this encoded key version"));
        }
        // As Kubernetes' storage.DecodeContinue: a token names the revision of its list.
        if wire.rv == 0 {
            return Err(bad(
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ));
        }
        if wire.start.contains("..") || wire.start.starts_with('/') {
            return Err(bad("the key is invalid"));
        }
        Ok(Self {
            revision: wire.rv,
            start: wire.start.into_owned(),
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

    #[test]
    fn a_padded_token_is_accepted() {
        let token = ContinueToken::after(7, "abc").encode();
        let padded = format!("{token}==");
        assert_eq!(ContinueToken::decode(&padded).unwrap().revision, 7);
    }

    #[test]
    fn garbage_other_versions_escaping_keys_and_revision_0_are_400() {
        for token in [
            "not base64!".to_owned(),
            raw("\"just a string\""),
            raw(r#"{"v":"meta.k8s.io/v2","rv":1,"start":"a"}"#),
            raw(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"/etc"}"#),
            raw(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"../x"}"#),
            raw(r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"a"}"#),
            raw(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#),
        ] {
            let err = ContinueToken::decode(&token).unwrap_err();
            assert_eq!(
                (err.code, err.reason.as_str()),
                (400, "BadRequest"),
                "{token}"
            );
            assert!(err.message.starts_with("continue key is not valid: "));
        }
    }
}
