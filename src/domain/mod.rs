//! Pure types and decisions, no I/O: lists bounded as they are parsed,
//! ids, retry schedules, statuses and the state machine, endpoint health,
//! operator events, signing secrets and their sealing at rest, the success
//! rule, subscriptions, validation of producer-supplied names and the
//! problems they raise, the rules of pull consumption and the time of its
//! leases, which receiver URLs an endpoint's credentials go to and how URLs
//! show to callers without secrets, when two JSON payloads are the same
//! value, the transitions a caller asks (retry, cancel), retention's
//! choice, the signed tokens of portal links, how long a throttled
//! endpoint's successes wait to be recorded together, and why a pending
//! notification waits, what an attempt's row keeps of its headers, and which due index
//! owns a server-mode database.

pub mod attempt_headers;
pub mod bounded;
pub mod breaker;
pub mod bulk;
pub mod created;
pub mod fields;
pub mod heal;
pub mod health;
pub mod id;
pub mod index_owner;
pub mod jitter;
pub mod json_keys;
pub mod json_value;
pub mod lane;
pub mod lateness;
pub mod lease;
pub mod minute_stats;
pub mod operation;
pub mod operator_event;
pub mod ordering;
pub mod outcome;
pub mod partition;
pub mod payload_filter;
pub mod portal;
pub mod problem;
pub mod pull;
pub mod rate;
pub mod receiver_url;
pub mod record_hold;
pub mod retention;
pub mod schedule;
pub mod scope;
pub mod sealed;
pub mod secret;
pub mod shard;
pub mod stats_window;
pub mod status;
pub mod subscription;
pub mod success;
pub mod transition;
pub mod validate;
pub mod waiting;
