//! hookd's REST API, generated from its OpenAPI document by progenitor
//! (`src/generated.rs`; `scripts/clients generate` from the repository's
//! root rewrites it). One async method per operation, named by its
//! `operationId`, on [`Client`]; the API's schemas are in [`types`].
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use hookd_client::types;
//!
//! let client = hookd_client::with_token("http://127.0.0.1:8080", "a-token-of-api-tokens")?;
//! let uid: types::EndpointFieldsUid = "shop".parse()?;
//! let url: types::EndpointFieldsUrl = "https://shop.example/hooks/orders".parse()?;
//! let endpoint = client
//!     .create_endpoint()
//!     .body_map(|body| body.uid(Some(uid)).url(Some(url)))
//!     .send()
//!     .await?
//!     .into_inner();
//! # Ok(())
//! # }
//! ```
//!
//! With `api.tokens` set, [`with_token`] builds the client; for hookd's
//! open mode (no tokens, loopback), [`open`].

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
    client(base_url, Some(value))
}

/// A client for a hookd in open mode (no `api.tokens`, on loopback).
pub fn open(base_url: &str) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
    client(base_url, None)
}

/// Every request says `Content-Type: application/json`, a body-less POST
/// (a retry, a cancel) too: in open mode hookd answers 415 to a POST
/// without it (a web page's form cannot send it). The total timeout
/// outlasts the longest pull wait (`wait` of `/pull`, at most 20 s).
fn client(
    base_url: &str,
    authorization: Option<reqwest::header::HeaderValue>,
) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    if let Some(value) = authorization {
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .connect_timeout(std::time::Duration::from_secs(15))
        .timeout(std::time::Duration::from_secs(60))
        .build()?;
    Ok(Client::new_with_client(base_url, http))
}

/// Changes an endpoint with `changes` sent as written:
/// `PATCH /v1/endpoints/{endpoint}`. The generated `update_endpoint` leaves
/// out a field set to `None`, so it cannot send `null`, which sets a field
/// back to its default (`rate_limit`, `filter`, `fresh_share`, `headers`…);
/// this can.
///
/// ```no_run
/// # async fn example(client: &hookd_client::Client) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// let changes = serde_json::json!({"rate_limit": null});
/// let endpoint = hookd_client::update_endpoint_json(client, "shop", &changes).await?;
/// assert!(endpoint.rate_limit.is_none());
/// # Ok(())
/// # }
/// ```
pub async fn update_endpoint_json(
    client: &Client,
    endpoint: &str,
    changes: &serde_json::Value,
) -> Result<types::EndpointView, Error<types::ErrorBody>> {
    let url = format!(
        "{}/v1/endpoints/{}",
        client.baseurl(),
        progenitor_client::encode_path(endpoint)
    );
    let response = client
        .client()
        .patch(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .header("api-version", <Client as ClientInfo<()>>::api_version())
        .json(changes)
        .send()
        .await?;
    if response.status().is_success() {
        Ok(
            ResponseValue::<types::EndpointView>::from_response(response)
                .await?
                .into_inner(),
        )
    } else {
        Err(Error::ErrorResponse(
            ResponseValue::from_response(response).await?,
        ))
    }
}
