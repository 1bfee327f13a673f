//! The embedded database's files are the account's alone (issue #47):
//! they hold every signing secret (or, sealed, still every payload and a
//! receiver's URL), so no other local account may read them, and the
//! lock beside them must not be something another account can hold or
//! point elsewhere.
//!
//! - The data directory, when hookd creates it, is made 0700; one named by
//!   `--data-dir` that exists is refused when open to group or others
//!   (`chmod 700` fixes it), or when it is a link. Without `--data-dir` (the
//!   working directory, as the README's first command runs hookd, in a home
//!   or a checkout that is usually 0755; or the directory of a configured
//!   `embedded.path`, or of `hookd copy --from`) only the files' own modes
//!   are enforced: 0600 files are private in a 0755 directory.
//! - Every file hookd makes (the database, the lock) is created 0600
//!   whatever the umask. SQLite creates its `-wal`, `-shm` and `-journal`
//!   files with the database file's mode, so creating the database file
//!   ourselves, before SQLite opens it, makes them 0600 too.
//! - A file that exists is refused when open to group or others (`chmod
//!   600` fixes it), when it is a symbolic link (SQLite resolves links in
//!   a database path, and a linked lock file made a root-run `hookd
//!   migrate` write its pid into the file it pointed at), when it is not a
//!   regular file, or when it has another name (a hard link: the same
//!   overwrite). The lock and the database are opened with `O_NOFOLLOW`,
//!   so a link put in place after the check is not followed either.
//!
//! Each refusal is one line naming the path and what fixes it; `hookd`
//! exits 78 on it, as on other configuration it must not start with.

use std::fs::{DirBuilder, File, Metadata, OpenOptions, Permissions};
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The mode of every file hookd creates.
const FILE_MODE: u32 = 0o600;
/// The mode of a data directory hookd creates.
const DIR_MODE: u32 = 0o700;

/// Why a file or the data directory is refused.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Readable, writable or searchable by group or others: every such
    /// path of the directory and its files, named at once with the one
    /// command that fixes them all. Named one a start, a data directory an
    /// older build made under umask 022 took three to five refused starts.
    #[error("{}", open_paths(.0))]
    Open(Vec<OpenPath>),
    #[error(
        "{} is a symbolic link, which hookd does not follow: remove it, or give hookd the path it points to",
        .0.display()
    )]
    Symlink(PathBuf),
    #[error("{} is not a {kind}", .path.display())]
    Kind { path: PathBuf, kind: &'static str },
    #[error(
        "{} has {links} names (hard links): hookd's files must have one",
        .path.display()
    )]
    Linked { path: PathBuf, links: u64 },
    /// The cause is in the message, not the error chain: a chain printed
    /// whole (`{:#}`) said it twice.
    #[error("cannot use {}: {error}", .path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// A path open to other accounts: its mode and the one that fixes it.
#[derive(Debug)]
pub struct OpenPath {
    path: PathBuf,
    mode: u32,
    fix: u32,
}

/// `FileError::Open`'s line.
fn open_paths(open: &[OpenPath]) -> String {
    let named: Vec<String> = open
        .iter()
        .map(|o| format!("{} (mode {:03o})", o.path.display(), o.mode))
        .collect();
    let mut fixes: Vec<(u32, Vec<String>)> = Vec::new();
    for o in open {
        let path = o.path.display().to_string();
        match fixes.iter_mut().find(|(fix, _)| *fix == o.fix) {
            Some((_, paths)) => paths.push(path),
            None => fixes.push((o.fix, vec![path])),
        }
    }
    let command: Vec<String> = fixes
        .iter()
        .map(|(fix, paths)| format!("chmod {fix:o} {}", paths.join(" ")))
        .collect();
    let (subject, verb) = match named.as_slice() {
        [one] => (one.clone(), "is"),
        [rest @ .., last] => (format!("{} and {last}", rest.join(", ")), "are"),
        [] => (String::new(), "is"),
    };
    format!(
        "{subject} {verb} open to other accounts: run `{}`",
        command.join(" && ")
    )
}

/// What an embedded database's checks found open to other accounts, kept
/// to be named together (`FileError::Open`); any other refusal ends the
/// checks at once.
#[derive(Default)]
struct Found(Vec<OpenPath>);

impl Found {
    fn check(&mut self, checked: Result<(), FileError>) -> Result<(), FileError> {
        match checked {
            Err(FileError::Open(open)) => {
                self.0.extend(open);
                Ok(())
            }
            other => other,
        }
    }

    fn end(self) -> Result<(), FileError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(FileError::Open(self.0))
        }
    }
}

impl FileError {
    /// Whether hookd refuses what it found (a mode, a link), rather than
    /// failing to reach it: a deployment to fix, exit 78.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, FileError::Io { .. })
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FileError + '_ {
    move |error| FileError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// `path` with `suffix` appended to its name (`hookd.db` → `hookd.db-wal`).
pub(crate) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The files of the database at `path`: the file, SQLite's three, the lock.
fn companions(path: &Path) -> [PathBuf; 5] {
    [
        path.to_path_buf(),
        beside(path, "-wal"),
        beside(path, "-shm"),
        beside(path, "-journal"),
        super::lock_path(path),
    ]
}

/// Before `hookd serve` or `migrate` opens the database at `path`: its
/// directory made (0700) when missing, or checked when `private_dir`
/// (`--data-dir`); the files that exist checked, and the database file
/// created 0600 when missing.
pub(crate) fn prepare(path: &Path, private_dir: bool) -> Result<(), FileError> {
    let mut found = Found::default();
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        match std::fs::symlink_metadata(dir) {
            Err(error) if error.kind() == ErrorKind::NotFound => {
                DirBuilder::new()
                    .recursive(true)
                    .mode(DIR_MODE)
                    .create(dir)
                    .map_err(io(dir))?;
                // Exactly 0700, whatever the umask.
                std::fs::set_permissions(dir, Permissions::from_mode(DIR_MODE)).map_err(io(dir))?;
            }
            Err(error) => return Err(io(dir)(error)),
            Ok(meta) if private_dir => found.check(check_dir(dir, &meta))?,
            Ok(_) => {}
        }
    }
    found.check(check_files(path))?;
    found.end()?;
    if std::fs::symlink_metadata(path).is_ok() {
        // Read-only: a file hookd may not write is for `check_writable` to
        // name, after the lock.
        open_nofollow(path, false).map(drop)
    } else {
        open_private(path).map(drop)
    }
}

/// What `prepare` would refuse of the database at `path`, found without
/// creating anything (`hookd config check`): its directory, when it
/// exists (checked as private when `private_dir`), and the files that
/// exist.
pub fn check_existing(path: &Path, private_dir: bool) -> Result<(), FileError> {
    let mut found = Found::default();
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        match std::fs::symlink_metadata(dir) {
            Err(error) if error.kind() == ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(io(dir)(error)),
            Ok(meta) if private_dir => found.check(check_dir(dir, &meta))?,
            Ok(meta) if !meta.is_dir() => {
                return Err(FileError::Kind {
                    path: dir.to_path_buf(),
                    kind: "directory",
                })
            }
            Ok(_) => {}
        }
    }
    found.check(check_files(path))?;
    found.end()
}

/// The files of the database at `path` that exist, checked (without
/// following links); the ones missing are left to be created.
pub(crate) fn check_files(path: &Path) -> Result<(), FileError> {
    let mut found = Found::default();
    for file in companions(path) {
        match std::fs::symlink_metadata(&file) {
            Err(error) if error.kind() == ErrorKind::NotFound => {}
            Err(error) => return Err(io(&file)(error)),
            Ok(meta) => found.check(check_file(&file, &meta))?,
        }
    }
    found.end()
}

fn check_dir(dir: &Path, meta: &Metadata) -> Result<(), FileError> {
    if meta.file_type().is_symlink() {
        return Err(FileError::Symlink(dir.to_path_buf()));
    }
    if !meta.is_dir() {
        return Err(FileError::Kind {
            path: dir.to_path_buf(),
            kind: "directory",
        });
    }
    private(dir, meta, DIR_MODE)
}

fn check_file(file: &Path, meta: &Metadata) -> Result<(), FileError> {
    if meta.file_type().is_symlink() {
        return Err(FileError::Symlink(file.to_path_buf()));
    }
    if !meta.is_file() {
        return Err(FileError::Kind {
            path: file.to_path_buf(),
            kind: "regular file",
        });
    }
    if meta.nlink() > 1 {
        return Err(FileError::Linked {
            path: file.to_path_buf(),
            links: meta.nlink(),
        });
    }
    private(file, meta, FILE_MODE)
}

fn private(path: &Path, meta: &Metadata, fix: u32) -> Result<(), FileError> {
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(FileError::Open(vec![OpenPath {
            path: path.to_path_buf(),
            mode,
            fix,
        }]));
    }
    Ok(())
}

/// Opens `path` for reading and writing without following a link, creating
/// it 0600 (whatever the umask) when missing; what it opened is checked as
/// `check_files` checks, on the open file, so nothing swapped in between a
/// check and the open is used. Never truncates.
pub(crate) fn open_private(path: &Path) -> Result<File, FileError> {
    // O_EXCL: created here, or not at all (a link is not followed either).
    // O_NONBLOCK: a FIFO put in the file's place would block the open; on a
    // regular file it changes nothing.
    let created = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    match created {
        Ok(file) => {
            file.set_permissions(Permissions::from_mode(FILE_MODE))
                .map_err(io(path))?;
            return Ok(file);
        }
        Err(error) if error.kind() == ErrorKind::AlreadyExists => {}
        Err(error) => return Err(io(path)(error)),
    }
    open_nofollow(path, true)
}

/// Whether the file system holding `path` has room for one more page of
/// it: a page written to `<path>-probe` (created 0600, a link not
/// followed), then removed. A full disk, or one mounted read-only, says so.
pub(crate) fn room_to_write(path: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let probe = beside(path, "-probe");
    let written = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&probe)
        .and_then(|mut file| file.write_all(&[0; PROBE_BYTES]));
    let removed = std::fs::remove_file(&probe);
    written?;
    match removed {
        Err(error) if error.kind() != ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// SQLite's default page.
const PROBE_BYTES: usize = 4096;

/// Opens `path`, which exists, without following a link, and checks what
/// it opened as `check_files` does.
/// Whether this process may create and remove files in `dir`, as SQLite
/// does with its `-wal` and `-shm`: a file of its own made there and
/// removed at once (the permission bits alone would miss ACLs, read-only
/// mounts and root's rights).
pub(crate) fn writable_dir(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".hookd-write-check-{}", std::process::id()));
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}

fn open_nofollow(path: &Path, write: bool) -> Result<File, FileError> {
    let file = OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|error| {
            if error.raw_os_error() == Some(libc::ELOOP) {
                FileError::Symlink(path.to_path_buf())
            } else {
                io(path)(error)
            }
        })?;
    let meta = file.metadata().map_err(io(path))?;
    check_file(path, &meta)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn a_missing_data_dir_and_database_file_are_created_private() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("a").join("b");
        let db = data.join("hookd.db");
        prepare(&db, true).unwrap();
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&db), 0o600);
    }

    #[test]
    fn an_open_data_dir_is_refused_only_when_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), Permissions::from_mode(0o755)).unwrap();
        let db = dir.path().join("hookd.db");
        let refused = prepare(&db, true).unwrap_err().to_string();
        assert!(
            refused.ends_with(&format!("run `chmod 700 {}`", dir.path().display())),
            "{refused}"
        );
        assert!(!db.exists());
        prepare(&db, false).unwrap();
        assert_eq!(mode(&db), 0o600);
    }

    #[test]
    fn an_open_file_a_link_and_a_second_name_are_each_refused_naming_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("hookd.db");
        std::fs::write(&db, b"").unwrap();
        std::fs::set_permissions(&db, Permissions::from_mode(0o640)).unwrap();
        let refused = prepare(&db, false).unwrap_err().to_string();
        assert!(
            refused.ends_with(&format!("run `chmod 600 {}`", db.display())),
            "{refused}"
        );

        std::fs::set_permissions(&db, Permissions::from_mode(0o600)).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, b"kept").unwrap();
        std::os::unix::fs::symlink(&elsewhere, beside(&db, ".lock")).unwrap();
        assert!(matches!(prepare(&db, false), Err(FileError::Symlink(_))));
        assert!(matches!(
            open_private(&beside(&db, ".lock")),
            Err(FileError::Symlink(_))
        ));
        assert_eq!(std::fs::read(&elsewhere).unwrap(), b"kept");

        std::fs::remove_file(beside(&db, ".lock")).unwrap();
        std::fs::hard_link(&db, dir.path().join("other")).unwrap();
        assert!(matches!(
            open_private(&db),
            Err(FileError::Linked { links: 2, .. })
        ));
    }
}
