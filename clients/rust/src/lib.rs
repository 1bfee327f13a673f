//! hookd's REST API, generated from its OpenAPI document by progenitor
//! (`src/generated.rs`; `scripts/clients generate` from the repository's
//! root rewrites it). One async method per operation, named by its
//! `operationId`, on [`Client`]; the API's schemas are in [`types`].
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use hookd_client::{types, Client};
//!
//! let client = Client::new("http://127.0.0.1:8080");
//! let endpoint = client
//!     .create_endpoint(&types::EndpointFields {
//!         uid: Some("shop".parse()?),
//!         url: Some("https://shop.example/hooks/orders".into()),
//!         ..Default::default()
//!     })
//!     .await?
//!     .into_inner();
//! # Ok(())
//! # }
//! ```
//!
//! With `api.tokens` set, build the client on a `reqwest::Client` whose
//! default headers carry the token ([`with_token`]).

// The generated code is progenitor's, formatted by prettyplease: neither
// rustfmt nor clippy is asked to change it.
#[allow(clippy::all, clippy::pedantic, missing_docs, unused)]
mod generated {
    include!("generated.rs");
}
pub use generated::*;

/// A client for the hookd at `base_url` that sends `token` as a bearer
/// token on each request.
pub fn with_token(
    base_url: &str,
    token: &str,
) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
    let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))?;
    value.set_sensitive(true);
    let headers = reqwest::header::HeaderMap::from_iter([(reqwest::header::AUTHORIZATION, value)]);
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .connect_timeout(std::time::Duration::from_secs(15))
        .timeout(std::time::Duration::from_secs(15))
        .build()?;
    Ok(Client::new_with_client(base_url, http))
}
