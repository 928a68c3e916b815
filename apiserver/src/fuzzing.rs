//! Entry points for `cargo fuzz` (the `fuzzing` feature): the parsers of what clients send in a
//! query string. Hidden and not a stable API; see `fuzz/` at the repository root.

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
