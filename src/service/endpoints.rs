//! Endpoints: their fields validated in one place (a create applies its
//! fields to a default endpoint, a PATCH to the stored one), and every
//! change clears what this process caches about endpoints.

pub use super::breaker_fields::BreakerFields;
pub(super) use super::endpoint_fields::default_endpoint;
pub use super::endpoint_fields::EndpointFields;
use super::portal::headers_stay_under;
use super::{Service, ServiceError};
use serde::Deserialize;

use crate::config::Settings;
use crate::domain::problem::{ErrorCode, Problem};
use crate::domain::pull::Delivery;
use crate::domain::secret::{Signing, SigningSecret};
use crate::store::endpoints::{Endpoint, EndpointRef};
use crate::store::StoreError;

#[derive(Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateSecret {
    /// The new secret, of the kind the endpoint signs with: `whsec_<base64
    /// of 24 to 64 bytes>` (hmac), `whsk_<base64>` (ed25519), or an RSA
    /// private key in PEM (rsa2: required, and only the new key signs: a
    /// form has one `sign`); generated when absent.
    #[schema(
        pattern = "^(whsec_[A-Za-z0-9+/]{32,88}={0,2}|whsk_[A-Za-z0-9+/]{43,86}={0,2}|\\s*-----BEGIN (RSA )?PRIVATE KEY-----[\\s\\S]+)$"
    )]
    pub secret: Option<String>,
    /// How long the current secret keeps signing beside the new one, as a
    /// duration (`"24h"`, `"30m"`, `"0s"` for not at all); at most 7 days.
    /// Default `secrets.rotation_overlap_ms`. Secrets rotated out before
    /// keep their own expiry (at most 5 sign at once).
    #[schema(example = "24h")]
    pub overlap: Option<String>,
}

impl RotateSecret {
    fn overlap(&self, settings: &Settings) -> Result<chrono::Duration, Problem> {
        let Some(text) = &self.overlap else {
            return Ok(chrono::Duration::from_std(settings.rotation_overlap()).unwrap_or_default());
        };
        let invalid = || {
            Problem::invalid(
                ErrorCode::InvalidValue,
                "overlap",
                "overlap is a duration such as \"24h\" or \"0s\", at most 7 days",
            )
        };
        let ms = crate::domain::schedule::parse_duration(text).map_err(|_| invalid())?;
        if ms > crate::config::MAX_ROTATION_OVERLAP.as_millis() as u64 {
            return Err(invalid());
        }
        Ok(chrono::Duration::milliseconds(ms as i64))
    }
}

/// Who asks for a change to an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changer {
    /// A token: the endpoint is its to set.
    Operator,
    /// A portal link that may manage the endpoint (§18): the URL it sets
    /// keeps the operator's custom headers and private networks to the
    /// operator's receivers (`service::portal`).
    Link,
}

fn uid_conflict(error: StoreError) -> ServiceError {
    match error {
        StoreError::Conflict(_) => {
            Problem::conflict(ErrorCode::UidTaken, "another endpoint has this uid").into()
        }
        other => other.into(),
    }
}

impl Service {
    pub async fn create_endpoint(&self, fields: EndpointFields) -> Result<Endpoint, ServiceError> {
        let mut endpoint = default_endpoint(self.now());
        fields.apply(&mut endpoint, &self.settings, &self.guard, None)?;
        let created = self
            .store
            .create_endpoint(&endpoint)
            .await
            .map_err(uid_conflict)?;
        self.forget_cached_endpoints();
        Ok(created)
    }

    pub async fn update_endpoint(
        &self,
        by: &EndpointRef,
        fields: EndpointFields,
        changer: Changer,
    ) -> Result<Endpoint, ServiceError> {
        if fields.secret.is_some() {
            return Err(Problem::invalid(
                ErrorCode::InvalidValue,
                "secret",
                "change a secret with POST /v1/endpoints/{id}/secret/rotate, which keeps the old one signing for secrets.rotation_overlap_ms (or the overlap asked for)",
            )
            .into());
        }
        let settings = self.settings.clone();
        let guard = self.guard.clone();
        let now = self.now();
        let switches = fields.delivery.is_some();
        let may_enable = matches!(fields.disabled, Some(Some(false) | None));
        let moved_by_link = match changer {
            Changer::Link => fields.url().map(str::to_string),
            Changer::Operator => None,
        };
        if let Some(url) = &moved_by_link {
            let current = self
                .store
                .find_endpoint(by)
                .await?
                .ok_or_else(|| Problem::not_found("endpoint"))?;
            self.stays_in_its_networks(&current, url).await?;
        }
        let updated = self
            .store
            .modify_endpoint(
                by,
                Box::new(|e| {
                    let before = moved_by_link
                        .is_some()
                        .then(|| (e.url.clone(), !e.headers.is_empty()));
                    // Cloned: the store applies the change again to the
                    // row as it reads it when it tries again.
                    fields.clone().apply(e, &settings, &guard, Some(now))?;
                    match before {
                        Some((own, true)) => headers_stay_under(own.as_deref(), e.url.as_deref()),
                        _ => Ok(()),
                    }
                }),
            )
            .await
            .map_err(uid_conflict)?
            .ok_or_else(|| Problem::not_found("endpoint"))??;
        self.forget_cached_endpoints();
        if switches {
            self.follow_delivery(&updated).await?;
        }
        if may_enable && updated.delivery == Delivery::Pull {
            // What it held is offered now (the store moved its due times
            // on by the time it was disabled); its push backlog was
            // marked for the index in the same commit.
            self.signal_pull(&[updated.id]).await;
        }
        Ok(updated)
    }

    /// Soft-deletes the endpoint and cancels its pending notifications;
    /// returns how many it cancelled.
    pub async fn delete_endpoint(&self, by: &EndpointRef) -> Result<usize, ServiceError> {
        let cancelled = self
            .store
            .delete_endpoint(by)
            .await?
            .ok_or_else(|| Problem::not_found("endpoint"))?;
        self.forget_cached_endpoints();
        // Its consumer token stops working here at once.
        self.reread_consumer_tokens().await;
        self.unindex(&cancelled).await;
        Ok(cancelled.len())
    }

    /// A new signing secret (given or generated); the current one keeps
    /// signing for the overlap.
    pub async fn rotate_secret(
        &self,
        by: &EndpointRef,
        request: RotateSecret,
    ) -> Result<Endpoint, ServiceError> {
        let overlap = request.overlap(&self.settings)?;
        let given = match request.secret {
            Some(text) => Some(SigningSecret::parse(&text).map_err(|e| {
                Problem::invalid(ErrorCode::InvalidSecret, "secret", e.to_string())
            })?),
            None => None,
        };
        let now = self.now();
        let rotated = self
            .store
            .modify_endpoint(
                by,
                Box::new(move |e| {
                    // A rotation keeps the endpoint's kind of signing; a
                    // PATCH of `signing` switches it.
                    let signing = Signing::of(&e.secret);
                    let new_secret = match given.clone() {
                        Some(given) if given.signing() != signing => {
                            return Err(Problem::invalid(
                                ErrorCode::InvalidSecret,
                                "secret",
                                format!(
                                    "the endpoint signs with {}: its new key is of the same kind (switch kinds with PATCH {{\"signing\": \"{}\"}})",
                                    signing.as_str(),
                                    given.signing().as_str()
                                ),
                            ))
                        }
                        Some(given) => given,
                        None => SigningSecret::generate_for(signing).ok_or_else(|| {
                            Problem::invalid(
                                ErrorCode::MissingField,
                                "secret",
                                "an rsa2 endpoint's new key is your own: give it as `secret` (an RSA private key in PEM)",
                            )
                        })?,
                    };
                    e.rotate_secret(new_secret.as_str().to_string(), now, overlap);
                    Ok(())
                }),
            )
            .await?
            .ok_or_else(|| Problem::not_found("endpoint"))??;
        self.forget_cached_endpoints();
        Ok(rotated)
    }

    /// Stops every rotated-out secret signing now.
    pub async fn end_overlap(&self, by: &EndpointRef) -> Result<Endpoint, ServiceError> {
        let ended = self
            .store
            .modify_endpoint(
                by,
                Box::new(|e| {
                    e.end_overlap();
                    Ok(())
                }),
            )
            .await?
            .ok_or_else(|| Problem::not_found("endpoint"))??;
        self.forget_cached_endpoints();
        Ok(ended)
    }
}
