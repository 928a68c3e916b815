//! Responses: JSON bodies, `Status` errors and streamed bodies.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};

use crate::error::ApiError;

/// A response with a JSON body.
pub(crate) fn json_response(code: u16, body: Bytes) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A `Status` error response (with Retry-After when the details ask for it).
pub(crate) fn error_response(err: &ApiError) -> Response {
    let mut resp = json_response(err.code, err.to_body());
    if let Some(secs) = err.retry_after()
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// The `Warning` header value of `text` (code 299, no agent, the text quoted).
fn warning_value(text: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!("299 - {}", serde_json::Value::from(text))).ok()
}

/// Adds a `Warning` header after those `resp` has.
pub(super) fn append_warning(resp: &mut Response, text: &str) {
    if let Some(value) = warning_value(text) {
        resp.headers_mut().append(header::WARNING, value);
    }
}

/// Adds a `Warning` header before those `resp` has: a warning recorded when the request
/// arrived (a deprecated version's), which Kubernetes writes before the handler's own.
pub(super) fn prepend_warning(resp: &mut Response, text: &str) {
    let Some(value) = warning_value(text) else {
        return;
    };
    let later: Vec<HeaderValue> = match resp.headers_mut().entry(header::WARNING) {
        http::header::Entry::Occupied(e) => e.remove_entry_mult().1.collect(),
        http::header::Entry::Vacant(_) => Vec::new(),
    };
    let headers = resp.headers_mut();
    headers.append(header::WARNING, value);
    for v in later {
        headers.append(header::WARNING, v);
    }
}

pub(super) fn stream_response(
    stream: impl futures::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static,
) -> Response {
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}
