//! Sealing at rest, as a wrapper over any store: signing secrets and custom
//! header values are sealed (`domain::sealed`) on their way into the
//! wrapped store and opened on their way out, each bound to its row and
//! column, so every backend stores only ciphertext and hookd's parts only
//! ever see plaintext. Header names stay in clear, so endpoints can be
//! listed with their values masked.
//!
//! `Sealing<S>` implements each seam `S` implements (`store::seams`); what
//! carries nothing sealed goes straight through. The walk that brings
//! stored values under the current key (`reseal`) runs over a backend's
//! `ResealRows`.

mod breaker;
mod delivery;
mod housekeeping;
mod operations;
mod reads;
pub mod reseal;
mod stats;
#[cfg(test)]
mod tests;
mod values;
mod writes;

use std::sync::Arc;

use crate::clock::Clock;
use crate::domain::sealed::Keyring;
use crate::store::seams::Clocked;

/// A store whose secrets and custom header values are sealed at rest.
/// Cheap to clone when `S` is; clones share the keys (and whether
/// plaintext is still read, `Keyring::refuse_plaintext`).
#[derive(Clone)]
pub struct Sealing<S> {
    inner: S,
    keys: Arc<Keyring>,
}

impl<S: Clocked> Clocked for Sealing<S> {
    fn clock(&self) -> &Clock {
        self.inner.clock()
    }
}

impl<S> Sealing<S> {
    /// `inner`, sealing with `keys` (`secrets.keys`); without keys, values
    /// are stored as given (and sealed values read as empty, saying why).
    pub fn new(inner: S, keys: Keyring) -> Self {
        Self {
            inner,
            keys: Arc::new(keys),
        }
    }

    pub fn keys(&self) -> &Keyring {
        &self.keys
    }

    /// The wrapped store, which holds what is sealed as it is stored.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}
