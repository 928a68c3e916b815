//! The HTTP side: request URLs, sending a request, and mapping its errors.

use kube_client::Client;
use kube_client::client::Body;
use kube_core::Status;

use crate::lister_watcher::{ListOptions, ListWatchError};

/// Appends `key=value`, form-encoded, to a query string.
fn push_pair(query: &mut String, key: &str, value: &str) {
    query.push(if query.contains('?') { '&' } else { '?' });
    query.push_str(key);
    query.push('=');
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                query.push(char::from(b));
            }
            b' ' => query.push('+'),
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                query.push('%');
                query.push(char::from(HEX[usize::from(b >> 4)]));
                query.push(char::from(HEX[usize::from(b & 15)]));
            }
        }
    }
}

/// The URL of a list (`watch` false) or watch request with `options`.
pub(crate) fn request_url(path: &str, options: &ListOptions, watch: bool) -> String {
    let mut url = path.to_owned();
    if watch {
        push_pair(&mut url, "watch", "true");
    }
    if let Some(s) = &options.label_selector {
        push_pair(&mut url, "labelSelector", s);
    }
    if let Some(s) = &options.field_selector {
        push_pair(&mut url, "fieldSelector", s);
    }
    if let Some(l) = options.limit {
        push_pair(&mut url, "limit", &l.to_string());
    }
    if let Some(c) = &options.continue_token {
        push_pair(&mut url, "continue", c);
    }
    if let Some(rv) = &options.resource_version {
        push_pair(&mut url, "resourceVersion", rv);
    }
    if let Some(m) = options.resource_version_match {
        push_pair(&mut url, "resourceVersionMatch", m.as_str());
    }
    if let Some(t) = options.timeout_seconds {
        push_pair(&mut url, "timeoutSeconds", &t.to_string());
    }
    if options.allow_watch_bookmarks {
        push_pair(&mut url, "allowWatchBookmarks", "true");
    }
    if let Some(s) = options.send_initial_events {
        push_pair(
            &mut url,
            "sendInitialEvents",
            if s { "true" } else { "false" },
        );
    }
    url
}

pub(super) fn map_error(err: kube_client::Error) -> ListWatchError {
    use kube_client::Error as E;
    match err {
        E::Api(status) => ListWatchError::Api(status),
        E::HyperError(e) => ListWatchError::Connection(Box::new(e)),
        E::Service(e) => ListWatchError::Connection(e),
        E::ReadEvents(e) => ListWatchError::Connection(Box::new(e)),
        E::SerdeError(e) => ListWatchError::decode_failed("response", e),
        other => ListWatchError::Other(Box::new(other)),
    }
}

pub(super) fn join_error(e: tokio::task::JoinError) -> ListWatchError {
    ListWatchError::Other(Box::new(e))
}

/// Sends a GET and returns the response body, or the server's `Status` for an error answer.
pub(super) async fn send(
    client: &Client,
    url: String,
    accept: &'static str,
    identity: bool,
) -> Result<Body, ListWatchError> {
    let mut request = http::Request::get(url).header(http::header::ACCEPT, accept);
    if identity {
        request = request.header(http::header::ACCEPT_ENCODING, "identity");
    }
    let request = request
        .body(Body::empty())
        .map_err(|e| ListWatchError::Other(Box::new(e)))?;
    let response = client.send(request).await.map_err(map_error)?;
    let code = response.status();
    if code.is_client_error() || code.is_server_error() {
        let body = response
            .into_body()
            .collect_bytes()
            .await
            .map_err(map_error)?;
        return Err(ListWatchError::from(error_status(code, &body)));
    }
    Ok(response.into_body())
}

/// The `Status` of an error answer: its body if it is one, else one made from the HTTP code
/// and the body's text (a proxy's or load balancer's answer, for example).
pub(super) fn error_status(code: http::StatusCode, body: &[u8]) -> Status {
    serde_json::from_slice::<Status>(body)
        .ok()
        .filter(|s| s.code != 0 || !s.reason.is_empty())
        .unwrap_or_else(|| {
            Status::failure(String::from_utf8_lossy(body).trim(), "").with_code(code.as_u16())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lister_watcher::ResourceVersionMatch;

    #[test]
    fn list_and_watch_urls_carry_every_option_form_encoded() {
        let options = ListOptions {
            label_selector: Some("app in (a,b),tier!=x".into()),
            limit: Some(500),
            resource_version: Some("0".into()),
            ..ListOptions::default()
        };
        assert_eq!(
            request_url("/api/v1/pods", &options, false),
            "/api/v1/pods?labelSelector=app+in+%28a%2Cb%29%2Ctier%21%3Dx&limit=500&resourceVersion=0"
        );
        let watch = ListOptions {
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            send_initial_events: Some(true),
            allow_watch_bookmarks: true,
            timeout_seconds: Some(301),
            ..ListOptions::default()
        };
        assert_eq!(
            request_url("/api/v1/namespaces/ns/pods", &watch, true),
            "/api/v1/namespaces/ns/pods?watch=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=301&allowWatchBookmarks=true&sendInitialEvents=true"
        );
    }
}
