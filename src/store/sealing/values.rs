//! Sealing and opening the values of one row: each bound to its row and
//! column (`domain::sealed::context`). A value that does not open makes
//! every value of its row read as empty, with the reason beside it.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::Sealing;
use crate::domain::operator_event::OPERATOR_ENDPOINT_ID;
use crate::domain::sealed::{context, Keyring, SealError, PREFIX};
use crate::store::delivery::DeliveryEndpoint;
use crate::store::endpoints::{Endpoint, PreviousSecret};
use crate::store::notifications::Notification;

pub(super) fn seal_secret(keys: &Keyring, endpoint: Uuid, secret: &str) -> String {
    keys.seal(secret, &context::endpoint_secret(endpoint))
        .into_owned()
}

pub(super) fn seal_previous(
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

/// Every value of `headers` sealed (`context` names the place of each);
/// `None` when there is nothing to seal: no keys, or no headers (the
/// common case, which then costs nothing).
pub(super) fn seal_headers(
    keys: &Keyring,
    headers: &BTreeMap<String, String>,
    context: impl Fn(&str) -> String,
) -> Option<BTreeMap<String, String>> {
    if !keys.is_enabled() || headers.is_empty() {
        return None;
    }
    Some(
        headers
            .iter()
            .map(|(name, value)| (name.clone(), keys.seal(value, &context(name)).into_owned()))
            .collect(),
    )
}

/// Opens, in place, every sealed value of `headers`; plaintext stays, until
/// the keys refuse it.
pub(super) fn open_headers(
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

pub(super) fn open_secret(
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

pub(super) fn open_previous(
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
/// `operator.url`); the others are stored, and read, in clear. The operator
/// endpoint's in clear is refused as a plaintext secret is, once the walk
/// left none: only a write around hookd, or by a process without keys,
/// can have put it there, and operator events must not follow it.
pub(super) fn open_url(keys: &Keyring, endpoint: Uuid, url: &mut String) -> Result<(), SealError> {
    if url.starts_with(PREFIX) {
        *url = keys
            .open(url, &context::endpoint_url(endpoint))?
            .into_owned();
    } else if endpoint == OPERATOR_ENDPOINT_ID {
        keys.check_plaintext()?;
    }
    Ok(())
}

/// Opens every sealed value of an endpoint's row in place.
pub(super) fn open_endpoint_values(
    keys: &Keyring,
    id: Uuid,
    secret: &mut String,
    previous: &mut [PreviousSecret],
    headers: &mut BTreeMap<String, String>,
) -> Result<(), SealError> {
    open_secret(keys, id, secret)
        .and_then(|()| open_previous(keys, id, previous))
        .and_then(|()| open_headers(keys, headers, |name| context::endpoint_header(id, name)))
}

/// When a value did not open, every value of its row reads as empty, never
/// as its ciphertext, nor as a refused plaintext (which, once opened values
/// are in place, looks like them).
fn blank(value: &mut String) {
    value.clear();
}

/// An endpoint's values in clear, set aside while the sealed ones are
/// stored: what the store hands back gets them again (opening what was
/// just sealed cannot fail, and would only cost).
pub(super) struct PlainEndpoint {
    secret: String,
    previous_secrets: Vec<PreviousSecret>,
    headers: BTreeMap<String, String>,
}

impl PlainEndpoint {
    /// Seals `endpoint`'s values in place, returning them in clear; `None`
    /// without keys, when nothing changes.
    pub(super) fn seal(keys: &Keyring, endpoint: &mut Endpoint) -> Option<Self> {
        if !keys.is_enabled() {
            return None;
        }
        let id = endpoint.id;
        let secret = seal_secret(keys, id, &endpoint.secret);
        let previous = seal_previous(keys, id, &endpoint.previous_secrets);
        let headers = seal_headers(keys, &endpoint.headers, |name| {
            context::endpoint_header(id, name)
        })
        .unwrap_or_default();
        Some(Self {
            secret: std::mem::replace(&mut endpoint.secret, secret),
            previous_secrets: std::mem::replace(&mut endpoint.previous_secrets, previous),
            headers: std::mem::replace(&mut endpoint.headers, headers),
        })
    }

    /// Puts the values in clear into the row the store handed back.
    pub(super) fn restore(self, endpoint: &mut Endpoint) {
        endpoint.secret = self.secret;
        endpoint.previous_secrets = self.previous_secrets;
        endpoint.headers = self.headers;
    }
}

impl<S> Sealing<S> {
    /// Opens an endpoint read from the store. A value that does not open
    /// is logged and reads as empty, with the reason in `unreadable`.
    pub(super) fn open_endpoint(&self, endpoint: &mut Endpoint) {
        let id = endpoint.id;
        let opened = open_endpoint_values(
            &self.keys,
            id,
            &mut endpoint.secret,
            &mut endpoint.previous_secrets,
            &mut endpoint.headers,
        );
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
    }

    pub(super) fn open_endpoints(&self, mut rows: Vec<Endpoint>) -> Vec<Endpoint> {
        rows.iter_mut().for_each(|e| self.open_endpoint(e));
        rows
    }

    /// Opens what the dispatcher needs of an endpoint, once per claimed
    /// batch. A value that does not open is reported, not fatal: the
    /// endpoint's deliveries then fail with that error as their attempt's.
    pub(super) fn open_delivery_endpoint(&self, endpoint: &mut DeliveryEndpoint) {
        let id = endpoint.id;
        let keys = &*self.keys;
        let opened = open_url(keys, id, &mut endpoint.url).and_then(|()| {
            open_endpoint_values(
                keys,
                id,
                &mut endpoint.secret,
                &mut endpoint.previous_secrets,
                &mut endpoint.headers,
            )
        });
        if let Err(error) = opened {
            tracing::error!(endpoint_id = %endpoint.id, %error, "cannot open the endpoint's secret or headers; its deliveries fail until secrets.keys holds the key");
            endpoint.unreadable = Some(error);
        }
    }

    /// Opens the custom headers of a notification about to be sent (pushed
    /// or handed to a pull consumer). A value that does not open is logged
    /// and returned: that attempt fails with it instead of going out.
    pub(super) fn open_outgoing_headers(
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
    pub(super) fn open_notification(&self, notification: &mut Notification) {
        if notification.headers.is_empty() {
            return;
        }
        let id = notification.id;
        let headers = &mut notification.headers;
        if let Err(error) = open_headers(&self.keys, headers, |name| {
            context::notification_header(id, name)
        }) {
            tracing::error!(notification_id = %id, %error, "cannot open the notification's custom headers; put the key back in secrets.keys");
            headers.values_mut().for_each(blank);
        }
    }

    pub(super) fn open_notifications(&self, mut rows: Vec<Notification>) -> Vec<Notification> {
        rows.iter_mut().for_each(|n| self.open_notification(n));
        rows
    }
}
