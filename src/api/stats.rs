//! `GET /v1/stats`: the console's overview as columns ready to chart,
//! read from the per-minute counts hookd keeps (`store::stats`), never
//! from the attempts, so it answers in a few milliseconds however many
//! attempts are stored (BENCHMARKS.md).
//!
//! What a request asks is parsed by `StatsQuery::parse` into a window and
//! a `StatsFilter`; `answer` reads for them. A caller whose filter is
//! forced (a portal link scoped to an endpoint or an owner) parses, then
//! sets or checks `StatsFilter` before `answer`.

use axum::extract::{RawQuery, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use uuid::Uuid;

use super::auth::SeesSecrets;
use super::error::ApiError;
use super::filters;
use super::AppState;
use crate::domain::problem::ErrorCode;
use crate::domain::stats_window::{series, success_ratio, Window};
use crate::store::endpoints::EndpointRef;
use crate::store::stats::StatsScope;

/// How many endpoints `failing_endpoints` lists at most.
const FAILING_LISTED: i64 = 10;

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/stats", get(stats))
}

/// Whose counts a request asks for: every endpoint's, one endpoint's (id
/// or uid), an owner's endpoints', or both (that endpoint, if it is the
/// owner's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsFilter {
    pub endpoint: Option<EndpointRef>,
    pub owner: Option<String>,
}

/// A parsed `GET /v1/stats` query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsQuery {
    pub window: Window,
    pub filter: StatsFilter,
}

impl StatsQuery {
    /// Parses the raw query string: `window` (`1h`, the default, or
    /// `24h`), `endpoint`, `owner`. A value no row can match, a parameter
    /// given twice or one not among these is refused with 422 naming it.
    pub fn parse(query: Option<&str>) -> Result<Self, ApiError> {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query.unwrap_or_default())
            .map_err(|e| {
                ApiError::malformed(
                    ErrorCode::InvalidQuery,
                    None,
                    format!("invalid query string: {e}"),
                )
            })?;
        let (mut window, mut endpoint, mut owner) = (None, None, None);
        for (name, value) in pairs {
            let slot = match name.as_str() {
                "window" => &mut window,
                "endpoint" => &mut endpoint,
                "owner" => &mut owner,
                _ => {
                    return Err(ApiError::invalid(
                        ErrorCode::UnknownField,
                        name.chars().take(64).collect::<String>(),
                        "GET /v1/stats takes window, endpoint and owner",
                    ))
                }
            };
            if slot.replace(value).is_some() {
                return Err(ApiError::invalid(
                    ErrorCode::InvalidValue,
                    name,
                    "give each parameter once",
                ));
            }
        }
        let window = match window.as_deref() {
            None => Window::Hour,
            Some(text) => Window::parse(text).ok_or_else(|| {
                ApiError::invalid(ErrorCode::InvalidValue, "window", "window is 1h or 24h")
            })?,
        };
        let endpoint = filters::endpoint(endpoint.as_deref())?;
        filters::owner(owner.as_deref())?;
        Ok(Self {
            window,
            filter: StatsFilter { endpoint, owner },
        })
    }
}

/// A window's columns, one entry per step, oldest first; the last step is
/// the current, partial one.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StatsView {
    /// `1h` or `24h`.
    pub window: &'static str,
    /// 60 (1h: 60 steps) or 600 (24h: 144 steps).
    pub step_seconds: i64,
    /// Unix seconds, the start of each step.
    pub time: Vec<i64>,
    /// Notifications that ended delivered in the step.
    pub delivered: Vec<i64>,
    /// Notifications that ended failed in the step (schedule exhausted, a
    /// permanent failure, held past their hold behind an open circuit).
    pub failed: Vec<i64>,
    /// Attempts recorded in the step (by when they started).
    pub attempts: Vec<i64>,
    /// Attempts that were not a success.
    pub failed_attempts: Vec<i64>,
    /// Successful attempts over attempts; null without an attempt.
    pub success_ratio: Vec<Option<f64>>,
    /// p99 of how late push attempts started (start minus due), in ms;
    /// never below the true p99, at most 41 % above it; null without one.
    pub lateness_p99_ms: Vec<Option<i64>>,
    /// Pending notifications of the whole deployment, the last sample
    /// taken in the step, once a minute; null without a sample, and always
    /// null with an `endpoint` or `owner` filter (a portal link's view):
    /// the sample counts every endpoint's.
    pub pending: Vec<Option<i64>>,
    pub totals: StatsTotals,
    /// Up to 10 endpoints with the most failed attempts in the window,
    /// most first; only those with at least one.
    pub failing_endpoints: Vec<FailingEndpointView>,
}

/// The window added up.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StatsTotals {
    pub delivered: i64,
    pub failed: i64,
    pub attempts: i64,
    pub failed_attempts: i64,
    pub success_ratio: Option<f64>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct FailingEndpointView {
    pub endpoint_id: Uuid,
    /// As in the endpoint's JSON (query values masked without `secrets`);
    /// null for a pull endpoint.
    pub url: Option<String>,
    pub failed_attempts: i64,
    pub attempts: i64,
}

/// Delivery counts per minute
#[utoipa::path(operation_id = "stats", get, path = "/v1/stats", tag = "stats",
    params(("window" = Option<String>, Query, description = "`1h` (the default: 60 steps of a minute) or `24h` (144 steps of ten minutes)"),
        ("endpoint" = Option<crate::api::openapi_depth::EndpointRefSchema>, Query, description = "only this endpoint's counts (id or uid)"),
        ("owner" = Option<crate::api::openapi_depth::OwnerSchema>, Query, description = "only the counts of this owner's endpoints, recorded while they were its (an endpoint moved to another owner leaves its past with the old one; a deleted one's past stays); `failing_endpoints` lists the endpoints it has now")),
    responses((status = 200, body = StatsView, description = "the overview's columns, from per-minute counts; `pending` is the whole deployment's, null with a filter"),
        (status = 400, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody, description = "a parameter is invalid, given twice or unknown (`field` names it)")))]
pub async fn stats(
    State(state): State<AppState>,
    caller: SeesSecrets,
    RawQuery(query): RawQuery,
) -> Result<Json<StatsView>, ApiError> {
    let query = StatsQuery::parse(query.as_deref())?;
    answer(&state, &query, caller).await.map(Json)
}

/// The overview for `query`, now.
pub async fn answer(
    state: &AppState,
    query: &StatsQuery,
    caller: SeesSecrets,
) -> Result<StatsView, ApiError> {
    let now = state.service.now();
    let window = query.window;
    let since = window.since(now);
    // A uid names its endpoint now; an id names one even after it was
    // deleted, as the lists' filters do.
    let endpoint = match &query.filter.endpoint {
        None => None,
        Some(EndpointRef::Id(id)) => Some(Some(*id)),
        Some(by) => Some(state.store.find_endpoint(by).await?.map(|e| e.id)),
    };
    let scope = match endpoint {
        // A uid no endpoint has: nothing to count.
        Some(None) => None,
        Some(Some(id)) => Some(StatsScope {
            endpoint: Some(id),
            owner: query.filter.owner.clone(),
        }),
        None => Some(StatsScope {
            endpoint: None,
            owner: query.filter.owner.clone(),
        }),
    };
    let store = &state.store;
    // The backlog is sampled for the whole deployment: a filtered view
    // (and so every portal link, whose filter is forced) must not show
    // other endpoints' traffic, so it gets none.
    let filtered = query.filter.endpoint.is_some() || query.filter.owner.is_some();
    let pending = async {
        match filtered {
            true => Ok(Vec::new()),
            false => store.pending_samples(since).await,
        }
    };
    let (minutes, failing, pending) = match &scope {
        Some(scope) => tokio::try_join!(
            store.minute_counts(scope, since),
            store.most_failing(scope, since, FAILING_LISTED),
            pending
        )?,
        None => (Vec::new(), Vec::new(), pending.await?),
    };
    let columns = series(window, now, &minutes, &pending);
    let total = &columns.total;
    let secret = match caller.sees() {
        true => Default::default(),
        // If they cannot be read, mask every path whole: the safe side.
        false => {
            let ids: std::collections::HashSet<_> = failing.iter().map(|f| f.endpoint_id).collect();
            state
                .service
                .url_secret_endpoints(ids.iter().copied())
                .await
                .unwrap_or(ids)
        }
    };
    Ok(StatsView {
        window: window.as_str(),
        step_seconds: window.step_seconds(),
        success_ratio: columns.success_ratio(),
        lateness_p99_ms: columns.lateness_p99_ms(),
        delivered: columns.counts.iter().map(|c| c.delivered).collect(),
        failed: columns.counts.iter().map(|c| c.failed).collect(),
        attempts: columns.counts.iter().map(|c| c.attempts).collect(),
        failed_attempts: columns.counts.iter().map(|c| c.failed_attempts).collect(),
        totals: StatsTotals {
            delivered: total.delivered,
            failed: total.failed,
            attempts: total.attempts,
            failed_attempts: total.failed_attempts,
            success_ratio: success_ratio(total),
        },
        failing_endpoints: failing
            .into_iter()
            .map(|f| FailingEndpointView {
                endpoint_id: f.endpoint_id,
                url: f
                    .url
                    .map(|url| caller.url(url, secret.contains(&f.endpoint_id))),
                failed_attempts: f.failed_attempts,
                attempts: f.attempts,
            })
            .collect(),
        time: columns.time,
        pending: columns.pending,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(error: ApiError) -> (u16, Option<String>) {
        let status = error.status().as_u16();
        (status, error.body().error.field)
    }

    #[test]
    fn the_window_defaults_to_an_hour_and_filters_are_kept() {
        let q = StatsQuery::parse(None).unwrap();
        assert_eq!(q.window, Window::Hour);
        assert_eq!(q.filter, StatsFilter::default());
        let id = Uuid::from_u128(7);
        let q = StatsQuery::parse(Some(&format!("window=24h&endpoint={id}&owner=shop-1"))).unwrap();
        assert_eq!(q.window, Window::Day);
        assert_eq!(q.filter.endpoint, Some(EndpointRef::Id(id)));
        assert_eq!(q.filter.owner.as_deref(), Some("shop-1"));
        let q = StatsQuery::parse(Some("endpoint=orders")).unwrap();
        assert_eq!(q.filter.endpoint, Some(EndpointRef::Uid("orders".into())));
    }

    #[test]
    fn a_bad_unknown_or_repeated_parameter_is_refused_naming_it() {
        let cases = [
            ("window=7d", "window"),
            ("window=", "window"),
            ("endpoint=a%00b", "endpoint"),
            ("owner=a%20b", "owner"),
            ("windows=1h", "windows"),
            ("window=1h&window=24h", "window"),
        ];
        for (query, field) in cases {
            let error = StatsQuery::parse(Some(query)).unwrap_err();
            assert_eq!(field_of(error), (422, Some(field.into())), "{query}");
        }
    }
}
