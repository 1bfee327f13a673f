//! Audit events, on the `hookd::audit` target so operators can route them
//! apart from the rest of the log: every admin or secrets action (allowed or
//! refused), every consumer token used off its routes, and requests whose
//! token is missing or unknown.
//!
//! Those last two are sent by whoever reaches the port (or holds a third
//! party's consumer token), as fast as they like, so their lines are
//! bounded: at most `REFUSED_PER_SECOND` a second one by one, then one line
//! saying how many more the second had (written with the next refusal).
//! Everything else is audited one by one: it comes from a configured
//! token.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::Method;
use uuid::Uuid;

use super::auth::Caller;

/// Unauthorized requests audited one by one in a second, at most.
const REFUSED_PER_SECOND: u32 = 100;

/// How many unauthorized requests this second has audited, and how many it
/// only counted.
#[derive(Debug)]
pub struct Refusals {
    window: Mutex<Window>,
}

#[derive(Debug)]
struct Window {
    started: Instant,
    logged: u32,
    counted: u64,
}

impl Default for Refusals {
    fn default() -> Self {
        Self {
            window: Mutex::new(Window {
                started: Instant::now(),
                logged: 0,
                counted: 0,
            }),
        }
    }
}

impl Refusals {
    /// Whether this refusal gets its own line, and how many the window that
    /// just ended only counted (to be said once, now).
    fn admit(&self, now: Instant) -> (bool, u64) {
        let mut window = self.window.lock().unwrap_or_else(|e| e.into_inner());
        let mut ended = 0;
        if now.duration_since(window.started) >= Duration::from_secs(1) {
            ended = std::mem::take(&mut window.counted);
            window.started = now;
            window.logged = 0;
        }
        if window.logged < REFUSED_PER_SECOND {
            window.logged += 1;
            (true, ended)
        } else {
            window.counted += 1;
            (false, ended)
        }
    }

    /// The audit event of a request whose token is missing or unknown
    /// (401): named `unknown` (or `none`), with the first 8 hex digits of
    /// the presented token's SHA-256 to tell repeated attempts apart, never
    /// the token.
    pub fn refused(&self, presented: Option<&str>, method: &Method, route: &str, path: &str) {
        if !self.one_by_one() {
            return;
        }
        let token = if presented.is_some() {
            "unknown"
        } else {
            "none"
        };
        let digest = presented.map(|token| {
            crate::config::digest(token)[..4]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        });
        tracing::info!(
            target: "hookd::audit",
            token,
            digest,
            method = %method,
            route,
            path = bounded(path),
            outcome = "unauthorized",
            "audit"
        );
    }

    /// The audit event of a consumer token used off its routes: a third
    /// party's credential, so bounded like the refusals.
    pub fn consumer_denied(&self, caller: &Caller, method: &Method, route: &str, path: &str) {
        if self.one_by_one() {
            audit(caller, method, route, path, "denied", None);
        }
    }

    /// Whether this refusal gets its own line; says first how many the
    /// window that just ended only counted.
    fn one_by_one(&self) -> bool {
        let (one_by_one, counted) = self.admit(Instant::now());
        if counted > 0 {
            tracing::info!(
                target: "hookd::audit",
                outcome = "refused",
                requests = counted,
                "audit: more refused requests in a second than are audited one by one"
            );
        }
        one_by_one
    }
}

/// One audit event of a known caller.
pub fn audit(
    caller: &Caller,
    method: &Method,
    route: &str,
    path: &str,
    outcome: &str,
    id: Option<Uuid>,
) {
    tracing::info!(
        target: "hookd::audit",
        token = %caller.name,
        method = %method,
        route,
        path,
        outcome,
        id = id.map(|id| id.to_string()),
        "audit"
    );
}

/// The audit event of a request a caller made, by how it was answered:
/// `done` for a success, else `failed`, with the id the handler named.
pub fn audit_answered(
    caller: &Caller,
    method: &Method,
    route: &str,
    path: &str,
    response: &axum::response::Response,
) {
    let outcome = if response.status().is_success() {
        "done"
    } else {
        "failed"
    };
    let id = response
        .extensions()
        .get::<super::auth::Audited>()
        .map(|a| a.0);
    audit(caller, method, route, path, outcome, id);
}

/// A path as logged: at most 256 bytes of it, so a client cannot make the
/// log carry its megabytes.
pub fn bounded(path: &str) -> String {
    crate::domain::problem::cut(path, 256).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_refusals_gets_a_bounded_number_of_lines_and_a_count_of_the_rest() {
        let refusals = Refusals::default();
        let start = Instant::now();
        let one_by_one = (0..10_000).filter(|_| refusals.admit(start).0).count();
        assert_eq!(one_by_one, REFUSED_PER_SECOND as usize);
        // The next second says how many the last one only counted.
        let (logged, counted) = refusals.admit(start + Duration::from_secs(1));
        assert!(logged);
        assert_eq!(counted, 10_000 - u64::from(REFUSED_PER_SECOND));
        assert_eq!(refusals.admit(start + Duration::from_secs(1)).1, 0);
    }
}
