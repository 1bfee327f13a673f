//! Embeds the schema's migrations, `migrations/` (PostgreSQL) and
//! `migrations/sqlite/`, as lists that `store::migrations` hands to sqlx.
//!
//! `sqlx::migrate!` did this, but the macro needs sqlx's `macros` feature,
//! which builds a second copy of sqlx's core, both drivers and SQLite's C
//! for the compiler: 139 compile units and about 50 s of their time in a
//! release build from nothing (BENCHMARKS.md, "#51: the first build
//! without sqlx's macros"). Read as sqlx reads a migrations directory:
//! `<version>_<description>.sql`, the files of the directory alone, in
//! version order.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    // A directory is scanned whole: a migration added, changed or removed
    // rebuilds the list.
    println!("cargo:rerun-if-changed=migrations");
    let mut code = String::new();
    // PostgreSQL's only with server mode (the `server` feature).
    let server = std::env::var_os("CARGO_FEATURE_SERVER").is_some();
    let lists = [("POSTGRES", "migrations"), ("SQLITE", "migrations/sqlite")];
    for (list, dir) in lists
        .into_iter()
        .filter(|(list, _)| server || *list != "POSTGRES")
    {
        writeln!(code, "pub(crate) static {list}: &[Embedded] = &[").unwrap();
        for (version, description, path) in migrations(Path::new(dir)) {
            writeln!(
                code,
                "    Embedded {{ version: {version}, description: {description:?}, sql: include_str!({path:?}) }},",
            )
            .unwrap();
        }
        writeln!(code, "];").unwrap();
    }
    let out = Path::new(&std::env::var_os("OUT_DIR").unwrap()).join("migrations.rs");
    std::fs::write(out, code).unwrap();
}

/// `dir`'s migrations in version order: version, description (the name's
/// underscores as spaces) and absolute path.
fn migrations(dir: &Path) -> Vec<(i64, String, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_file() {
            continue;
        }
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let Some((version, rest)) = name.split_once('_') else {
            panic!("{}: not <version>_<description>.sql", path.display());
        };
        let Some(description) = rest.strip_suffix(".sql") else {
            panic!("{}: not <version>_<description>.sql", path.display());
        };
        assert!(
            !description.ends_with(".up") && !description.ends_with(".down"),
            "{}: hookd's migrations run forward only",
            path.display()
        );
        let version = version
            .parse()
            .unwrap_or_else(|_| panic!("{}: the version is not a number", path.display()));
        let absolute = std::fs::canonicalize(&path).unwrap();
        found.push((
            version,
            description.replace('_', " "),
            absolute.to_str().unwrap().to_string(),
        ));
    }
    found.sort_by_key(|(version, _, _)| *version);
    found
}
