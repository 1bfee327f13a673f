//! `GET /v1/notifications`: the search, newest first (or oldest first), in
//! pages; or one endpoint's notifications attempted more than once, most
//! attempts first (`order=attempts`). A filter
//! an index serves (a key, an event, a key prefix few keys start with)
//! reads it; any other is checked on a bounded slice of the list's scope
//! (`NotificationFilter::bounded`).

use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use uuid::Uuid;

use super::auth::SeesSecrets;
use super::error::ApiError;
use super::extract::QueryParams;
use super::filters;
use super::notification_view::{secret_paths, NotificationView};
use super::pagination::{encode_cursor, page, Page, PageParams};
use super::waiting::Holds;
use super::AppState;
use crate::domain::problem::ErrorCode;
use crate::domain::status::Status;
use crate::store::endpoints::EndpointRef;
use crate::store::notifications::{ListOrder, MostAttempted, NotificationFilter, MAX_EXAMINED};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    endpoint: Option<String>,
    event: Option<String>,
    status: Option<String>,
    key: Option<String>,
    key_prefix: Option<String>,
    event_type: Option<String>,
    owner: Option<String>,
    created_after: Option<String>,
    created_before: Option<String>,
    completed_after: Option<String>,
    order: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// `order`'s values, as the API document lists them (`order` reads them).
pub(super) const ORDERS: [&str; 3] = ["newest", "oldest", "attempts"];

/// The list's order (`None`: most attempts first, `order=attempts`).
pub(super) fn order(text: Option<&str>) -> Result<Option<ListOrder>, ApiError> {
    match text {
        None | Some("newest") => Ok(Some(ListOrder::NewestFirst)),
        Some("oldest") => Ok(Some(ListOrder::OldestFirst)),
        Some("attempts") => Ok(None),
        Some(_) => Err(ApiError::invalid(
            ErrorCode::InvalidValue,
            "order",
            "order is newest, oldest or attempts",
        )),
    }
}

/// List notifications
#[utoipa::path(operation_id = "list_notifications", get, path = "/v1/notifications", tag = "notifications",
    params(("endpoint" = Option<crate::api::openapi_depth::EndpointRefSchema>, Query, description = "id or uid"),
        ("status" = Option<Status>, Query), ("key" = Option<String>, Query, description = "the notification's key, or its event's (an event's key finds its deliveries)"),
        ("key_prefix" = Option<String>, Query, description = "a prefix of the notification's key, or of its event's; not with `key`"),
        ("event_type" = Option<String>, Query), ("event" = Option<Uuid>, Query, description = "only this event's deliveries"),
        ("owner" = Option<crate::api::openapi_depth::OwnerSchema>, Query, description = "only the notifications of this owner's endpoints (live ones; a deleted endpoint's are found by `endpoint=<id>`)"),
        ("created_after" = Option<chrono::DateTime<chrono::Utc>>, Query, description = "RFC 3339: only those created at or after this time"),
        ("created_before" = Option<chrono::DateTime<chrono::Utc>>, Query, description = "RFC 3339: only those created before this time"),
        ("completed_after" = Option<chrono::DateTime<chrono::Utc>>, Query, description = "RFC 3339: only those that ended (succeeded, failed or were cancelled) at or after this time; with `status=failed`, those that failed since"),
        ("order" = Option<String>, Query, description = "`newest` (the default) or `oldest`: by creation, newest or oldest first; `attempts`: one endpoint's notifications attempted more than once, most attempts first, then newest (with `endpoint`, and `status` at most; a status is checked on at most 5,000 rows a page; one attempted again while you page moves ahead of the cursor and is not shown twice)"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500, description = "1 to 500, default 50"), ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page, unchanged")),
    description = "Newest first, oldest first with `order=oldest`, or one endpoint's most attempted first with `order=attempts`. A filter that no index serves together with the list's scope (`status`, `event_type`, `completed_after`, a `key_prefix` that more than 5,000 notifications start with, and any list of an `owner`) is checked on at most 5,000 rows of each page's scope (an owner's: shared among its endpoints): a page then holds the matches found there, possibly fewer than `limit` or none, and `next_cursor` goes on past the rows read. Follow `next_cursor` until it is `null`, whatever the page's length: a short page is not the last one. Each page's rows are distinct from every other page's.",
    responses((status = 200, body = Page<NotificationView>, description = "in `order`, without payloads; `next_cursor` is `null` only on the last page"),
        (status = 400, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody),
        (status = 429, body = super::error::ErrorBody, description = "`too_many_requests`: this credential has `api.max_concurrent_per_credential` reads under way; retry after `Retry-After` seconds")))]
pub async fn list(
    State(state): State<AppState>,
    caller: SeesSecrets,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<Page<NotificationView>>, ApiError> {
    let paging = PageParams {
        limit: params.limit,
        cursor: params.cursor,
    };
    let limit = paging.limit()?;
    let status = params
        .status
        .map(|s| {
            Status::parse(&s).ok_or_else(|| {
                ApiError::invalid(
                    ErrorCode::InvalidValue,
                    "status",
                    "status is one of pending, succeeded, failed, cancelled",
                )
            })
        })
        .transpose()?;
    // A key or type no notification can have is refused, as cancel-by-key
    // refuses it.
    filters::key(params.key.as_deref())?;
    filters::key_prefix(params.key_prefix.as_deref(), params.key.as_deref())?;
    filters::event_type(params.event_type.as_deref())?;
    filters::owner(params.owner.as_deref())?;
    let endpoint = filters::endpoint(params.endpoint.as_deref())?;
    let created = filters::created(
        params.created_after.as_deref(),
        params.created_before.as_deref(),
    )?;
    let completed_after = filters::time("completed_after", params.completed_after.as_deref())?;
    let order = order(params.order.as_deref())?;
    // Every parameter is checked before an unknown endpoint ends the search.
    let event_id = params
        .event
        .as_deref()
        .map(|text| {
            Uuid::parse_str(text).map_err(|_| {
                ApiError::invalid(ErrorCode::InvalidValue, "event", "event is an event id")
            })
        })
        .transpose()?;
    let Some(order) = order else {
        // Most attempts first: one endpoint's, by status at most.
        let other = [
            ("key", params.key.is_some()),
            ("key_prefix", params.key_prefix.is_some()),
            ("event_type", params.event_type.is_some()),
            ("event", params.event.is_some()),
            ("owner", params.owner.is_some()),
            ("created_after", params.created_after.is_some()),
            ("created_before", params.created_before.is_some()),
            ("completed_after", params.completed_after.is_some()),
        ]
        .into_iter()
        .find_map(|(name, given)| given.then_some(name));
        if let Some(name) = other {
            return Err(ApiError::invalid(
                ErrorCode::InvalidValue,
                name,
                format!("order=attempts takes endpoint and status only, not {name}"),
            ));
        }
        let cursor = paging.cursor_attempts()?;
        return most_attempted(&state, &caller, endpoint, status, cursor, limit).await;
    };
    let cursor = paging.cursor_id()?;
    let endpoint_id = match endpoint {
        // An id names its endpoint's notifications even after the endpoint
        // was deleted: their history stays queryable.
        Some(EndpointRef::Id(id)) => Some(id),
        Some(by) => match state.store.find_endpoint(&by).await? {
            Some(endpoint) => Some(endpoint.id),
            // An unknown endpoint has no notifications.
            None => {
                return Ok(Json(Page {
                    data: Vec::new(),
                    next_cursor: None,
                }))
            }
        },
        None => None,
    };
    let mut filter = NotificationFilter {
        endpoint_id,
        status,
        key: params.key,
        key_prefix: params.key_prefix,
        ids: None,
        event_type: params.event_type,
        event_id,
        owner: params.owner,
        created,
        completed_after,
        order,
        cursor,
        from: None,
        limit: limit + 1,
    };
    // A key prefix few notifications have names them through the keys'
    // indexes; one that many have is checked on a bounded slice.
    if let Some(prefix) = filter.key_prefix.as_deref() {
        let ids = state
            .store
            .key_prefix_ids(prefix, &filter, MAX_EXAMINED + 1)
            .await?;
        filter.ids = (ids.len() as i64 <= MAX_EXAMINED).then_some(ids);
    }
    // A filter no index serves beside the scope reads a bounded slice of
    // it: a page may come back short, or empty, with a cursor past it.
    if filter.bounded() {
        filter.from = state.store.notifications_frontier(&filter).await?;
    }
    let rows = state.store.list_notifications(&filter).await?;
    let secret = secret_paths(&state, &caller, &rows).await;
    let holds = Holds::read(&state, rows.iter().take(limit as usize)).await;
    let mut listed = page(
        rows,
        limit,
        |n| encode_cursor(n.id),
        |n| NotificationView::summary(n, &holds).shown_to(&caller, &secret),
    );
    if listed.next_cursor.is_none() {
        listed.next_cursor = filter.from.map(encode_cursor);
    }
    Ok(Json(listed))
}

/// `GET /v1/notifications?order=attempts&endpoint=…`: the endpoint's
/// notifications attempted more than once, most attempts first, then
/// newest; a status is checked on a bounded slice of them, as a filtered
/// list's is.
async fn most_attempted(
    state: &AppState,
    caller: &SeesSecrets,
    endpoint: Option<EndpointRef>,
    status: Option<Status>,
    cursor: Option<(i32, Uuid)>,
    limit: i64,
) -> Result<Json<Page<NotificationView>>, ApiError> {
    let Some(endpoint) = endpoint else {
        return Err(ApiError::invalid(
            ErrorCode::InvalidValue,
            "order",
            "order=attempts lists one endpoint's notifications: give endpoint",
        ));
    };
    let endpoint_id = match endpoint {
        EndpointRef::Id(id) => id,
        by => match state.store.find_endpoint(&by).await? {
            Some(endpoint) => endpoint.id,
            None => {
                return Ok(Json(Page {
                    data: Vec::new(),
                    next_cursor: None,
                }))
            }
        },
    };
    let mut filter = MostAttempted {
        endpoint_id,
        status,
        cursor,
        from: None,
        limit: limit + 1,
    };
    if status.is_some() {
        filter.from = state.store.most_attempted_frontier(&filter).await?;
    }
    let rows = state.store.most_attempted(&filter).await?;
    let secret = secret_paths(state, caller, &rows).await;
    let holds = Holds::read(state, rows.iter().take(limit as usize)).await;
    let key = |attempts: i32, id: Uuid| encode_cursor(format_args!("{attempts}/{id}"));
    let mut listed = page(
        rows,
        limit,
        |n| key(n.attempts, n.id),
        |n| NotificationView::summary(n, &holds).shown_to(caller, &secret),
    );
    if listed.next_cursor.is_none() {
        listed.next_cursor = filter.from.map(|(attempts, id)| key(attempts, id));
    }
    Ok(Json(listed))
}
