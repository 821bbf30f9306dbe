//! The database file itself: one server per file, owner-only modes, and a
//! quick integrity check before a server trusts it.
//!
//! A second server on the same file would serve the same leases without
//! seeing the first one's waiters, and its start would refresh the first
//! one's expiries; so a server holds an exclusive lock on `<db>.lock` for its
//! whole life, taken before anything reads or writes the database. Backup and
//! check never take it: they are readers, safe beside a running server.
//! Its size and its log's are read for `GET /v1/status`.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::store::{StoreError, StoreResult};

/// Owner read and write, nothing for anyone else: the file holds lease tokens.
pub const OWNER_ONLY: u32 = 0o600;

/// `<path><suffix>`, beside `path` (`leasehold.db` → `leasehold.db.lock`).
pub fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The size in bytes of the file at `path`, 0 when there is none (a WAL
/// the last connection to close removed).
pub async fn size(path: &Path) -> StoreResult<u64> {
    match tokio::fs::metadata(path).await {
        Ok(meta) => Ok(meta.len()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(0),
        Err(e) => {
            Err(StoreError::Unavailable(format!("cannot read {}: {e}", path.display())).into())
        }
    }
}

/// Opens (creating it mode 0600 if missing) a file that must be readable by
/// its owner alone, whatever the umask.
pub fn open_owner_only(path: &Path, options: &mut OpenOptions) -> std::io::Result<File> {
    let file = options.mode(OWNER_ONLY).open(path)?;
    restrict(path, &file)?;
    Ok(file)
}

/// Takes from an open file every permission of its group and of others (a
/// umask that let them through, or a file made by an older version). What
/// its owner may do is left as it is: a file made read-only stays so.
fn restrict(path: &Path, file: &File) -> std::io::Result<()> {
    let mode = file.metadata()?.permissions().mode() & 0o777;
    if mode & !OWNER_ONLY != 0 {
        file.set_permissions(Permissions::from_mode(mode & OWNER_ONLY))?;
        tracing::info!(file = %path.display(), was = format!("{mode:o}"), "made the file readable by its owner alone");
    }
    Ok(())
}

/// Takes an exclusive `flock` on `file` without waiting: `None` while
/// another process (or another open of the file) holds it. The kernel lets
/// go of it when the process dies, however it dies.
pub fn try_lock(file: File) -> std::io::Result<Option<Flock<File>>> {
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => Ok(Some(locked)),
        Err((_, Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, errno)) => Err(errno.into()),
    }
}

/// The exclusive lock of one server on one database file, held until dropped.
#[derive(Debug)]
pub struct ServerLock {
    _file: Flock<File>,
}

impl ServerLock {
    /// Takes the lock beside `db`, or says which server holds it.
    pub fn take(db: &Path) -> Result<Self, String> {
        let path = sibling(db, ".lock");
        let file = open_owner_only(
            &path,
            OpenOptions::new().read(true).write(true).create(true),
        )
        .map_err(|e| format!("cannot open the lock file {}: {e}", path.display()))?;
        match try_lock(file) {
            Ok(Some(file)) => Ok(Self { _file: file }),
            Ok(None) => Err(format!(
                "{} is in use by another leasehold server (it holds {}); stop that server, \
                 or give this one another --db",
                db.display(),
                path.display()
            )),
            Err(e) => Err(format!("cannot lock {}: {e}", path.display())),
        }
    }
}

/// Creates the database file mode 0600 if it is missing, and takes every
/// permission of group and others from the database, its WAL and its
/// shared-memory file.
/// SQLite gives the WAL and shared-memory files the database's own mode, so
/// they are born 0600 too.
pub fn secure(db: &Path) -> Result<(), String> {
    let cannot = |path: &Path, e: std::io::Error| format!("cannot secure {}: {e}", path.display());
    if !db.exists() {
        open_owner_only(db, OpenOptions::new().write(true).create(true))
            .map_err(|e| cannot(db, e))?;
    }
    for suffix in ["", "-wal", "-shm"] {
        let path = sibling(db, suffix);
        match OpenOptions::new().read(true).open(&path) {
            Ok(file) => restrict(&path, &file).map_err(|e| cannot(&path, e))?,
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(cannot(&path, e)),
        }
    }
    Ok(())
}

/// The one line a server or `check` gives for a damaged file.
pub fn damaged(db: &Path, problem: &str) -> String {
    format!(
        "{} is damaged ({problem}); restore it from a backup (`leasehold check --db {}` \
         lists the problems)",
        db.display(),
        db.display()
    )
}

/// SQLite's `PRAGMA quick_check` (the structure of every page, without
/// cross-checking indexes against tables): a damaged file is refused at start
/// rather than served as errors later.
pub async fn quick_check(conn: &mut sqlx::SqliteConnection, db: &Path) -> Result<(), String> {
    let problems: Vec<String> = sqlx::query_scalar("PRAGMA quick_check")
        .fetch_all(conn)
        .await
        .map_err(|e| damaged(db, &e.to_string()))?;
    match problems.first() {
        Some(first) if first != "ok" => Err(damaged(db, &first.replace('\n', " "))),
        _ => Ok(()),
    }
}

pub fn not_leasehold(db: &Path) -> String {
    format!(
        "{} is not a SQLite database, so neither a leasehold database nor a backup of one",
        db.display()
    )
}

/// Refuses a file that cannot be a whole leasehold database, from what its
/// first 100 bytes (SQLite's header), its length and the files beside it
/// show: empty, not SQLite, cut short, or with the rollback journal of a copy
/// that was being written (a server writes through its WAL, never a journal).
pub fn inspect(db: &Path) -> Result<(), String> {
    let mut header = Vec::with_capacity(100);
    let len = File::open(db)
        .and_then(|f| {
            let len = f.metadata()?.len();
            f.take(100).read_to_end(&mut header)?;
            Ok(len)
        })
        .map_err(|e| match e.kind() {
            ErrorKind::NotFound => format!("no database at {}", db.display()),
            _ => format!("cannot read {}: {e}", db.display()),
        })?;
    if len == 0 {
        return Err(format!(
            "{} is empty: it is no leasehold database (an interrupted copy?)",
            db.display()
        ));
    }
    if header.len() < 100 || !header.starts_with(b"SQLite format 3\0") {
        return Err(not_leasehold(db));
    }
    let journal = sibling(db, "-journal");
    if journal.metadata().is_ok_and(|m| m.len() > 0) {
        return Err(format!(
            "{} was being written when its writer stopped ({} is beside it): it is incomplete; \
             use another backup",
            db.display(),
            journal.display()
        ));
    }
    // With no WAL beside it nothing is writing the file, so its length must
    // hold every page the header counts.
    if !sibling(db, "-wal").exists() {
        let be32 = |at: usize| {
            u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
        };
        let page_size = match u16::from_be_bytes([header[16], header[17]]) {
            1 => 65_536,
            n => u64::from(n),
        };
        // The page count is valid when the change counter matches its stamp.
        let expected = (be32(24) == be32(92)).then(|| u64::from(be32(28)) * page_size);
        if page_size < 512 || len % page_size != 0 || expected.is_some_and(|e| len < e) {
            return Err(format!(
                "{} is cut short ({len} bytes, {} expected): an interrupted copy; use another backup",
                db.display(),
                expected.map_or("whole pages".to_owned(), |e| e.to_string())
            ));
        }
    }
    Ok(())
}
