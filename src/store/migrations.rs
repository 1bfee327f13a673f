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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_migration_is_what_sqlx_migrate_makes_of_its_file() {
        let pairs = [
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
