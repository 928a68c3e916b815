//! Entry points for `cargo fuzz` (the `fuzzing` feature): the parsers of what clients send in a
//! query string or a write's body. Hidden and not a stable API; see `fuzz/` at the repository root.

use crate::error::ApiError;

/// Parses a field selector as a list or watch does; a bad one is a 400. Must never panic.
pub fn field_selector(selector: &str) -> Result<usize, ApiError> {
    crate::filter::parse_field_selector(selector).map(|fields| fields.len())
}

/// Decodes a continue token as a list does; a bad one is a 400. Returns the token's revision.
/// Must never panic.
pub fn continue_token(token: &str) -> Result<u64, ApiError> {
    crate::continue_token::ContinueToken::decode(token).map(|t| t.revision)
}

/// Decodes a write's JSON body as the server's strict decoding does: the value and the paths of
/// its duplicate fields, or serde_json's error. Must never panic.
pub fn request_body(body: &[u8]) -> Result<(serde_json::Value, Vec<String>), serde_json::Error> {
    crate::validation::from_slice_with_duplicates(body)
}
