//! Comparing the copy's two databases row by row, column by column, in
//! one encoding (the embedded schema's), with the columns PostgreSQL lists:
//! a column the copy forgot fails here, whatever its type.

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{AssertSqlSafe, Connection, PgPool};
use uuid::Uuid;

/// The tables the copy copies, with their primary keys, and the columns it
/// sets rather than carries.
pub const TABLES: [(&str, &str, &[&str]); 7] = [
    ("endpoints", "id", &[]),
    ("portal_owners", "owner", &[]),
    ("consumer_tokens", "endpoint_id", &[]),
    ("events", "id", &[]),
    ("attempts", "notification_id, number", &[]),
    // Owed to the due index: see `marked`.
    ("notifications", "id", &["needs_index"]),
    // Free for the server's runner: see `leased_operations`.
    ("operations", "id", &["lease_holder", "lease_until"]),
];

/// How many rows each copied table has in the file.
pub async fn source_counts(path: &Path) -> Vec<u64> {
    let mut conn = read_only(path).await;
    let mut counts = Vec::new();
    for (table, _, _) in TABLES {
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
            .fetch_one(&mut conn)
            .await
            .unwrap();
        counts.push(n as u64);
    }
    counts
}

pub async fn read_only(path: &Path) -> SqliteConnection {
    SqliteConnection::connect_with(&SqliteConnectOptions::new().filename(path).read_only(true))
        .await
        .unwrap()
}

/// Every row of `table` in both databases, each as one JSON object in the
/// embedded schema's encodings (ids as hex, times as µs, flags as 0/1,
/// bytes as hex, JSON and arrays as JSON), in primary key order. The
/// columns are the target's, as PostgreSQL lists them, but `except`.
pub async fn both(
    pool: &PgPool,
    path: &Path,
    table: &str,
    key: &str,
    except: &[&str],
) -> (Vec<Value>, Vec<Value>) {
    let columns: Vec<(String, String)> = sqlx::query_as(
        "SELECT column_name::text, data_type::text FROM information_schema.columns \
         WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
    )
    .bind(table)
    .fetch_all(pool)
    .await
    .unwrap();
    assert!(!columns.is_empty(), "{table} is in the target");
    let mut pg = Vec::new();
    let mut lite = Vec::new();
    for (name, ty) in columns
        .iter()
        .filter(|(name, _)| !except.contains(&name.as_str()))
    {
        let (p, l) = match ty.as_str() {
            "uuid" => (
                format!("replace({name}::text, '-', '')"),
                format!("CASE WHEN {name} IS NOT NULL THEN lower(hex({name})) END"),
            ),
            "bytea" => (
                format!("encode({name}, 'hex')"),
                format!("CASE WHEN {name} IS NOT NULL THEN lower(hex({name})) END"),
            ),
            "timestamp with time zone" => (
                format!("(extract(epoch FROM {name}) * 1000000)::bigint"),
                name.clone(),
            ),
            "boolean" => (format!("{name}::int"), name.clone()),
            // In millionths: JSON writes SQLite's REAL 0 as 0.0 and
            // PostgreSQL's as 0, which serde_json holds as unequal.
            "double precision" => (
                format!("round({name} * 1000000)::bigint"),
                format!("CAST(round({name} * 1000000) AS INTEGER)"),
            ),
            "jsonb" | "ARRAY" => (format!("to_jsonb({name})"), format!("json({name})")),
            "text" | "integer" | "bigint" => (name.clone(), name.clone()),
            other => panic!("{table}.{name}: a type this test does not compare: {other}"),
        };
        pg.push(format!("'{name}', {p}"));
        lite.push(format!("'{name}', {l}"));
    }
    let target: Vec<Value> = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT json_build_object({})::text FROM {table} ORDER BY {key}",
        pg.join(", ")
    )))
    .fetch_all(pool)
    .await
    .unwrap()
    .into_iter()
    .map(|text: String| serde_json::from_str(&text).unwrap())
    .collect();
    let mut conn = read_only(path).await;
    let source: Vec<Value> = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT json_object({}) FROM {table} ORDER BY {key}",
        lite.join(", ")
    )))
    .fetch_all(&mut conn)
    .await
    .unwrap()
    .into_iter()
    .map(|text: String| serde_json::from_str(&text).unwrap())
    .collect();
    (source, target)
}

/// Asserts the target holds exactly the source's rows, column for column
/// (but those the copy sets).
pub async fn assert_same_rows(pool: &PgPool, path: &Path) {
    for (table, key, set) in TABLES {
        let (source, target) = both(pool, path, table, key, set).await;
        assert_eq!(source.len(), target.len(), "{table}: as many rows");
        for (s, t) in source.iter().zip(&target) {
            assert_eq!(s, t, "{table}: the same row");
        }
    }
}

/// The ids the target marks `needs_index`.
pub async fn marked(pool: &PgPool) -> HashSet<Uuid> {
    sqlx::query_scalar("SELECT id FROM notifications WHERE needs_index")
        .fetch_all(pool)
        .await
        .unwrap()
        .into_iter()
        .collect()
}

/// The operations in the target under a lease: none, since the copy
/// leaves each free for the server's first runner.
pub async fn leased_operations(pool: &PgPool) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM operations WHERE lease_holder IS NOT NULL OR lease_until IS NOT NULL",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}
