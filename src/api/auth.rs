//! Bearer-token authentication against `api.tokens`. With no tokens
//! configured the API is open, and hookd binds only to loopback.

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::Response;

use super::error::ApiError;
use super::AppState;

pub async fn require_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let tokens = &state.settings.api.tokens;
    if tokens.is_empty() {
        return Ok(next.run(request).await);
    }
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            let (scheme, token) = value.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .ok_or(ApiError::Unauthorized)?;
    // Compare against every token in constant time: no early exit that would
    // time-leak how much of a token matched.
    let matched = tokens.iter().fold(false, |found, token| {
        found | constant_time_eq(token.expose().as_bytes(), presented.as_bytes())
    });
    if !matched {
        return Err(ApiError::Unauthorized);
    }
    Ok(next.run(request).await)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
