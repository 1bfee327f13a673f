//! The embedded store on real SQLite files: one process per file, the
//! pragmas every connection runs with, the migrations and how SQLite's
//! errors reach the store's.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use hookd::store::sqlite::{
    lock_path, store_error, LockError, OpenError, SqliteOptions, SqliteStore,
};
use hookd::store::StoreError;
use sqlx::SqlitePool;
use uuid::Uuid;

async fn open(path: &Path) -> Result<SqliteStore, OpenError> {
    SqliteStore::open(path, &SqliteOptions::migrating()).await
}

/// A push endpoint written as the schema wants it, without the store's
/// endpoint code, which these tests are not about.
async fn insert_endpoint(store: &SqliteStore, uid: &str) -> Result<Uuid, StoreError> {
    let id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO endpoints (id, uid, url, secret, schedule_ms, created_at, updated_at) \
         VALUES (?, ?, 'https://example.com/hook', 'whsec_x', '[1000]', 0, 0)",
    )
    .bind(id)
    .bind(uid)
    .execute(store.writer())
    .await
    .map_err(store_error)?;
    Ok(id)
}

async fn endpoint_uid(store: &SqliteStore, id: Uuid) -> Option<String> {
    sqlx::query_scalar("SELECT uid FROM endpoints WHERE id = ?")
        .bind(id)
        .fetch_optional(store.reader())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_second_open_of_the_same_file_is_refused_naming_the_file_and_this_pid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hookd.db");
    let first = open(&path).await.unwrap();

    let error = open(&path).await.expect_err("the file is taken");
    let OpenError::Lock(LockError::InUse {
        path: named, pid, ..
    }) = &error
    else {
        panic!("not refused as in use: {error:?}");
    };
    assert_eq!(named, &path);
    assert_eq!(*pid, Some(std::process::id()));
    let line = error.to_string();
    assert!(!line.contains('\n'), "{line}");
    assert!(line.contains(&path.display().to_string()), "{line}");
    assert!(
        line.contains(&format!("pid {}", std::process::id())),
        "{line}"
    );

    // The refusal left the first store as it was: it writes and reads.
    let id = insert_endpoint(&first, "still-mine").await.unwrap();
    assert_eq!(
        endpoint_uid(&first, id).await.as_deref(),
        Some("still-mine")
    );
}

#[tokio::test]
async fn the_file_is_free_again_once_its_store_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hookd.db");
    let first = open(&path).await.unwrap();
    let id = insert_endpoint(&first, "kept").await.unwrap();
    drop(first);

    let second = open(&path).await.expect("the lock went with the store");
    assert_eq!(endpoint_uid(&second, id).await.as_deref(), Some("kept"));
}

#[tokio::test]
async fn another_process_holding_the_file_is_named_by_its_pid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hookd.db");
    // std's File::try_lock is flock(2) on Linux; the child takes the same
    // lock on the same file and writes its pid, as a hookd would (the file
    // 0600, as hookd makes it: one open to others is refused for that).
    let script = "import fcntl, os, sys, time\n\
                  f = os.fdopen(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600), 'w')\n\
                  fcntl.flock(f, fcntl.LOCK_EX)\n\
                  f.write(str(os.getpid())); f.flush()\n\
                  print('locked', flush=True)\n\
                  time.sleep(60)\n";
    let spawned = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(lock_path(&path))
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipped: no python3 to hold the lock from another process");
            return;
        }
        Err(error) => panic!("python3: {error}"),
    };
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(20));
    if line.as_deref().map(str::trim) != Ok("locked") {
        let _ = child.kill();
        panic!("the child did not take the lock: {line:?}");
    }

    let refused = open(&path).await;
    let _ = child.kill();
    child.wait().unwrap();
    let error = refused.expect_err("the child holds the file");
    let OpenError::Lock(LockError::InUse { pid, .. }) = &error else {
        panic!("not refused as in use: {error:?}");
    };
    assert_eq!(*pid, Some(child.id()));
    assert!(
        error.to_string().contains(&format!("pid {}", child.id())),
        "{error}"
    );

    // The kernel dropped the lock with the process.
    open(&path).await.expect("a dead holder holds nothing");
}

/// The pragmas of every connection of `pool`, all held at once so that
/// each one is a different connection.
async fn pragmas_of_each(pool: &SqlitePool, connections: u32) -> Vec<(String, i64, i64, i64)> {
    let mut held = Vec::new();
    for _ in 0..connections {
        held.push(pool.acquire().await.unwrap());
    }
    let mut seen = Vec::new();
    for conn in &mut held {
        let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&mut **conn)
            .await
            .unwrap();
        let synchronous: i64 = sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(&mut **conn)
            .await
            .unwrap();
        let busy: i64 = sqlx::query_scalar("PRAGMA busy_timeout")
            .fetch_one(&mut **conn)
            .await
            .unwrap();
        let foreign_keys: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
            .fetch_one(&mut **conn)
            .await
            .unwrap();
        seen.push((journal, synchronous, busy, foreign_keys));
    }
    seen
}

#[tokio::test]
async fn every_connection_runs_in_wal_with_full_synchronous_commits_and_a_busy_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions {
        readers: 3,
        busy_timeout: Duration::from_millis(2500),
        ..SqliteOptions::migrating()
    };
    let store = SqliteStore::open(&dir.path().join("hookd.db"), &options)
        .await
        .unwrap();
    assert_eq!(store.writer().options().get_max_connections(), 1);

    let mut seen = pragmas_of_each(store.writer(), 1).await;
    seen.extend(pragmas_of_each(store.reader(), 3).await);
    assert_eq!(seen.len(), 4);
    for (journal, synchronous, busy, foreign_keys) in seen {
        assert_eq!(journal, "wal");
        assert_eq!(synchronous, 2, "FULL");
        assert_eq!(busy, 2500);
        assert_eq!(foreign_keys, 1);
    }
}

#[tokio::test]
async fn the_read_pool_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("hookd.db")).await.unwrap();
    let error = sqlx::query("DELETE FROM endpoints")
        .execute(store.reader())
        .await
        .expect_err("read-only");
    assert!(
        matches!(store_error(error), StoreError::Unavailable(_)),
        "SQLITE_READONLY"
    );
}

async fn schema(store: &SqliteStore) -> Vec<(String, Option<String>)> {
    sqlx::query_as("SELECT name, sql FROM sqlite_schema ORDER BY name")
        .fetch_all(store.reader())
        .await
        .unwrap()
}

#[tokio::test]
async fn migrations_apply_to_a_fresh_file_and_a_second_run_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fresh.db");
    assert!(!path.exists());
    let store = SqliteStore::open(&path, &SqliteOptions::default())
        .await
        .unwrap();
    assert!(path.exists(), "created when missing");
    assert!(schema(&store).await.is_empty(), "not migrated unless asked");

    store.migrate().await.unwrap();
    let applied = schema(&store).await;
    for table in [
        "endpoints",
        "notifications",
        "attempts",
        "events",
        "consumer_tokens",
    ] {
        assert!(applied.iter().any(|(name, _)| name == table), "{table}");
    }
    let runs = |store: SqliteStore| async move {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM _sqlx_migrations WHERE success")
            .fetch_one(store.reader())
            .await
            .unwrap()
    };
    let migrations = hookd::store::sqlite::MIGRATOR.iter().count() as i64;
    assert_eq!(runs(store.clone()).await, migrations);

    store.migrate().await.unwrap();
    assert_eq!(schema(&store).await, applied);
    assert_eq!(runs(store.clone()).await, migrations);
}

#[tokio::test]
async fn endpoints_carry_a_version_that_starts_at_zero() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("hookd.db")).await.unwrap();
    let column: (String, i64, Option<String>) = sqlx::query_as(
        "SELECT type, \"notnull\", dflt_value FROM pragma_table_info('endpoints') WHERE name = 'version'",
    )
    .fetch_one(store.reader())
    .await
    .unwrap();
    assert_eq!(column, ("INTEGER".into(), 1, Some("0".into())));

    let id = insert_endpoint(&store, "versioned").await.unwrap();
    let version: i64 = sqlx::query_scalar("SELECT version FROM endpoints WHERE id = ?")
        .bind(id)
        .fetch_one(store.reader())
        .await
        .unwrap();
    assert_eq!(version, 0);
}

#[tokio::test]
async fn a_unique_violation_is_a_conflict_naming_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("hookd.db")).await.unwrap();
    insert_endpoint(&store, "taken").await.unwrap();
    let error = insert_endpoint(&store, "taken")
        .await
        .expect_err("uid taken");
    assert!(
        matches!(&error, StoreError::Conflict(name) if name == "endpoints_uid_key"),
        "{error:?}"
    );

    // Events without an owner share one namespace of keys, as PostgreSQL's
    // NULLS NOT DISTINCT has it; with an owner, the key is the owner's.
    let insert_event = |owner: Option<&'static str>| {
        let store = store.clone();
        async move {
            sqlx::query(
                "INSERT INTO events (id, owner, event_type, key, content_type, body, deliver_at, \
                 deliveries, created_at) VALUES (?, ?, 'order.paid', 'k1', 'application/json', x'7b7d', 0, 0, 0)",
            )
            .bind(Uuid::now_v7())
            .bind(owner)
            .execute(store.writer())
            .await
            .map_err(store_error)
        }
    };
    insert_event(None).await.unwrap();
    insert_event(Some("acme")).await.unwrap();
    for owner in [None, Some("acme")] {
        let error = insert_event(owner).await.expect_err("key taken");
        assert!(
            matches!(&error, StoreError::Conflict(name) if name == "events_key"),
            "{owner:?}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_value_the_schema_refuses_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("hookd.db")).await.unwrap();
    // A push endpoint without a URL breaks endpoints_url_by_delivery.
    let error = sqlx::query(
        "INSERT INTO endpoints (id, secret, schedule_ms, created_at, updated_at) \
         VALUES (?, 'whsec_x', '[]', 0, 0)",
    )
    .bind(Uuid::now_v7())
    .execute(store.writer())
    .await
    .expect_err("check");
    assert!(matches!(store_error(error), StoreError::InvalidValue(_)));
    // STRICT: a time given as text is refused, not stored.
    let error = sqlx::query(
        "INSERT INTO endpoints (id, url, secret, schedule_ms, created_at, updated_at) \
         VALUES (?, 'https://example.com', 'whsec_x', '[]', 'yesterday', 0)",
    )
    .bind(Uuid::now_v7())
    .execute(store.writer())
    .await
    .expect_err("type");
    assert!(matches!(store_error(error), StoreError::InvalidValue(_)));
}

#[tokio::test]
async fn a_full_database_is_unavailable_and_takes_writes_again_once_it_has_room() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("hookd.db")).await.unwrap();
    // A cap on the file's pages stands in for a full disk: SQLite answers
    // SQLITE_FULL either way, and the writer connection lives on.
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(store.writer())
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "PRAGMA max_page_count = {}",
        pages + 2
    )))
    .execute(store.writer())
    .await
    .unwrap();
    let big = |uid: &'static str| {
        let store = store.clone();
        async move {
            sqlx::query(
                "INSERT INTO endpoints (id, uid, url, secret, schedule_ms, created_at, updated_at) \
                 VALUES (?, ?, 'https://example.com/hook', ?, '[1000]', 0, 0)",
            )
            .bind(Uuid::now_v7())
            .bind(uid)
            .bind("x".repeat(64 * 1024))
            .execute(store.writer())
            .await
            .map_err(store_error)
        }
    };
    let error = big("too-big").await.expect_err("no room");
    assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");

    sqlx::query("PRAGMA max_page_count = 1073741823")
        .execute(store.writer())
        .await
        .unwrap();
    big("fits").await.expect("room again");
}

#[test]
fn the_postgresql_migrations_leave_the_sqlite_directory_alone() {
    // sqlx reads the files of ./migrations, not its subdirectories: the
    // PostgreSQL migrator holds exactly the top-level files.
    let mut top: Vec<i64> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .map(|path| {
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            name.split('_').next().unwrap().parse().unwrap()
        })
        .collect();
    top.sort_unstable();
    let postgres: Vec<i64> = hookd::store::postgres::MIGRATOR
        .iter()
        .map(|m| m.version)
        .collect();
    assert_eq!(postgres, top);
    for migration in hookd::store::sqlite::MIGRATOR.iter() {
        assert!(!postgres.contains(&migration.version));
        // Every table is STRICT (a later migration that adds a column to
        // one keeps it so).
        let sql = migration.sql.as_str();
        assert_eq!(
            sql.matches("CREATE TABLE").count(),
            sql.matches(") STRICT").count(),
            "{}",
            migration.description
        );
    }
}
