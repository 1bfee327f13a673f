//! Pure types and decisions, no I/O: ids, retry schedules, statuses, signing
//! secrets and their sealing at rest, the success rule and validation of
//! producer-supplied names.

pub mod fields;
pub mod id;
pub mod outcome;
pub mod schedule;
pub mod scope;
pub mod sealed;
pub mod secret;
pub mod status;
pub mod success;
