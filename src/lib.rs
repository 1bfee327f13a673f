//! hookd, a webhook notification dispatcher.
//!
//! A producer registers a notification over the REST API (`api`); it is
//! committed to PostgreSQL (`store`), the source of truth, and indexed by due
//! time in Redis (`due`). The dispatcher claims due notifications, signs and
//! POSTs them (`sender`), records every attempt in PostgreSQL and reschedules
//! failures on the endpoint's retry schedule (`domain::schedule`) until the
//! receiver acknowledges or the schedule runs out.
#![forbid(unsafe_code)]

// In the order a notification flows through them.
pub mod config;
pub mod domain;

pub mod api;
// The web console over the API (its own files, served beside it).
pub mod console;
pub mod service;

pub mod store;

pub mod due;
pub mod limiter;

pub mod dispatcher;

pub mod sender;

pub mod copy;
pub mod server;
pub mod startup;
pub mod telemetry;
