//! An endpoint's circuit breaker settings as the API takes and shows them
//! (`"breaker"`), checked against `domain::breaker`'s bounds.

use serde::{Deserialize, Serialize};

use crate::domain::breaker::{Override, Policy, MAX_OPEN_MS};

/// An endpoint's circuit breaker settings; each absent one is the
/// default of `[dispatcher.breaker]`.
#[derive(Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BreakerFields {
    /// Consecutive failed attempts that open the circuit. 1 to 1000.
    #[schema(minimum = 1, maximum = 1000)]
    pub failures: Option<i64>,
    /// How long the circuit stays open before one probe. 1 to 86400000.
    #[schema(minimum = 1, maximum = 86400000)]
    pub open_ms: Option<i64>,
    /// The longest the open period grows to. open_ms to 86400000.
    #[schema(minimum = 1, maximum = 86400000)]
    pub max_open_ms: Option<i64>,
}

impl BreakerFields {
    /// The settings as stored, or the name of the first out of bounds with
    /// what it must be (checked against the defaults it falls back to).
    pub(super) fn to_override(&self, defaults: Policy) -> Result<Override, (&'static str, String)> {
        let failures = self.failures.map(|v| u32::try_from(v).unwrap_or(0));
        let open_ms = self.open_ms.map(|v| u64::try_from(v).unwrap_or(0));
        let max_open_ms = self.max_open_ms.map(|v| u64::try_from(v).unwrap_or(0));
        let own = Override {
            off: false,
            failures,
            open_ms,
            max_open_ms,
        };
        // Each given value on its own, then the whole with the defaults.
        let alone = Policy {
            failures: failures.unwrap_or(1),
            open_ms: open_ms.unwrap_or(1),
            max_open_ms: max_open_ms.unwrap_or(MAX_OPEN_MS),
        };
        let resolved = own.resolve(defaults).expect("not off");
        match alone.invalid().or_else(|| resolved.invalid()) {
            Some(invalid) => Err(invalid),
            None => Ok(own),
        }
    }

    /// The stored settings as the API shows them: `None` when off.
    pub fn of(stored: Override) -> Option<Self> {
        (!stored.off).then(|| Self {
            failures: stored.failures.map(i64::from),
            open_ms: stored.open_ms.map(|v| v as i64),
            max_open_ms: stored.max_open_ms.map(|v| v as i64),
        })
    }
}
