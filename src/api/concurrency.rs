//! At most `api.max_concurrent_per_credential` reads (GET, HEAD) under way
//! per credential; past it 429 `too_many_requests` with `Retry-After: 1`.
//! A credential is what `auth` made the caller: a token's name, a portal
//! link's endpoint or owner, a consumer token's endpoint, or the open mode
//! (`local`). One portal link looping slow lists then holds a few of the
//! store's connections and threads, never all of them: the other callers'
//! reads and writes go on (issue #47).
//!
//! The counts live in one map keyed by the caller's name, holding only
//! the credentials with a request under way: an entry goes when its count
//! returns to zero, so the map is bounded by the requests in flight.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;

use super::auth::Caller;
use super::error::ApiError;
use super::AppState;

/// Requests under way, by credential.
#[derive(Debug, Default)]
pub struct InFlight {
    counts: Mutex<HashMap<Arc<str>, usize>>,
}

/// One admitted request: its credential's count goes down when dropped
/// (the response sent, or the request abandoned).
pub struct Slot {
    of: Arc<InFlight>,
    credential: Arc<str>,
}

impl InFlight {
    /// A slot for `credential` unless it has `max` already.
    pub fn enter(self: &Arc<Self>, credential: &Arc<str>, max: usize) -> Option<Slot> {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let count = counts.entry(credential.clone()).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Slot {
            of: self.clone(),
            credential: credential.clone(),
        })
    }

    /// How many credentials have a request under way.
    pub fn credentials(&self) -> usize {
        self.counts.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.of.counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = counts.get_mut(&self.credential) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.credential);
            }
        }
    }
}

/// The layer, inside `auth::authorize` (which put the `Caller` there).
pub(super) async fn limit(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return Ok(next.run(request).await);
    }
    let Some(caller) = request.extensions().get::<Caller>() else {
        return Ok(next.run(request).await);
    };
    let max = state.settings.api.max_concurrent_per_credential;
    let Some(_slot) = state.in_flight.enter(&caller.name, max) else {
        metrics::counter!("hookd_api_concurrency_refused_total").increment(1);
        return Err(ApiError::TooManyRequests);
    };
    Ok(next.run(request).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_gets_its_max_and_the_map_empties_behind_it() {
        let in_flight = Arc::new(InFlight::default());
        let a: Arc<str> = "portal:endpoint:a".into();
        let b: Arc<str> = "admin".into();
        let held: Vec<Slot> = (0..3).map(|_| in_flight.enter(&a, 3).unwrap()).collect();
        assert!(in_flight.enter(&a, 3).is_none());
        let other = in_flight.enter(&b, 3).unwrap();
        assert_eq!(in_flight.credentials(), 2);
        drop(held);
        assert_eq!(in_flight.credentials(), 1);
        assert!(in_flight.enter(&a, 3).is_some());
        drop(other);
        assert_eq!(in_flight.credentials(), 0);
    }
}
