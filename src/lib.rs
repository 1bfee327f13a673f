//! hookd, a webhook notification dispatcher.
//!
//! A producer registers a notification over the REST API (`api`); it is
//! committed to the store (`store`), the source of truth, and indexed by
//! due time (`due`). The dispatcher claims due notifications, signs and
//! POSTs them (`sender`), records every attempt in the store and
//! reschedules failures on the endpoint's retry schedule
//! (`domain::schedule`) until the receiver acknowledges or the schedule
//! runs out. In server mode the store is PostgreSQL and the index Redis,
//! shared by any number of processes; in the embedded mode (the default)
//! the store is one SQLite file and the index lives in the one process.
//!
//! # Layout
//!
//! - `domain`: the rules, with no I/O (schedules, statuses and their
//!   transitions, the breaker, rate limits, retention, sealing, validation).
//! - `api`: the REST API (axum), one file per resource; `console`: the web
//!   console's files, served beside it.
//! - `service`: the write path under the API (validation, fan-out, group
//!   commit) and the reads it shapes.
//! - `store`: neutral model types and one trait per user of the store
//!   (`store::seams`, `store::breaker`, `store::stats`); backends
//!   `store::postgres` and `store::sqlite`; wrappers `store::sealing` and
//!   `store::replica`.
//! - `due`: the due index (`due::redis`, `due::memory`); `limiter`: rate
//!   limits shared as widely as the index, composed beside it by
//!   `startup` (`limiter` knows `due`, not the other way round).
//! - `dispatcher`: claim, screen, deliver, record, and housekeeping;
//!   `sender`: one attempt over HTTP.
//! - `clock`: the one clock every rule reads, in both modes.
//! - `telemetry`: logs, Prometheus metrics, and traces (W3C Trace Context
//!   kept with notifications, spans exported over OTLP/HTTP).
//! - `startup`: composes the parts for a mode and a role; `config`,
//!   `server`, `copy` (`hookd copy`), `cli` (the command line, which
//!   `main.rs` calls).
//!
//! The server mode's parts (`store::postgres`, `due::redis`,
//! `limiter::redis`, `copy`) build with the `server` feature, a default
//! one; without it (scripts/run's build) hookd runs embedded only.
//!
//! `docs/architecture.md` draws the layers and both modes on a page.
#![forbid(unsafe_code)]

// In the order a notification flows through them.
// The one clock every rule reads (both stores, the dispatcher, the API).
pub mod clock;
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

#[cfg(feature = "server")]
pub mod copy;
pub mod server;
pub mod startup;
// The command line (`hookd …`), which main.rs runs.
pub mod cli;
pub mod telemetry;
