//! Sealing at the store's edge: signing secrets and custom header values are
//! sealed (`domain::sealed`) just before they are written and opened just
//! after they are read, each bound to its row and column. Header names stay
//! in clear, so endpoints can be listed with their values masked.

use std::borrow::Cow;
use std::collections::BTreeMap;

use uuid::Uuid;

use super::PgStore;
use crate::domain::sealed::{context, Keyring, SealError, PREFIX};
use crate::store::delivery::DeliveryEndpoint;
use crate::store::endpoints::Endpoint;
use crate::store::endpoints::PreviousSecret;
use crate::store::notifications::Notification;

/// An endpoint's sealed columns, ready to bind.
pub(crate) struct SealedEndpoint {
    pub secret: String,
    pub previous_secrets: sqlx::types::Json<Vec<PreviousSecret>>,
    pub headers: sqlx::types::Json<BTreeMap<String, String>>,
}

pub(crate) fn seal_secret(keys: &Keyring, endpoint: Uuid, secret: &str) -> String {
    keys.seal(secret, &context::endpoint_secret(endpoint))
        .into_owned()
}

pub(crate) fn seal_previous(
    keys: &Keyring,
    endpoint: Uuid,
    previous: &[PreviousSecret],
) -> Vec<PreviousSecret> {
    let context = context::endpoint_previous_secret(endpoint);
    previous
        .iter()
        .map(|p| PreviousSecret {
            secret: keys.seal(&p.secret, &context).into_owned(),
            expires_at: p.expires_at,
        })
        .collect()
}

/// Seals every value of `headers`; `context` names the place of each.
pub(crate) fn seal_headers<'a>(
    keys: &Keyring,
    headers: &'a BTreeMap<String, String>,
    context: impl Fn(&str) -> String,
) -> Cow<'a, BTreeMap<String, String>> {
    if !keys.is_enabled() || headers.is_empty() {
        return Cow::Borrowed(headers);
    }
    Cow::Owned(
        headers
            .iter()
            .map(|(name, value)| (name.clone(), keys.seal(value, &context(name)).into_owned()))
            .collect(),
    )
}

/// Opens, in place, every sealed value of `headers`; plaintext stays, until
/// the keys refuse it.
pub(crate) fn open_headers(
    keys: &Keyring,
    headers: &mut BTreeMap<String, String>,
    context: impl Fn(&str) -> String,
) -> Result<(), SealError> {
    for (name, value) in headers.iter_mut() {
        if value.starts_with(PREFIX) {
            *value = keys.open(value, &context(name))?.into_owned();
        } else {
            keys.check_plaintext()?;
        }
    }
    Ok(())
}

pub(crate) fn open_secret(
    keys: &Keyring,
    endpoint: Uuid,
    secret: &mut String,
) -> Result<(), SealError> {
    if secret.starts_with(PREFIX) {
        *secret = keys
            .open(secret, &context::endpoint_secret(endpoint))?
            .into_owned();
    } else {
        keys.check_plaintext()?;
    }
    Ok(())
}

pub(crate) fn open_previous(
    keys: &Keyring,
    endpoint: Uuid,
    previous: &mut [PreviousSecret],
) -> Result<(), SealError> {
    let context = context::endpoint_previous_secret(endpoint);
    for p in previous.iter_mut() {
        if p.secret.starts_with(PREFIX) {
            p.secret = keys.open(&p.secret, &context)?.into_owned();
        } else {
            keys.check_plaintext()?;
        }
    }
    Ok(())
}

/// Opens an endpoint URL that is sealed (the operator endpoint's,
/// `operator.url`); the others are stored, and read, in clear.
pub(crate) fn open_url(keys: &Keyring, endpoint: Uuid, url: &mut String) -> Result<(), SealError> {
    if url.starts_with(PREFIX) {
        *url = keys
            .open(url, &context::endpoint_url(endpoint))?
            .into_owned();
    }
    Ok(())
}

/// When a value did not open, every value of its row reads as empty, never
/// as its ciphertext, nor as a refused plaintext (which, once opened values
/// are in place, looks like them).
fn blank(value: &mut String) {
    value.clear();
}

impl PgStore {
    pub(crate) fn seal_endpoint(&self, endpoint: &Endpoint) -> SealedEndpoint {
        let id = endpoint.id;
        SealedEndpoint {
            secret: seal_secret(&self.keys, id, &endpoint.secret),
            previous_secrets: sqlx::types::Json(seal_previous(
                &self.keys,
                id,
                &endpoint.previous_secrets,
            )),
            headers: sqlx::types::Json(
                seal_headers(&self.keys, &endpoint.headers, |name| {
                    context::endpoint_header(id, name)
                })
                .into_owned(),
            ),
        }
    }

    /// Opens an endpoint read from the table. A value that does not open
    /// is logged and reads as empty, with the reason in `unreadable`.
    pub(crate) fn open_endpoint(&self, mut endpoint: Endpoint) -> Endpoint {
        let id = endpoint.id;
        let keys = &self.keys;
        let opened = open_secret(keys, id, &mut endpoint.secret)
            .and_then(|()| open_previous(keys, id, &mut endpoint.previous_secrets))
            .and_then(|()| {
                open_headers(keys, &mut endpoint.headers, |name| {
                    context::endpoint_header(id, name)
                })
            });
        if let Err(error) = opened {
            tracing::error!(endpoint_id = %id, %error, "cannot open the endpoint's secret or headers; put the key back in secrets.keys");
            blank(&mut endpoint.secret);
            endpoint
                .previous_secrets
                .iter_mut()
                .for_each(|p| blank(&mut p.secret));
            endpoint.headers.values_mut().for_each(blank);
            endpoint.unreadable = Some(error);
        }
        endpoint
    }

    pub(crate) fn open_endpoints(&self, rows: Vec<Endpoint>) -> Vec<Endpoint> {
        rows.into_iter().map(|e| self.open_endpoint(e)).collect()
    }

    /// Opens what the dispatcher needs of an endpoint, once per claimed
    /// batch. A value that does not open is reported, not fatal: the
    /// endpoint's deliveries then fail with that error as their attempt's.
    pub(crate) fn open_delivery_endpoint(
        &self,
        endpoint: &mut DeliveryEndpoint,
    ) -> Result<(), SealError> {
        let id = endpoint.id;
        let keys = &self.keys;
        open_url(keys, id, &mut endpoint.url)?;
        open_secret(keys, id, &mut endpoint.secret)?;
        open_previous(keys, id, &mut endpoint.previous_secrets)?;
        open_headers(keys, &mut endpoint.headers, |name| {
            context::endpoint_header(id, name)
        })
    }

    /// Opens the custom headers of a notification about to be sent (pushed
    /// or handed to a pull consumer). A value that does not open is logged
    /// and returned: that attempt fails with it instead of going out.
    pub(crate) fn open_outgoing_headers(
        &self,
        id: Uuid,
        headers: &mut BTreeMap<String, String>,
    ) -> Option<SealError> {
        if headers.is_empty() {
            return None;
        }
        let error = open_headers(&self.keys, headers, |name| {
            context::notification_header(id, name)
        })
        .err()?;
        tracing::error!(notification_id = %id, %error, "cannot open the notification's custom headers");
        Some(error)
    }

    /// Opens a notification's custom headers for the API. A value that does
    /// not open is logged and reads as empty (the dispatcher, which reads
    /// them itself, fails the attempt instead).
    pub(crate) fn open_notification(&self, mut notification: Notification) -> Notification {
        if !notification.headers.is_empty() {
            let id = notification.id;
            let headers = &mut notification.headers;
            if let Err(error) = open_headers(&self.keys, headers, |name| {
                context::notification_header(id, name)
            }) {
                tracing::error!(notification_id = %id, %error, "cannot open the notification's custom headers; put the key back in secrets.keys");
                headers.values_mut().for_each(blank);
            }
        }
        notification
    }

    pub(crate) fn open_notifications(&self, rows: Vec<Notification>) -> Vec<Notification> {
        rows.into_iter()
            .map(|n| self.open_notification(n))
            .collect()
    }
}
