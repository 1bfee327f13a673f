//! What the copy refuses: a merged row that clashes on a unique index, a
//! source a running hookd holds, a missing file, and a column or table it
//! does not know (before anything is copied).

use hookd::copy::{CopyArgs, CopyError};
use hookd::store::endpoints::Endpoint;
use hookd::store::sqlite::{SqliteOptions, SqliteStore};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::Connection;

use super::copy;
use super::embedded::embedded;
use crate::conformance::fixtures;

#[sqlx::test]
async fn a_merge_refuses_a_row_that_clashes_with_another_on_a_unique_index(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let source = embedded("http://127.0.0.1:9").await;
    // The server already has a live endpoint named as one of the file's.
    let store = hookd::store::postgres::PgStore::new(pool.clone());
    fixtures::create(
        &store,
        Endpoint {
            uid: source.push.uid.clone(),
            ..fixtures::endpoint()
        },
    )
    .await;

    let error = copy(&source.path, &pool, true).await.unwrap_err();

    assert!(
        matches!(
            error.downcast_ref(),
            Some(CopyError::Clash {
                table: "endpoints",
                ..
            })
        ),
        "{error}"
    );
    assert!(error.to_string().contains("endpoints_uid_key"), "{error}");
}

#[tokio::test]
async fn a_source_a_running_hookd_holds_is_refused_naming_its_pid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hookd.db");
    let running = SqliteStore::open(&path, &SqliteOptions::migrating())
        .await
        .unwrap();

    let error = hookd::copy::run(CopyArgs {
        from: format!("sqlite:{}", path.display()),
        to: "postgres://127.0.0.1:1/unused".into(),
        merge: false,
    })
    .await
    .unwrap_err();

    assert!(
        matches!(error.downcast_ref(), Some(CopyError::SourceInUse(_))),
        "{error}"
    );
    let message = format!("{error:#}");
    assert!(!message.contains('\n'), "one line: {message}");
    assert!(
        message.contains(&format!("pid {}", std::process::id())),
        "{message}"
    );
    assert!(message.contains("hookd.db"), "{message}");
    // The running store is unharmed.
    running.ping().await.unwrap();
    running.close().await;
}

#[tokio::test]
async fn a_missing_file_is_refused_and_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nothing.db");
    let error = hookd::copy::run(CopyArgs {
        from: format!("sqlite:{}", path.display()),
        to: "postgres://127.0.0.1:1/unused".into(),
        merge: false,
    })
    .await
    .unwrap_err();
    assert!(
        matches!(error.downcast_ref(), Some(CopyError::NoSource(_))),
        "{error}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing written"
    );
}

#[sqlx::test]
async fn a_column_the_copy_does_not_know_stops_it_before_anything_is_copied(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let source = embedded("http://127.0.0.1:9").await;
    sqlx::query("ALTER TABLE endpoints ADD COLUMN colour text")
        .execute(&pool)
        .await
        .unwrap();

    let error = copy(&source.path, &pool, false).await.unwrap_err();

    assert!(
        matches!(
            error.downcast_ref(),
            Some(CopyError::Columns {
                table: "endpoints",
                side: "target",
                ..
            })
        ),
        "{error}"
    );
    assert!(error.to_string().contains("colour"), "{error}");
    let endpoints: i64 = sqlx::query_scalar("SELECT count(*) FROM endpoints")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(endpoints, 0);
}

/// A table of the file that the copy neither copies nor leaves behind by
/// design stops it, as a column does: operations were once left behind
/// so, and a bulk cancel answered 202 was lost in the move.
#[sqlx::test]
async fn a_table_the_copy_does_not_know_stops_it_before_anything_is_copied(
    _: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let (pool, _closes) = crate::helpers::test_pool(connect).await;
    let source = embedded("http://127.0.0.1:9").await;
    let mut file = sqlx::SqliteConnection::connect(&format!("sqlite:{}", source.path.display()))
        .await
        .unwrap();
    sqlx::query("CREATE TABLE colours (name TEXT)")
        .execute(&mut file)
        .await
        .unwrap();
    file.close().await.unwrap();

    let error = copy(&source.path, &pool, false).await.unwrap_err();

    assert!(
        matches!(error.downcast_ref(), Some(CopyError::Tables(tables)) if tables == &["colours"]),
        "{error}"
    );
    let endpoints: i64 = sqlx::query_scalar("SELECT count(*) FROM endpoints")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(endpoints, 0);
}
