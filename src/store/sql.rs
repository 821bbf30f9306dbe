//! The narrow interface every transaction runs on: SQL text, arguments and
//! rows, the same for both dialects. Both connections read `$N`
//! placeholders as PostgreSQL does, so one text serves both wherever the
//! SQL itself agrees; `Sql::texts` holds the few texts that do not. Each
//! dialect implements it on its own connection (`sqlite/conn.rs`,
//! `postgres/conn.rs`); a transaction takes `&mut dyn Sql`, so it is one
//! function for both.

use std::borrow::Cow;

use async_trait::async_trait;

use super::statements::Statements;
use super::texts::Texts;
use super::{StoreError, StoreResult};
use crate::domain::fencing::FencingToken;
use crate::domain::names::LeaseToken;
use crate::domain::{At, Ms, Revision};

/// What storage answers: its result, or what it did wrong.
pub type SqlResult<T> = Result<T, StoreError>;

/// SQL text: a constant, or one built for a request (a list of excludes).
pub type Text = Cow<'static, str>;

/// One argument of a statement, bound as `$1`, `$2`, … in order.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    Int(i64),
    OptInt(Option<i64>),
    Text(&'a str),
    OptText(Option<&'a str>),
    Bytes(&'a [u8]),
    Bool(bool),
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}

impl From<Revision> for Arg<'_> {
    fn from(v: Revision) -> Self {
        Arg::Int(v.get())
    }
}

impl From<FencingToken> for Arg<'_> {
    fn from(v: FencingToken) -> Self {
        Arg::Int(v.get())
    }
}

impl From<At> for Arg<'_> {
    fn from(v: At) -> Self {
        Arg::Int(v.as_millis())
    }
}

impl From<Option<At>> for Arg<'_> {
    fn from(v: Option<At>) -> Self {
        Arg::OptInt(v.map(At::as_millis))
    }
}

impl From<Ms> for Arg<'_> {
    fn from(v: Ms) -> Self {
        Arg::Int(v.as_millis())
    }
}

impl From<Option<Ms>> for Arg<'_> {
    fn from(v: Option<Ms>) -> Self {
        Arg::OptInt(v.map(Ms::as_millis))
    }
}

impl From<Option<FencingToken>> for Arg<'_> {
    fn from(v: Option<FencingToken>) -> Self {
        Arg::OptInt(v.map(FencingToken::get))
    }
}

impl From<Option<i64>> for Arg<'_> {
    fn from(v: Option<i64>) -> Self {
        Arg::OptInt(v)
    }
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(v)
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(v)
    }
}

/// A lease's token, as the text its row keeps.
impl<'a> From<&'a LeaseToken> for Arg<'a> {
    fn from(v: &'a LeaseToken) -> Self {
        Arg::Text(v.as_str())
    }
}

impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Arg::OptText(v)
    }
}

impl<'a> From<&'a Option<String>> for Arg<'a> {
    fn from(v: &'a Option<String>) -> Self {
        Arg::OptText(v.as_deref())
    }
}

impl<'a> From<&'a [u8]> for Arg<'a> {
    fn from(v: &'a [u8]) -> Self {
        Arg::Bytes(v)
    }
}

impl From<bool> for Arg<'_> {
    fn from(v: bool) -> Self {
        Arg::Bool(v)
    }
}

/// The arguments of a statement: `args![key, now]`.
macro_rules! args {
    () => {
        &[][..] as &[$crate::store::sql::Arg<'_>]
    };
    ($($arg:expr),+ $(,)?) => {
        &[$($crate::store::sql::Arg::from($arg)),+][..]
    };
}
pub(crate) use args;

/// A row read back, its columns named in the statement (`AS n` for an
/// expression).
pub trait Columns {
    fn int(&self, column: &str) -> StoreResult<i64>;
    fn opt_int(&self, column: &str) -> StoreResult<Option<i64>>;
    fn text(&self, column: &str) -> StoreResult<String>;
    fn opt_text(&self, column: &str) -> StoreResult<Option<String>>;
    fn bytes(&self, column: &str) -> StoreResult<Vec<u8>>;

    /// A revision of the change log, stored as its integer.
    fn revision(&self, column: &str) -> StoreResult<Revision> {
        self.int(column).map(Revision::new)
    }

    /// An instant on the lease clock, stored as its milliseconds.
    fn at(&self, column: &str) -> StoreResult<At> {
        self.int(column).map(At::from_millis)
    }

    /// An instant that may be absent (`NULL`).
    fn opt_at(&self, column: &str) -> StoreResult<Option<At>> {
        Ok(self.opt_int(column)?.map(At::from_millis))
    }

    /// A span of milliseconds, stored as its integer.
    fn ms(&self, column: &str) -> StoreResult<Ms> {
        self.int(column).map(Ms::new)
    }

    /// A fencing token, stored as its integer.
    fn fencing_token(&self, column: &str) -> StoreResult<FencingToken> {
        self.int(column).map(FencingToken::new)
    }

    /// A fencing token that may be absent (`NULL`).
    fn opt_fencing_token(&self, column: &str) -> StoreResult<Option<FencingToken>> {
        Ok(self.opt_int(column)?.map(FencingToken::new))
    }
}

/// A row as a connection answers it.
pub type Row = Box<dyn Columns + Send + Sync>;

impl<C: Columns + ?Sized> Columns for Box<C> {
    fn int(&self, column: &str) -> StoreResult<i64> {
        (**self).int(column)
    }

    fn opt_int(&self, column: &str) -> StoreResult<Option<i64>> {
        (**self).opt_int(column)
    }

    fn text(&self, column: &str) -> StoreResult<String> {
        (**self).text(column)
    }

    fn opt_text(&self, column: &str) -> StoreResult<Option<String>> {
        (**self).opt_text(column)
    }

    fn bytes(&self, column: &str) -> StoreResult<Vec<u8>> {
        (**self).bytes(column)
    }
}

/// A connection (or an open transaction on one) that runs statements. A
/// transaction calls `execute`, `rows` and `row` on `dyn Sql`, which take
/// any text; a dialect implements the three `run_` methods.
#[async_trait]
pub trait Sql: Send {
    /// The texts of this connection's dialect.
    fn texts(&self) -> &'static Texts;
    /// The statements its dialect built once from them.
    fn statements(&self) -> &'static Statements;
    /// Runs a statement; answers how many rows it changed.
    async fn run_execute(&mut self, sql: Text, args: &[Arg<'_>]) -> StoreResult<u64>;
    /// Runs a statement; answers at most `limit` of its rows.
    async fn run_rows(
        &mut self,
        sql: Text,
        args: &[Arg<'_>],
        limit: usize,
    ) -> StoreResult<Vec<Row>>;
}

impl dyn Sql + '_ {
    /// Runs a statement; answers how many rows it changed.
    pub async fn execute(&mut self, sql: impl Into<Text>, args: &[Arg<'_>]) -> StoreResult<u64> {
        self.run_execute(sql.into(), args).await
    }

    /// Every row the statement answers.
    pub async fn rows(&mut self, sql: impl Into<Text>, args: &[Arg<'_>]) -> StoreResult<Vec<Row>> {
        self.run_rows(sql.into(), args, usize::MAX).await
    }

    /// The first row the statement answers, if any.
    pub async fn row(
        &mut self,
        sql: impl Into<Text>,
        args: &[Arg<'_>],
    ) -> StoreResult<Option<Row>> {
        Ok(self.run_rows(sql.into(), args, 1).await?.pop())
    }
}

/// The one row an aggregate answers.
pub async fn one(conn: &mut dyn Sql, sql: impl Into<Text>, args: &[Arg<'_>]) -> StoreResult<Row> {
    conn.row(sql, args)
        .await?
        .ok_or_else(|| StoreError::Internal("a statement answered no row".into()).into())
}
