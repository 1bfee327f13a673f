//! Every conversion between the two schemas' encodings, in one place: a
//! column's `Kind` says how the embedded schema holds it
//! (`migrations/sqlite/0001_initial.sql`, its header) and what PostgreSQL
//! type it becomes. A value is read from a SQLite row into a `Value` and
//! bound, unchanged in meaning, into a PostgreSQL insert.
//!
//! Text is copied as stored, byte for byte: sealed secrets, sealed header
//! values and the operator endpoint's sealed URL are never opened here.
//! JSON text becomes `jsonb` by PostgreSQL's own cast, which keeps every
//! string (a sealed value inside `headers` or `previous_secrets`) as it is.

use chrono::{DateTime, Utc};
use sqlx::postgres::Postgres;
use sqlx::query_builder::Separated;
use sqlx::sqlite::{Sqlite, SqliteRow};
use sqlx::Row;
use uuid::Uuid;

/// How a column is held in SQLite, and what it is in PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// BLOB of a uuid's 16 bytes → uuid.
    Id,
    /// TEXT → text.
    Text,
    /// BLOB → bytea.
    Bytes,
    /// INTEGER → integer.
    Int,
    /// INTEGER → bigint.
    BigInt,
    /// REAL → double precision.
    Real,
    /// INTEGER 0 or 1 → boolean.
    Flag,
    /// INTEGER microseconds since the epoch, UTC → timestamptz.
    Time,
    /// TEXT holding JSON → jsonb.
    Json,
    /// TEXT holding a JSON array of numbers → bigint[].
    BigIntList,
    /// TEXT holding a JSON array of numbers → integer[].
    IntList,
    /// TEXT holding a JSON array of strings → text[].
    TextList,
}

/// One column's value of one row, between the two databases. `None` is
/// SQL NULL.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Id(Option<Uuid>),
    Text(Option<String>),
    Bytes(Option<Vec<u8>>),
    Int(Option<i32>),
    BigInt(Option<i64>),
    Real(Option<f64>),
    Flag(Option<bool>),
    Time(Option<DateTime<Utc>>),
    /// JSON text, as stored; PostgreSQL casts it.
    Json(Option<String>),
    BigIntList(Option<Vec<i64>>),
    IntList(Option<Vec<i32>>),
    TextList(Option<Vec<String>>),
}

/// A value the source holds that has no meaning in the target.
#[derive(Debug, thiserror::Error)]
#[error("column {column}: {reason}")]
pub struct BadValue {
    column: String,
    reason: String,
}

fn bad(column: &str, reason: impl std::fmt::Display) -> BadValue {
    BadValue {
        column: column.to_string(),
        reason: reason.to_string(),
    }
}

/// A primary key column read as NULL (the schema forbids it).
pub(crate) fn null_key() -> BadValue {
    bad("of the primary key", "NULL")
}

/// Why a value could not be read: the driver, or the value itself.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Driver(#[from] sqlx::Error),
    #[error(transparent)]
    Value(#[from] BadValue),
}

/// A time as the embedded schema holds it.
pub(crate) fn time_of(column: &str, us: i64) -> Result<DateTime<Utc>, BadValue> {
    DateTime::from_timestamp_micros(us)
        .ok_or_else(|| bad(column, format!("time out of range: {us} µs")))
}

fn list<T: serde::de::DeserializeOwned>(column: &str, text: &str) -> Result<Vec<T>, BadValue> {
    serde_json::from_str(text).map_err(|e| {
        bad(
            column,
            format!("not a JSON array of the column's type: {e}"),
        )
    })
}

impl Kind {
    /// Reads `column` of `row` as this kind.
    pub(crate) fn read(self, row: &SqliteRow, column: &str) -> Result<Value, ReadError> {
        Ok(match self {
            Kind::Id => Value::Id(row.try_get(column)?),
            Kind::Text => Value::Text(row.try_get(column)?),
            Kind::Bytes => Value::Bytes(row.try_get(column)?),
            Kind::Int => {
                let wide: Option<i64> = row.try_get(column)?;
                let narrow = wide
                    .map(|n| {
                        i32::try_from(n)
                            .map_err(|_| bad(column, format!("{n} does not fit an integer")))
                    })
                    .transpose()?;
                Value::Int(narrow)
            }
            Kind::BigInt => Value::BigInt(row.try_get(column)?),
            Kind::Real => Value::Real(row.try_get(column)?),
            Kind::Flag => {
                let flag: Option<i64> = row.try_get(column)?;
                Value::Flag(flag.map(|n| n != 0))
            }
            Kind::Time => {
                let us: Option<i64> = row.try_get(column)?;
                Value::Time(us.map(|us| time_of(column, us)).transpose()?)
            }
            Kind::Json => Value::Json(row.try_get(column)?),
            Kind::BigIntList => Value::BigIntList(text_list(row, column)?),
            Kind::IntList => Value::IntList(text_list(row, column)?),
            Kind::TextList => Value::TextList(text_list(row, column)?),
        })
    }
}

fn text_list<T: serde::de::DeserializeOwned>(
    row: &SqliteRow,
    column: &str,
) -> Result<Option<Vec<T>>, ReadError> {
    let text: Option<&str> = row.try_get(column)?;
    Ok(text.map(|text| list(column, text)).transpose()?)
}

impl Value {
    /// Binds this value as the next column of a PostgreSQL row.
    pub(crate) fn bind(self, row: &mut Separated<'_, Postgres, &'static str>) {
        match self {
            Value::Id(v) => row.push_bind(v),
            Value::Text(v) => row.push_bind(v),
            Value::Bytes(v) => row.push_bind(v),
            Value::Int(v) => row.push_bind(v),
            Value::BigInt(v) => row.push_bind(v),
            Value::Real(v) => row.push_bind(v),
            Value::Flag(v) => row.push_bind(v),
            Value::Time(v) => row.push_bind(v),
            // Bound as text: a multi-row VALUES list does not take the
            // target column's type for a parameter sqlx types as text.
            Value::Json(v) => row.push_bind(v).push_unseparated("::jsonb"),
            Value::BigIntList(v) => row.push_bind(v),
            Value::IntList(v) => row.push_bind(v),
            Value::TextList(v) => row.push_bind(v),
        };
    }

    /// About how many bytes this value holds in memory.
    pub(crate) fn size(&self) -> usize {
        match self {
            Value::Text(Some(v)) | Value::Json(Some(v)) => v.len(),
            Value::Bytes(Some(v)) => v.len(),
            Value::BigIntList(Some(v)) => v.len() * 8,
            Value::IntList(Some(v)) => v.len() * 4,
            Value::TextList(Some(v)) => v.iter().map(String::len).sum(),
            _ => 16,
        }
    }

    /// This value as part of a keyset cursor: `None` unless it is a
    /// non-null id or number (what every primary key column is).
    pub(crate) fn key(&self) -> Option<Key> {
        match self {
            Value::Id(Some(id)) => Some(Key::Id(*id)),
            Value::Int(Some(n)) => Some(Key::Int(i64::from(*n))),
            Value::BigInt(Some(n)) => Some(Key::Int(*n)),
            _ => None,
        }
    }
}

/// A primary key column's value, where a page of the source ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    Id(Uuid),
    Int(i64),
}

impl Key {
    /// Binds this key to a SQLite statement, encoded as the embedded
    /// schema holds it.
    pub(crate) fn bind<'q>(
        self,
        query: sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments>,
    ) -> sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments> {
        match self {
            Key::Id(id) => query.bind(id),
            Key::Int(n) => query.bind(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_keeps_its_microseconds() {
        let at = time_of("t", 1_764_115_200_123_456).unwrap();
        assert_eq!(at.timestamp_micros(), 1_764_115_200_123_456);
        assert!(time_of("t", i64::MAX).is_err());
    }

    #[test]
    fn a_list_of_the_wrong_type_is_refused_naming_its_column() {
        assert_eq!(
            list::<i64>("schedule_ms", "[1000,60000]").unwrap(),
            vec![1000, 60000]
        );
        let error = list::<i64>("schedule_ms", r#"["a"]"#).unwrap_err();
        assert!(
            error.to_string().starts_with("column schedule_ms:"),
            "{error}"
        );
    }
}
