//! Integration tests against real PostgreSQL and Redis (see scripts/test).

#[macro_use]
mod backends;
mod helpers;
mod openapi;
mod receiver;

mod api_bad_input;
mod api_endpoints;
mod api_notifications;
mod cli;
mod conformance;
mod degrade;
mod delivery;
mod due_conformance;
mod due_index;
mod embedded;
mod endpoint_health;
mod endpoint_version;
mod events;
mod guard;
mod handoff;
mod hostile_input;
mod logs;
mod masked_urls;
mod operator;
mod private_networks;
mod pull;
mod pull_expiry;
mod pull_leases;
mod redis_ha;
mod resilience;
mod sealing;
mod secrets;
mod secrets_at_rest;
mod security;
mod server_limits;
mod sqlite_delivery;
mod sqlite_endpoints;
mod sqlite_health;
mod sqlite_reads;
mod sqlite_store;
mod sqlite_writes;
mod store;
mod stores_down;
mod tokens;
mod transport;
