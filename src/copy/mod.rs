//! `hookd copy --from sqlite:PATH --to postgres://…`: moves an embedded
//! hookd's data (docs/design.md §12) into PostgreSQL for server mode. Endpoints
//! with their secrets sealed as stored (same keys: configure the server's
//! `secrets.keys` as the embedded hookd's), consumer tokens, events,
//! attempts and notifications, pending and finished alike (`tables` says
//! which columns, in what order, and what is deliberately left behind).
//!
//! How it runs:
//! - the source must not be in use: a running hookd holds its lock and the
//!   copy refuses, naming it (`source`);
//! - the target gets PostgreSQL's migrations first, then must hold nothing
//!   (but the operator endpoint a server makes from its configuration),
//!   unless `--merge` (`target`);
//! - each table is read in primary key order, a page at a time, and each
//!   page is written by one statement that skips rows already there by
//!   primary key: a second run copies nothing, and a run that stopped
//!   midway is completed by running it again with `--merge`;
//! - pending push notifications arrive marked `needs_index`, which a
//!   server's housekeeping adds to its Redis due index within a second of
//!   starting (or at once, if it is running): they are delivered as they
//!   would have been.
//!
//! Values are copied as stored, never opened: a sealed secret arrives
//! byte for byte (`values`), so the copy needs no key and sees none.

mod progress;
mod source;
mod tables;
mod target;
mod values;

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

pub use values::{BadValue, ReadError};

use progress::Progress;
use source::Source;
use tables::{NOT_COPIED, TABLES};
use target::Target;

/// Rows per page at most: read at once, written by one statement. A
/// notification binds 28 values (PostgreSQL takes 65,535 per statement).
const PAGE: usize = 500;
/// Bytes of values per page at most (a page ends at the row that reaches
/// it): 500 notifications at the default `api.max_payload_bytes` would be
/// 128 MiB, held twice while a page is bound.
const PAGE_BYTES: usize = 16 << 20;

/// `hookd copy`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct CopyArgs {
    /// The embedded hookd's database, as `sqlite:PATH` (e.g.
    /// `sqlite:./hookd.db`). No hookd may be running on it.
    #[arg(long, value_name = "sqlite:PATH")]
    pub from: String,
    /// The server mode's PostgreSQL database (`postgres://…`); its
    /// migrations are applied first.
    #[arg(
        long,
        value_name = "postgres://…",
        env = "HOOKD_DATABASE__URL",
        hide_env_values = true
    )]
    pub to: String,
    /// Copy into a database that already holds data (or finish a copy that
    /// stopped midway): rows already there, by primary key, are left as
    /// they are.
    #[arg(long)]
    pub merge: bool,
}

/// Why a copy did not run or did not finish. Every message is one line;
/// a cause is the error's `source`, which `hookd` prints after it.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// The value is not shown: swapped arguments would print a password.
    #[error("--from must be sqlite:PATH (e.g. sqlite:./hookd.db)")]
    FromNotSqlite,
    #[error("--to must be a postgres:// or postgresql:// URL")]
    ToNotPostgres,
    /// The target's first connection failed; why, naming the server.
    #[error("{0}")]
    TargetUnreachable(String),
    #[error("{}: no such database file", .0.display())]
    NoSource(PathBuf),
    /// The file or a file beside it is open to other accounts, a link, or
    /// not a plain file (one line naming the fix).
    #[error(transparent)]
    SourceFiles(#[from] crate::store::sqlite::FileError),
    /// A running hookd holds the file (the message names its pid).
    #[error("cannot copy from a database a hookd is running on (stop it first)")]
    SourceInUse(#[source] crate::store::sqlite::LockError),
    /// The lock could not be taken (not because another process holds it).
    #[error("cannot take the database's lock")]
    SourceLock(#[source] crate::store::sqlite::LockError),
    #[error("{}: not a hookd database (it has no migration history)", .0.display())]
    NotHookd(PathBuf),
    #[error(
        "{}: its embedded schema is at migrations {applied:?}, this hookd's at {known:?}: \
         run `hookd migrate --data-dir DIR` of this version on it first",
        .path.display()
    )]
    SourceSchema {
        path: PathBuf,
        applied: Vec<i64>,
        known: Vec<i64>,
    },
    #[error("cannot read {}", .path.display())]
    Source {
        path: PathBuf,
        #[source]
        source: sqlx::Error,
    },
    #[error("the target database failed")]
    Target(#[source] sqlx::Error),
    #[error("cannot apply migrations to the target database")]
    Migrate(#[source] sqlx::migrate::MigrateError),
    /// A schema has a column this build's copy does not name, or lacks one
    /// it names: copying would leave data behind.
    #[error(
        "{table} in the {side} has columns the copy does not know {unknown:?} \
         and lacks columns it copies {missing:?}: this hookd cannot copy it"
    )]
    Columns {
        table: &'static str,
        side: &'static str,
        unknown: Vec<String>,
        missing: Vec<String>,
    },
    /// The file has a table the copy neither copies nor leaves behind by
    /// design (`tables::NOT_COPIED`): copying would leave it behind.
    #[error("the source has tables the copy does not know {0:?}: this hookd cannot copy it")]
    Tables(Vec<String>),
    /// A fan-out a stopped hookd had not finished writing
    /// (`store::sqlite::fanout`): its rest is not in `notifications` yet.
    #[error(
        "{}: a fan-out is not written out whole (hookd stopped while writing it): start hookd on this file once and stop it, then copy",
        .0.display()
    )]
    FanOutPending(std::path::PathBuf),
    #[error(
        "the target database is not empty (it holds {0}): pass --merge to copy into it anyway \
         (rows already there are kept), or to finish a copy that stopped"
    )]
    NotEmpty(String),
    #[error("reading {table} from the source")]
    Read {
        table: &'static str,
        #[source]
        source: ReadError,
    },
    #[error("writing {table} to the target")]
    Write {
        table: &'static str,
        #[source]
        source: sqlx::Error,
    },
    /// A row of the source has the uid or key of another row of the target
    /// (the primary keys differ): only a merge can meet one.
    #[error(
        "writing {table}: a row clashes on {constraint} with another row of the target; \
         change one of them, then run the copy again with --merge"
    )]
    Clash {
        table: &'static str,
        constraint: String,
    },
}

/// What a copy did to one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableCopied {
    pub table: &'static str,
    /// Rows written.
    pub copied: u64,
    /// Rows left out because the target had one with the same primary key.
    pub skipped: u64,
}

/// What a copy did, table by table, in the order copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub tables: Vec<TableCopied>,
}

impl Summary {
    /// The counts of `table` (`None`: not a table the copy copies).
    pub fn table(&self, table: &str) -> Option<TableCopied> {
        self.tables.iter().find(|t| t.table == table).copied()
    }

    /// Rows written, over every table.
    pub fn copied(&self) -> u64 {
        self.tables.iter().map(|t| t.copied).sum()
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{:<16} {:>12} {:>12}", "table", "copied", "skipped")?;
        for t in &self.tables {
            writeln!(f, "{:<16} {:>12} {:>12}", t.table, t.copied, t.skipped)?;
        }
        Ok(())
    }
}

/// Runs `hookd copy`: copies, prints the summary on stdout, and returns it.
pub async fn run(args: CopyArgs) -> anyhow::Result<Summary> {
    let path = source_path(&args.from)?;
    if !(args.to.starts_with("postgres://") || args.to.starts_with("postgresql://")) {
        return Err(CopyError::ToNotPostgres.into());
    }
    let mut source = Source::open(&path).await?;
    let target = Target::connect(&args.to).await?;
    let summary = copy(&mut source, &target, args.merge).await;
    source.close().await;
    target.close().await;
    let summary = summary?;
    // The copy is done: a reader that stopped reading (`| head`) loses
    // the summary, and the command still succeeds (print! would panic).
    let _ = std::io::Write::write_all(
        &mut std::io::stdout().lock(),
        summary.to_string().as_bytes(),
    );
    if args.merge && summary.copied() > 0 {
        // A running server reads a consumer token when it or its endpoint
        // changes, and a copied row keeps the file's times: it would not
        // see the tokens copied beside it.
        eprintln!(
            "hookd copy: restart the server's hookd processes already running on this database, so that they read the copied consumer tokens"
        );
    }
    Ok(summary)
}

/// The file named by `sqlite:PATH` (`sqlite://PATH` too, as sqlx writes it).
fn source_path(from: &str) -> Result<PathBuf, CopyError> {
    let path = from
        .strip_prefix("sqlite://")
        .or_else(|| from.strip_prefix("sqlite:"))
        .filter(|path| !path.is_empty())
        .ok_or(CopyError::FromNotSqlite)?;
    Ok(Path::new(path).to_path_buf())
}

async fn copy(source: &mut Source, target: &Target, merge: bool) -> Result<Summary, CopyError> {
    target.migrate().await?;
    let unknown: Vec<String> = (source.tables().await?.into_iter())
        .filter(|name| !TABLES.iter().any(|t| t.name == name) && !NOT_COPIED.contains(&&**name))
        .collect();
    if !unknown.is_empty() {
        return Err(CopyError::Tables(unknown));
    }
    for table in &TABLES {
        let known: BTreeSet<String> = table.columns.iter().map(|c| c.name.to_string()).collect();
        let sides = [
            ("source", source.columns(table.name).await?),
            ("target", target.columns(table.name).await?),
        ];
        for (side, found) in sides {
            if found != known {
                return Err(CopyError::Columns {
                    table: table.name,
                    side,
                    unknown: found.difference(&known).cloned().collect(),
                    missing: known.difference(&found).cloned().collect(),
                });
            }
        }
    }
    let held = target.holdings().await?;
    if !held.is_empty() && !merge {
        return Err(CopyError::NotEmpty(target::describe(&held)));
    }
    let mut counts = Vec::with_capacity(TABLES.len());
    for table in &TABLES {
        counts.push(source.count(table).await?);
    }
    tracing::debug!(source = %source.path().display(), ?counts, "copying");
    let mut progress = Progress::new(counts.iter().sum());
    let mut tables = Vec::with_capacity(TABLES.len());
    for (table, rows) in TABLES.iter().zip(counts) {
        progress.start(table.name, rows);
        let mut done = TableCopied {
            table: table.name,
            copied: 0,
            skipped: 0,
        };
        let mut after = None;
        loop {
            let page = source
                .page(table, after.as_deref(), PAGE, PAGE_BYTES)
                .await?;
            let read = page.rows.len() as u64;
            let copied = target.insert(table, page.rows).await?;
            done.copied += copied;
            done.skipped += read - copied;
            progress.advance(read);
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        progress.finish_table(done.copied, done.skipped);
        tables.push(done);
    }
    progress.finish();
    Ok(Summary { tables })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_is_named_as_a_sqlite_url() {
        assert_eq!(
            source_path("sqlite:./hookd.db").unwrap(),
            Path::new("./hookd.db")
        );
        assert_eq!(
            source_path("sqlite:///var/lib/hookd.db").unwrap(),
            Path::new("/var/lib/hookd.db")
        );
        assert!(matches!(
            source_path("./hookd.db"),
            Err(CopyError::FromNotSqlite)
        ));
        assert!(matches!(
            source_path("sqlite:"),
            Err(CopyError::FromNotSqlite)
        ));
    }

    #[test]
    fn the_summary_is_a_table_of_counts() {
        let summary = Summary {
            tables: vec![TableCopied {
                table: "endpoints",
                copied: 3,
                skipped: 1,
            }],
        };
        let text = summary.to_string();
        assert!(
            text.lines().nth(1).unwrap().starts_with("endpoints"),
            "{text}"
        );
        assert_eq!(summary.copied(), 3);
    }
}
