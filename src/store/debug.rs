//! `Debug` for the store's rows and inserts that hold custom header values
//! in clear (after opening, before sealing): header names show, values do
//! not, and a per-notification URL's query-string values are masked, since
//! both often carry a receiver's credentials and `Debug` ends up in logs
//! and panics.

use std::fmt;

use super::events::{EventInserted, NewDelivery, NewEvent};
use super::notifications::{NewNotification, Notification};
use crate::domain::fields::MaskedHeaders;
use crate::domain::receiver_url::mask_url;

impl fmt::Debug for Notification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notification")
            .field("id", &self.id)
            .field("endpoint_id", &self.endpoint_id)
            .field("key", &self.key)
            .field("status", &self.status)
            .field("attempts", &self.attempts)
            .field("headers", &MaskedHeaders(Some(&self.headers)))
            .field("url", &self.url.as_deref().map(mask_url))
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for NewNotification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewNotification")
            .field("id", &self.id)
            .field("endpoint_id", &self.endpoint_id)
            .field("key", &self.key)
            .field("headers", &MaskedHeaders(Some(&self.headers)))
            .field("url", &self.url.as_deref().map(mask_url))
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for NewEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewEvent")
            .field("id", &self.id)
            .field("owner", &self.owner)
            .field("event_type", &self.event_type)
            .field("key", &self.key)
            .field("headers", &MaskedHeaders(Some(&self.headers)))
            .field("deliveries", &self.deliveries)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for NewDelivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewDelivery")
            .field("id", &self.id)
            .field("endpoint_id", &self.endpoint_id)
            .field("schedule", &self.schedule)
            .field("next_attempt_at", &self.next_attempt_at)
            .field("pull", &self.pull)
            .field("headers", &MaskedHeaders(self.headers.as_ref()))
            .finish()
    }
}

impl fmt::Debug for EventInserted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventInserted::Created {
                event,
                push,
                headers,
                pulled,
            } => f
                .debug_struct("Created")
                .field("event", event)
                .field("push", push)
                .field("headers", &MaskedHeaders(Some(headers)))
                .field("pulled", pulled)
                .finish(),
            EventInserted::Existing(event) => f.debug_tuple("Existing").field(event).finish(),
            EventInserted::KeyConflict(event) => f.debug_tuple("KeyConflict").field(event).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CREDENTIAL: &str = "Bearer hunter2";

    #[test]
    fn rows_and_inserts_never_print_header_values_or_query_tokens() {
        let headers: std::collections::BTreeMap<String, String> =
            [("Authorization".to_string(), CREDENTIAL.to_string())].into();
        let new = NewNotification {
            id: uuid::Uuid::nil(),
            endpoint_id: uuid::Uuid::nil(),
            key: None,
            event_type: None,
            content_type: "application/json".into(),
            body: Vec::new(),
            headers: headers.clone(),
            schedule: Default::default(),
            deliver_at: chrono::Utc::now(),
            next_attempt_at: chrono::Utc::now(),
            url: Some("https://x.example/hook?token=hunter2".into()),
            pull: false,
            order_key: None,
            ordered: false,
        };
        let event = NewEvent {
            id: uuid::Uuid::nil(),
            owner: None,
            event_type: "order.paid".into(),
            key: None,
            content_type: "application/json".into(),
            body: Vec::new(),
            deliver_at: chrono::Utc::now(),
            headers,
            order_key: None,
            deliveries: Vec::new(),
        };
        for shown in [format!("{new:?}"), format!("{event:?}")] {
            assert!(shown.contains("Authorization"), "{shown}");
            assert!(!shown.contains("hunter2"), "{shown}");
        }
    }
}
