//! A SQLite connection the shared transactions run on, statement by
//! statement on the calling thread: no hand-off to another thread and back
//! for each statement, and every statement text prepared once per
//! connection and kept.
//!
//! Its `Sql` futures never wait: each is ready when first polled, so the
//! writer thread runs a whole batch through them, and a read runs inline.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::config::DbConfig;
use rusqlite::types::{Value, ValueRef};
use rusqlite::{OpenFlags, ToSql};

use super::{BUSY_TIMEOUT, Durability};
use crate::store::sql::SqlResult;
use crate::store::sql::{Arg, Columns, Row, Sql, Text};
use crate::store::statements::Statements;
use crate::store::texts::Texts;
use crate::store::{Error, StoreError, StoreResult};

/// How many statement texts a connection keeps prepared; the shared
/// transactions have about a hundred, some built per request.
const PREPARED: usize = 512;

/// The log's size, in pages, at which the writer checkpoints by itself: a
/// backstop behind the checkpointer's own checkpoints.
const WRITER_CHECKPOINT_PAGES: u32 = 16_384;

/// The pages a connection keeps in memory, in KiB: the writer's covers the
/// indexes of a million live leases, so a grant or a start-up rewriting
/// them seldom reads a page back from the file; a reader keeps less.
const WRITER_CACHE_KIB: u32 = 64 * 1024;
const READER_CACHE_KIB: u32 = 16 * 1024;

/// A connection to the database file, writing or only reading.
pub struct Conn {
    db: rusqlite::Connection,
    /// The statements of each constant text and their shapes, by the
    /// address and length of the text (a constant's never moves nor
    /// changes), worked out on its first run instead of on every run.
    constants: HashMap<(usize, usize), Arc<[Part]>>,
}

/// One statement of a constant text.
struct Part {
    text: &'static str,
    shape: Shape,
}

/// The statements of a text: between its `;`, trimmed, the empty left out.
fn statements(text: &str) -> impl Iterator<Item = &str> {
    text.split(';').map(str::trim).filter(|t| !t.is_empty())
}

/// What binding a statement's arguments and naming its columns need.
struct Shape {
    /// By parameter (the first at 0): the index in the arguments it takes.
    /// `$N` is the Nth argument, however often and in whatever order the
    /// text names it, as PostgreSQL reads it; `?` takes the next one.
    positions: Box<[usize]>,
    /// The names of the columns it answers, shared by its rows.
    names: Arc<[String]>,
}

impl Shape {
    fn of(statement: &rusqlite::Statement<'_>) -> Self {
        let positions = (1..=statement.parameter_count())
            .map(|index| {
                statement
                    .parameter_name(index)
                    .and_then(|name| name.strip_prefix(['$', '?']))
                    .and_then(|n| n.parse::<usize>().ok())
                    .unwrap_or(index)
                    - 1
            })
            .collect();
        let names = statement
            .column_names()
            .into_iter()
            .map(str::to_owned)
            .collect();
        Self { positions, names }
    }
}

impl Conn {
    /// The one connection that writes, with the durability asked for.
    pub fn open_writer(path: &Path, durability: Durability) -> SqlResult<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Self::open(path, flags)?;
        let synchronous = durability.synchronous();
        // The checkpoints run on a thread of their own; the writer's own
        // threshold is the backstop should they fall behind.
        conn.batch(format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {synchronous}; \
             PRAGMA foreign_keys = ON; PRAGMA cache_size = -{WRITER_CACHE_KIB}; \
             PRAGMA wal_autocheckpoint = {WRITER_CHECKPOINT_PAGES}"
        ))?;
        Ok(conn)
    }

    /// A connection that only checkpoints the log, syncing the file as the
    /// writer's durability asks.
    pub fn open_checkpointer(path: &Path, durability: Durability) -> SqlResult<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Self::open(path, flags)?;
        conn.batch(format!("PRAGMA synchronous = {}", durability.synchronous()))?;
        Ok(conn)
    }

    /// Copies what the log holds, and no reader still needs, into the file;
    /// never waits for the writer nor for a reader.
    pub fn checkpoint(&self) -> SqlResult<()> {
        self.db
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .map_err(classify)
    }

    /// A connection that only reads (the WAL lets it read beside the writer).
    pub fn open_reader(path: &Path) -> SqlResult<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Self::open(path, flags)?;
        conn.batch(format!("PRAGMA cache_size = -{READER_CACHE_KIB}"))?;
        Ok(conn)
    }

    fn open(path: &Path, flags: OpenFlags) -> SqlResult<Self> {
        let db = rusqlite::Connection::open_with_flags(path, flags).map_err(classify)?;
        db.busy_timeout(BUSY_TIMEOUT).map_err(classify)?;
        db.set_prepared_statement_cache_capacity(PREPARED);
        // A statement's plan never depends on the values bound to it: else
        // SQLite compiles a kept statement again whenever a value it
        // planned by is bound anew (a `LIMIT $2`: every reaper batch).
        db.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .map_err(classify)?;
        Ok(Self {
            db,
            constants: HashMap::new(),
        })
    }

    /// Runs statements that take no arguments, in order, and drops what they
    /// answer (`BEGIN IMMEDIATE; SAVEPOINT job`). The writer runs the same
    /// few around every write, so they are kept prepared as every other
    /// statement is; the texts are ours and hold no `;` but between statements.
    pub fn batch(&mut self, sql: impl Into<Text>) -> SqlResult<()> {
        self.run(&sql.into(), &[], 0).map(drop)
    }

    /// The rows changed by the statements that completed since it opened.
    pub fn total_changes(&self) -> u64 {
        self.db.total_changes()
    }

    /// Whether a transaction is open (SQLite ends one itself on some disk
    /// errors).
    pub fn in_transaction(&self) -> bool {
        !self.db.is_autocommit()
    }

    /// How often SQLite compiled the kept statement `sql` again.
    #[cfg(test)]
    pub fn recompiled(&self, sql: &str) -> i32 {
        self.db
            .prepare_cached(sql)
            .expect("a statement")
            .get_status(rusqlite::StatementStatus::RePrepare)
    }

    /// Runs `sql` to its end, keeping at most `keep` of the rows it answers.
    /// A text may hold several statements, separated by `;`: each runs in
    /// turn with the same arguments (binding those it names), and the rows
    /// answered are those of the statements that answer columns. A
    /// dialect text uses this to read what it wrote (`last_insert_rowid()`)
    /// where `RETURNING` would cost SQLite a table of its own per statement.
    fn run(&mut self, sql: &Text, args: &[Arg<'_>], keep: usize) -> SqlResult<Vec<SqliteRow>> {
        let mut answered = Vec::new();
        match sql {
            Cow::Borrowed(text) => {
                for part in self.constant(text)?.iter() {
                    self.step(part.text, Some(&part.shape), args, keep, &mut answered)?;
                }
            }
            Cow::Owned(text) => {
                for text in statements(text) {
                    self.step(text, None, args, keep, &mut answered)?;
                }
            }
        }
        Ok(answered)
    }

    /// The statements of the constant `text`, worked out on its first run.
    fn constant(&mut self, text: &'static str) -> SqlResult<Arc<[Part]>> {
        let key = (text.as_ptr() as usize, text.len());
        if let Some(parts) = self.constants.get(&key) {
            return Ok(parts.clone());
        }
        let parts = statements(text)
            .map(|text| {
                let statement = self.db.prepare_cached(text).map_err(classify)?;
                let shape = Shape::of(&statement);
                Ok(Part { text, shape })
            })
            .collect::<SqlResult<Arc<[Part]>>>()?;
        self.constants.insert(key, parts.clone());
        Ok(parts)
    }

    /// Runs the one statement `text` (of the `shape` given, else worked out
    /// now), keeping rows it answers in `answered` until that holds `keep`.
    fn step(
        &self,
        text: &str,
        shape: Option<&Shape>,
        args: &[Arg<'_>],
        keep: usize,
        answered: &mut Vec<SqliteRow>,
    ) -> SqlResult<()> {
        let mut statement = self.db.prepare_cached(text).map_err(classify)?;
        let worked_out;
        let shape = match shape {
            Some(shape) => shape,
            None => {
                worked_out = Shape::of(&statement);
                &worked_out
            }
        };
        for (i, &position) in shape.positions.iter().enumerate() {
            let arg = args.get(position).ok_or_else(|| {
                StoreError::Internal(format!(
                    "a statement names ${}, not given: {text}",
                    position + 1
                ))
            })?;
            statement
                .raw_bind_parameter(i + 1, Bound(arg))
                .map_err(classify)?;
        }
        let mut rows = statement.raw_query();
        while let Some(row) = rows.next().map_err(classify)? {
            if answered.len() < keep {
                let values = (0..shape.names.len())
                    .map(|i| row.get::<_, Value>(i))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(classify)?;
                answered.push(SqliteRow {
                    names: shape.names.clone(),
                    values,
                });
            }
        }
        Ok(())
    }
}

/// An argument as SQLite binds it (a `bool` as 0 or 1).
struct Bound<'a, 'b>(&'a Arg<'b>);

impl ToSql for Bound<'_, '_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::ToSqlOutput::Borrowed;
        Ok(match *self.0 {
            Arg::Int(v) => Borrowed(ValueRef::Integer(v)),
            Arg::OptInt(v) => Borrowed(v.map_or(ValueRef::Null, ValueRef::Integer)),
            Arg::Text(v) => Borrowed(ValueRef::Text(v.as_bytes())),
            Arg::OptText(v) => Borrowed(v.map_or(ValueRef::Null, |t| ValueRef::Text(t.as_bytes()))),
            Arg::Bytes(v) => Borrowed(ValueRef::Blob(v)),
            Arg::Bool(v) => Borrowed(ValueRef::Integer(i64::from(v))),
        })
    }
}

/// A row read back: its columns' names (shared by the rows of one
/// statement) and values.
#[derive(Debug)]
pub struct SqliteRow {
    names: Arc<[String]>,
    values: Vec<Value>,
}

impl SqliteRow {
    fn value(&self, column: &str) -> SqlResult<&Value> {
        self.names
            .iter()
            .position(|n| n == column)
            .map(|i| &self.values[i])
            .ok_or_else(|| StoreError::Internal(format!("no column {column} in the row")))
    }

    fn mismatch(column: &str, value: &Value, wanted: &str) -> StoreError {
        StoreError::Internal(format!(
            "column {column} holds {:?}, not {wanted}",
            value.data_type()
        ))
    }
}

impl Columns for SqliteRow {
    fn int(&self, column: &str) -> StoreResult<i64> {
        Ok(self
            .opt_int(column)?
            .ok_or_else(|| Self::mismatch(column, &Value::Null, "an integer"))?)
    }

    fn opt_int(&self, column: &str) -> StoreResult<Option<i64>> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Integer(v) => Ok(Some(*v)),
            // As SQLite's own `sqlite3_column_int64` reads a real.
            Value::Real(v) => Ok(Some(*v as i64)),
            other => Err(Error::from(Self::mismatch(column, other, "an integer"))),
        }
    }

    fn text(&self, column: &str) -> StoreResult<String> {
        Ok(self
            .opt_text(column)?
            .ok_or_else(|| Self::mismatch(column, &Value::Null, "text"))?)
    }

    fn opt_text(&self, column: &str) -> StoreResult<Option<String>> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Text(v) => Ok(Some(v.clone())),
            other => Err(Error::from(Self::mismatch(column, other, "text"))),
        }
    }

    fn bytes(&self, column: &str) -> StoreResult<Vec<u8>> {
        match self.value(column)? {
            Value::Blob(v) => Ok(v.clone()),
            Value::Text(v) => Ok(v.clone().into_bytes()),
            other => Err(Error::from(Self::mismatch(column, other, "bytes"))),
        }
    }
}

#[async_trait]
impl Sql for Conn {
    fn texts(&self) -> &'static Texts {
        super::texts::TEXTS
    }

    fn statements(&self) -> &'static Statements {
        &super::texts::STATEMENTS
    }

    async fn run_execute(&mut self, sql: Text, args: &[Arg<'_>]) -> StoreResult<u64> {
        self.run(&sql, args, 0)?;
        Ok(self.db.changes())
    }

    async fn run_rows(
        &mut self,
        sql: Text,
        args: &[Arg<'_>],
        limit: usize,
    ) -> StoreResult<Vec<Row>> {
        let rows = self.run(&sql, args, limit)?;
        Ok(rows.into_iter().map(|r| Box::new(r) as Row).collect())
    }
}

/// A SQLite error as a store error (`errors::by_code`); what SQLite did not
/// report (a type that does not convert, say) is internal.
pub(super) fn classify(error: rusqlite::Error) -> StoreError {
    match &error {
        rusqlite::Error::SqliteFailure(failure, message) => {
            let message = message.clone().unwrap_or_else(|| failure.to_string());
            super::errors::by_code(Some(failure.extended_code), &message)
        }
        _ => StoreError::Internal(error.to_string()),
    }
}
