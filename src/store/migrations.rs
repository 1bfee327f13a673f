//! The schema's migrations, embedded by `build.rs`, as sqlx's migrators.
//!
//! Each is the migration `sqlx::migrate!` made of the same file (which
//! hookd used before): the same version, description and SHA-384 checksum,
//! so a database migrated by an earlier hookd is recognised as such
//! (`a_migration_is_what_sqlx_migrate_makes_of_its_file` compares them).

use std::borrow::Cow;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::SqlStr;

/// A migration file as `build.rs` embeds it.
pub(crate) struct Embedded {
    pub version: i64,
    pub description: &'static str,
    pub sql: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

/// A migrator over `files`; a migration whose first line is
/// `-- no-transaction` runs outside a transaction, as sqlx has it.
pub(crate) fn migrator(files: &[Embedded]) -> Migrator {
    let migrations = files
        .iter()
        .map(|file| {
            Migration::new(
                file.version,
                Cow::Borrowed(file.description),
                MigrationType::Simple,
                SqlStr::from_static(file.sql),
                file.sql.starts_with("-- no-transaction"),
            )
        })
        .collect();
    Migrator::with_migrations(migrations)
}

/// Where a database's schema stands against this build's migrations
/// (`version`s in order), given the versions applied to it and whether each
/// finished (`_sqlx_migrations`). A database another build migrated is
/// refused with what to do, rather than run against: a build older than
/// its schema ignored what it did not know (a hold of an ordered key, a
/// payload filter, an ed25519 key: it sent them unsigned), and a build
/// newer than its schema, told not to migrate, answered ready and then 500
/// to every request.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchemaMismatch {
    /// A migration began and did not finish (sqlx's "dirty").
    #[error(
        "the database's migration {0} did not finish: restore the database from before it, or finish it by hand and mark it done in _sqlx_migrations"
    )]
    Unfinished(i64),
    /// Applied migrations this build does not know: a newer hookd made the
    /// schema.
    #[error(
        "the database was migrated by a newer hookd (migration {newest} is unknown to this build, and {count} in all): run that build or a newer one; going back to this one needs a backup taken before the upgrade"
    )]
    Newer { newest: i64, count: usize },
    /// This build's migrations not applied, with migrating turned off.
    #[error(
        "the database lacks {count} of this build's migrations (the first: {first}): run `hookd migrate` with this build, or set database.migrate = true"
    )]
    Older { first: i64, count: usize },
}

/// `applied`'s mismatch with `known`, in the order a fix needs: an
/// unfinished migration, then a newer schema, then (only when this build
/// will not migrate it, `migrating` false) an older one.
pub(crate) fn mismatch(
    applied: &[(i64, bool)],
    known: &Migrator,
    migrating: bool,
) -> Option<SchemaMismatch> {
    if let Some((version, _)) = applied.iter().find(|(_, finished)| !finished) {
        return Some(SchemaMismatch::Unfinished(*version));
    }
    let ours: std::collections::HashSet<i64> = known.iter().map(|m| m.version).collect();
    let unknown: Vec<i64> = applied
        .iter()
        .map(|(version, _)| *version)
        .filter(|version| !ours.contains(version))
        .collect();
    if let Some(newest) = unknown.iter().max() {
        return Some(SchemaMismatch::Newer {
            newest: *newest,
            count: unknown.len(),
        });
    }
    if migrating {
        return None;
    }
    let done: std::collections::HashSet<i64> = applied.iter().map(|(v, _)| *v).collect();
    let pending: Vec<i64> = known
        .iter()
        .map(|m| m.version)
        .filter(|version| !done.contains(version))
        .collect();
    pending.first().map(|first| SchemaMismatch::Older {
        first: *first,
        count: pending.len(),
    })
}

/// The versions applied to a database and whether each finished; none
/// before its first migration (no table yet). The same statement in both
/// dialects.
pub(crate) const APPLIED: &str = "SELECT version, success FROM _sqlx_migrations ORDER BY version";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_another_build_made_is_named_with_what_to_do() {
        let known = migrator(SQLITE);
        let versions: Vec<i64> = known.iter().map(|m| m.version).collect();
        let all: Vec<(i64, bool)> = versions.iter().map(|v| (*v, true)).collect();
        assert_eq!(mismatch(&all, &known, false), None);
        assert_eq!(mismatch(&all, &known, true), None);
        assert_eq!(mismatch(&[], &known, true), None, "a new database");

        let older = &all[..all.len() - 2];
        assert_eq!(
            mismatch(older, &known, true),
            None,
            "this build migrates it"
        );
        assert_eq!(
            mismatch(older, &known, false),
            Some(SchemaMismatch::Older {
                first: versions[versions.len() - 2],
                count: 2
            })
        );

        let mut newer = all.clone();
        newer.extend([(99_990_001, true), (99_990_002, true)]);
        let refused = mismatch(&newer, &known, true);
        assert_eq!(
            refused,
            Some(SchemaMismatch::Newer {
                newest: 99_990_002,
                count: 2
            })
        );
        assert!(refused.unwrap().to_string().contains("newer hookd"));

        let mut unfinished = all.clone();
        unfinished.last_mut().unwrap().1 = false;
        assert_eq!(
            mismatch(&unfinished, &known, true),
            Some(SchemaMismatch::Unfinished(*versions.last().unwrap()))
        );
    }

    #[test]
    fn a_migration_is_what_sqlx_migrate_makes_of_its_file() {
        let pairs = [
            #[cfg(feature = "server")]
            (migrator(POSTGRES), sqlx::migrate!("./migrations")),
            (migrator(SQLITE), sqlx::migrate!("./migrations/sqlite")),
        ];
        for (ours, macro_made) in pairs {
            assert_eq!(ours.iter().count(), macro_made.iter().count());
            for (a, b) in ours.iter().zip(macro_made.iter()) {
                assert_eq!(a.version, b.version);
                assert_eq!(a.description, b.description);
                assert_eq!(a.migration_type, b.migration_type);
                assert_eq!(a.sql.as_str(), b.sql.as_str());
                assert_eq!(a.checksum, b.checksum, "{}", a.version);
                assert_eq!(a.no_tx, b.no_tx, "{}", a.version);
            }
            assert_eq!(ours.locking, macro_made.locking);
            assert_eq!(ours.table_name, macro_made.table_name);
        }
    }
}
