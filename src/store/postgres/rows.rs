//! How PostgreSQL's rows and columns become the store's neutral types: the
//! text columns of statuses, outcomes and delivery modes, `jsonb` columns
//! and arrays. The model types in `store/` know nothing of this.

use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgHasArrayType, PgRow, PgTypeInfo, PgValueRef};
use sqlx::types::Json;
use sqlx::{Decode, Encode, FromRow, Postgres, Row, Type};

use crate::domain::ordering::{KeyOrdering, OnFailure};
use crate::domain::outcome::OutcomeKind;
use crate::domain::pull::Delivery;
use crate::domain::status::Status;
use crate::store::attempts::Attempt;
use crate::store::delivery::{DeliveryEndpoint, DueNotification, Head};
use crate::store::endpoints::Endpoint;
use crate::store::events::{Event, Subscriber};
use crate::store::health::FailingEndpoint;
use crate::store::notifications::Notification;
use crate::store::pull::{Leased, Taken};

/// A domain enum stored as its lowercase name in a `text` column (the
/// schema's CHECK constraints list the same names).
macro_rules! text_enum {
    ($ty:ty, $all:expr) => {
        impl Type<Postgres> for $ty {
            fn type_info() -> PgTypeInfo {
                <&str as Type<Postgres>>::type_info()
            }
            fn compatible(ty: &PgTypeInfo) -> bool {
                <&str as Type<Postgres>>::compatible(ty)
            }
        }
        impl PgHasArrayType for $ty {
            fn array_type_info() -> PgTypeInfo {
                <&str as PgHasArrayType>::array_type_info()
            }
        }
        impl Encode<'_, Postgres> for $ty {
            fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
                <&str as Encode<Postgres>>::encode(self.as_str(), buf)
            }
        }
        impl<'r> Decode<'r, Postgres> for $ty {
            fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
                let text = <&str as Decode<Postgres>>::decode(value)?;
                $all.into_iter()
                    .find(|v| v.as_str() == text)
                    .ok_or_else(|| format!("unknown {} {text:?}", stringify!($ty)).into())
            }
        }
    };
}

text_enum!(Status, Status::ALL);
text_enum!(
    OutcomeKind,
    [
        OutcomeKind::Succeeded,
        OutcomeKind::Retry,
        OutcomeKind::Failed
    ]
);
text_enum!(Delivery, [Delivery::Push, Delivery::Pull]);
text_enum!(KeyOrdering, KeyOrdering::ALL);
text_enum!(OnFailure, OnFailure::ALL);

/// One column into one field: `json` for a `jsonb` column (`json_or_null`
/// when it may be NULL), `skip` for a
/// field no column holds, `optional` for a column some queries leave out,
/// `held` for whether a lease still runs (`domain::lease::held`, on the
/// row's `lease_id`, `next_attempt_at` and the clock read with it,
/// `read_at`).
macro_rules! column {
    ($row:ident, $field:ident) => {
        $row.try_get(stringify!($field))?
    };
    ($row:ident, $field:ident, json) => {
        $row.try_get::<Json<_>, _>(stringify!($field))?.0
    };
    ($row:ident, $field:ident, json_or_null) => {
        $row.try_get::<Option<Json<_>>, _>(stringify!($field))?
            .map(|json| json.0)
    };
    ($row:ident, $field:ident, skip) => {
        Default::default()
    };
    ($row:ident, $field:ident, held) => {{
        let lease = crate::domain::lease::Lease::stored(
            column!($row, lease_id, optional),
            None,
            $row.try_get("next_attempt_at")?,
        );
        // A row read without the clock (an insert's RETURNING) is new, and
        // no lease is held on it.
        let read_at: Option<chrono::DateTime<chrono::Utc>> = column!($row, read_at, optional);
        read_at.is_some_and(|now| crate::domain::lease::held(lease, now))
    }};
    ($row:ident, $field:ident, breaker) => {
        crate::domain::breaker::Override::stored(
            $row.try_get("breaker_off")?,
            $row.try_get("breaker_failures")?,
            $row.try_get("breaker_open_ms")?,
            $row.try_get("breaker_max_open_ms")?,
        )
    };
    ($row:ident, $field:ident, optional) => {
        match $row.try_get(stringify!($field)) {
            Ok(value) => value,
            Err(sqlx::Error::ColumnNotFound(_)) => Default::default(),
            Err(error) => return Err(error),
        }
    };
}

/// A model type read from a row by its columns' names.
macro_rules! from_row {
    ($ty:ident { $($field:ident $(: $kind:ident)?),+ $(,)? }) => {
        impl<'r> FromRow<'r, PgRow> for $ty {
            fn from_row(row: &'r PgRow) -> Result<Self, sqlx::Error> {
                Ok($ty { $($field: column!(row, $field $(, $kind)?)),+ })
            }
        }
    };
}

from_row!(Attempt {
    notification_id,
    number,
    started_at,
    duration_ms,
    status_code,
    response_body,
    error_code,
    error_message,
    outcome,
    response_headers,
    sent_headers,
    retried,
});

from_row!(DueNotification {
    id,
    endpoint_id,
    key,
    event_type,
    content_type,
    body,
    headers: json,
    schedule_ms,
    schedule_name,
    status,
    attempts,
    series_start,
    released_by_circuit,
    next_attempt_at,
    event_id,
    url,
    endpoint_version,
    unreadable: skip,
    sequence,
});

from_row!(Head {
    id,
    endpoint_id,
    status,
    next_attempt_at,
    attempts,
    released_by_circuit,
    endpoint_version,
});

from_row!(DeliveryEndpoint {
    id,
    uid,
    version,
    url,
    secret,
    previous_secrets: json,
    success_body,
    success_filter: json_or_null,
    permanent_statuses,
    schedule_jitter,
    rate_limit_per_second,
    rate_limit_burst,
    fresh_share,
    breaker: breaker,
    headers: json,
    timeout_ms,
    max_in_flight,
    disabled,
    deleted,
    pull,
    unreadable: skip,
});

from_row!(Endpoint {
    id,
    uid,
    owner,
    url,
    delivery,
    description,
    secret,
    previous_secrets: json,
    event_types,
    filter: json_or_null,
    schedule_ms,
    schedule_name,
    schedule_jitter,
    url_secret,
    portal_generation,
    rate_limit_per_second,
    rate_limit_burst,
    fresh_share,
    breaker: breaker,
    success_body,
    success_filter: json_or_null,
    permanent_statuses,
    headers: json,
    timeout_ms,
    max_in_flight,
    ordering,
    ordering_on_failure,
    disabled,
    disabled_reason,
    failing_since,
    created_at,
    updated_at,
    unreadable: skip,
});

from_row!(Event {
    id,
    owner,
    event_type,
    key,
    content_type,
    body,
    deliver_at,
    deliveries,
    created_at,
    order_key,
});

from_row!(Subscriber {
    id,
    owner,
    event_types,
    filter: json_or_null,
    schedule_ms,
    schedule_name,
    delivery,
    ordering,
});

from_row!(FailingEndpoint {
    id,
    uid,
    url,
    url_secret,
    failing_since,
    updated_at,
});

from_row!(Notification {
    id,
    endpoint_id,
    key,
    event_type,
    content_type,
    body,
    headers: json,
    schedule_ms,
    schedule_name,
    status,
    attempts,
    series_start,
    deliver_at,
    next_attempt_at,
    last_attempt_at,
    last_status_code,
    last_error,
    created_at,
    updated_at,
    completed_at,
    event_id,
    url,
    pull,
    leased: held,
    order_key,
    sequence,
    behind,
});

from_row!(Taken {
    id,
    endpoint_id,
    key,
    order_key,
    sequence,
    event_type,
    event_id,
    content_type,
    body,
    headers: json,
    created_at,
    attempts,
    lease_id,
    due_at,
    lease_until,
    unreadable: skip,
});

from_row!(Leased {
    id,
    endpoint_id,
    pull,
    status,
    key,
    event_type,
    attempts,
    series_start,
    schedule_ms,
    schedule_name,
    lease_id,
    leased_at,
    next_attempt_at,
    // The store's clock, set by the reader (`pull::as_of`).
    now: skip,
    schedule_jitter,
});
