//! Lists: `{"data": [...], "next_cursor": "..." | null}` with `?limit=`
//! (default 50, max 500) and an opaque keyset `?cursor=`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::error::ApiError;
use crate::domain::problem::ErrorCode;

pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 500;

#[derive(Serialize, utoipa::ToSchema)]
pub struct Page<T> {
    pub data: Vec<T>,
    /// Pass as `?cursor=` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// Each page's schema in the OpenAPI document (`Page_X`) names its items'
/// schema (`X`) rather than a copy of it. utoipa writes a generic's argument
/// inline, and a client generator made a second type of each copy (a
/// `Page_NotificationView`'s items were not `NotificationView`s).
pub struct PageItems;

impl utoipa::Modify for PageItems {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::schema::{ArrayItems, Schema};
        use utoipa::openapi::{Ref, RefOr};
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        let items: Vec<(String, String)> = components
            .schemas
            .keys()
            .filter_map(|page| {
                let item = page.strip_prefix("Page_")?;
                components
                    .schemas
                    .contains_key(item)
                    .then(|| (page.clone(), item.to_string()))
            })
            .collect();
        for (page, item) in items {
            if let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(&page) {
                if let Some(RefOr::T(Schema::Array(data))) = object.properties.get_mut("data") {
                    data.items =
                        ArrayItems::RefOrSchema(Box::new(RefOr::Ref(Ref::from_schema_name(item))));
                }
            }
        }
    }
}

/// `?limit=&cursor=`, kept as text so that bad values get our own errors.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageParams {
    pub limit: Option<String>,
    pub cursor: Option<String>,
}

impl PageParams {
    pub fn limit(&self) -> Result<i64, ApiError> {
        let Some(text) = &self.limit else {
            return Ok(DEFAULT_LIMIT);
        };
        let limit: i64 = text.trim().parse().map_err(|_| {
            ApiError::malformed(
                ErrorCode::InvalidQuery,
                Some("limit".into()),
                format!(
                    "limit `{}` is not a whole number",
                    crate::domain::problem::shown(text)
                ),
            )
        })?;
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ApiError::invalid(
                ErrorCode::InvalidValue,
                "limit",
                format!("limit must be between 1 and {MAX_LIMIT}"),
            ));
        }
        Ok(limit)
    }

    pub fn cursor_id(&self) -> Result<Option<Uuid>, ApiError> {
        self.cursor_text()?
            .map(|text| Uuid::parse_str(&text).map_err(|_| bad_cursor()))
            .transpose()
    }

    pub fn cursor_number(&self) -> Result<Option<i32>, ApiError> {
        self.cursor_text()?
            .map(|text| text.parse::<i32>().map_err(|_| bad_cursor()))
            .transpose()
    }

    /// A cursor of `(attempts, id)` (`encode_cursor` of `"{attempts}/{id}"`).
    pub fn cursor_attempts(&self) -> Result<Option<(i32, Uuid)>, ApiError> {
        self.cursor_text()?
            .map(|text| {
                let (attempts, id) = text.split_once('/').ok_or_else(bad_cursor)?;
                let attempts = attempts.parse::<i32>().map_err(|_| bad_cursor())?;
                Ok((attempts, Uuid::parse_str(id).map_err(|_| bad_cursor())?))
            })
            .transpose()
    }

    fn cursor_text(&self) -> Result<Option<String>, ApiError> {
        let Some(cursor) = &self.cursor else {
            return Ok(None);
        };
        let bytes = URL_SAFE_NO_PAD
            .decode(cursor.trim())
            .map_err(|_| bad_cursor())?;
        let text = String::from_utf8(bytes).map_err(|_| bad_cursor())?;
        text.strip_prefix("v1:")
            .map(|t| Some(t.to_string()))
            .ok_or_else(bad_cursor)
    }
}

pub fn encode_cursor(value: impl std::fmt::Display) -> String {
    URL_SAFE_NO_PAD.encode(format!("v1:{value}"))
}

/// Builds a page from `limit + 1` fetched rows: the extra row only tells
/// that there is a next page.
pub fn page<R, T>(
    mut rows: Vec<R>,
    limit: i64,
    cursor_of: impl Fn(&R) -> String,
    view: impl Fn(R) -> T,
) -> Page<T> {
    let more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    let next_cursor = if more {
        rows.last().map(&cursor_of)
    } else {
        None
    };
    Page {
        data: rows.into_iter().map(view).collect(),
        next_cursor,
    }
}

fn bad_cursor() -> ApiError {
    ApiError::malformed(
        ErrorCode::InvalidCursor,
        Some("cursor".into()),
        "cursor is not one hookd returned; pass next_cursor unchanged",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips_and_garbage_is_refused() {
        let id = Uuid::now_v7();
        let params = PageParams {
            cursor: Some(encode_cursor(id)),
            ..Default::default()
        };
        assert_eq!(params.cursor_id().unwrap(), Some(id));
        for junk in ["", "!!!", "djE6bm90LWEtdXVpZA", "Zm9v"] {
            let params = PageParams {
                cursor: Some(junk.into()),
                ..Default::default()
            };
            assert!(params.cursor_id().is_err(), "{junk}");
        }
    }

    #[test]
    fn limit_defaults_and_is_bounded() {
        assert_eq!(PageParams::default().limit().unwrap(), DEFAULT_LIMIT);
        for (text, ok) in [
            ("1", true),
            ("500", true),
            ("0", false),
            ("501", false),
            ("ten", false),
            ("-1", false),
        ] {
            let params = PageParams {
                limit: Some(text.into()),
                ..Default::default()
            };
            assert_eq!(params.limit().is_ok(), ok, "{text}");
        }
    }
}
