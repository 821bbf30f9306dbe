//! The narrow interface every transaction runs on: SQL text, arguments and
//! rows, the same for both dialects. sqlx's SQLite driver reads `$N`
//! placeholders as PostgreSQL does, so one text serves both wherever the
//! SQL itself agrees; `Sql::texts` holds the few texts that do not.
//!
//! Both connections implement it through one generic impl, so binding and
//! decoding are written once too.

use std::borrow::Cow;

use async_trait::async_trait;
use sqlx::{ColumnIndex, Connection, Database, Decode, Encode, Executor, Row, Type};

use super::texts::{DatabaseTexts, Texts};
use super::{StoreError, StoreResult};

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
}

/// A connection (or an open transaction on one) that runs statements.
#[async_trait]
pub trait Sql: Send {
    type Row: Columns + Send + Sync;
    /// The texts of this connection's dialect.
    fn texts(&self) -> &'static Texts;
    /// Runs a statement; answers how many rows it changed.
    async fn execute(&mut self, sql: impl Into<Text> + Send, args: &[Arg<'_>]) -> StoreResult<u64>;
    /// Every row the statement answers.
    async fn rows(
        &mut self,
        sql: impl Into<Text> + Send,
        args: &[Arg<'_>],
    ) -> StoreResult<Vec<Self::Row>>;
    /// The first row the statement answers, if any.
    async fn row(
        &mut self,
        sql: impl Into<Text> + Send,
        args: &[Arg<'_>],
    ) -> StoreResult<Option<Self::Row>>;
}

impl<R> Columns for R
where
    R: Row,
    for<'c> &'c str: ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    fn int(&self, column: &str) -> StoreResult<i64> {
        Ok(self.try_get(column)?)
    }

    fn opt_int(&self, column: &str) -> StoreResult<Option<i64>> {
        Ok(self.try_get(column)?)
    }

    fn text(&self, column: &str) -> StoreResult<String> {
        Ok(self.try_get(column)?)
    }

    fn opt_text(&self, column: &str) -> StoreResult<Option<String>> {
        Ok(self.try_get(column)?)
    }

    fn bytes(&self, column: &str) -> StoreResult<Vec<u8>> {
        Ok(self.try_get(column)?)
    }
}

type Query<DB> = sqlx::query::Query<'static, DB, <DB as Database>::Arguments>;

/// The statement with its arguments bound.
fn bound<DB>(sql: Text, args: &[Arg<'_>]) -> Query<DB>
where
    DB: Database,
    for<'t> i64: Encode<'t, DB> + Type<DB>,
    for<'a> &'a str: Encode<'a, DB> + Type<DB>,
    for<'a> &'a [u8]: Encode<'a, DB> + Type<DB>,
    for<'t> bool: Encode<'t, DB> + Type<DB>,
    for<'t> Option<i64>: Encode<'t, DB> + Type<DB>,
    for<'a> Option<&'a str>: Encode<'a, DB> + Type<DB>,
{
    let mut query = sqlx::query::<DB>(sqlx::AssertSqlSafe(sql));
    for arg in args {
        query = match *arg {
            Arg::Int(v) => query.bind(v),
            Arg::OptInt(v) => query.bind(v),
            Arg::Text(v) => query.bind(v),
            Arg::OptText(v) => query.bind(v),
            Arg::Bytes(v) => query.bind(v),
            Arg::Bool(v) => query.bind(v),
        };
    }
    query
}

#[async_trait]
impl<C> Sql for C
where
    C: Connection,
    C::Database: DatabaseTexts,
    for<'c> &'c mut C: Executor<'c, Database = C::Database>,
    <C::Database as Database>::Row: Columns + Send + Sync,
    <C::Database as Database>::Arguments: Send,
    <C::Database as Database>::QueryResult: RowsAffected,
    for<'t> i64: Encode<'t, C::Database> + Type<C::Database>,
    for<'a> &'a str: Encode<'a, C::Database> + Type<C::Database>,
    for<'a> &'a [u8]: Encode<'a, C::Database> + Type<C::Database>,
    for<'t> bool: Encode<'t, C::Database> + Type<C::Database>,
    for<'t> Option<i64>: Encode<'t, C::Database> + Type<C::Database>,
    for<'a> Option<&'a str>: Encode<'a, C::Database> + Type<C::Database>,
    <C::Database as Database>::Arguments: sqlx::IntoArguments<C::Database>,
{
    type Row = <C::Database as Database>::Row;

    fn texts(&self) -> &'static Texts {
        <C::Database as DatabaseTexts>::TEXTS
    }

    async fn execute(&mut self, sql: impl Into<Text> + Send, args: &[Arg<'_>]) -> StoreResult<u64> {
        let query = bound::<C::Database>(sql.into(), args);
        let done = query.execute(&mut *self).await?;
        Ok(RowsAffected::rows_affected(&done))
    }

    async fn rows(
        &mut self,
        sql: impl Into<Text> + Send,
        args: &[Arg<'_>],
    ) -> StoreResult<Vec<Self::Row>> {
        let query = bound::<C::Database>(sql.into(), args);
        Ok(query.fetch_all(&mut *self).await?)
    }

    async fn row(
        &mut self,
        sql: impl Into<Text> + Send,
        args: &[Arg<'_>],
    ) -> StoreResult<Option<Self::Row>> {
        let query = bound::<C::Database>(sql.into(), args);
        Ok(query.fetch_optional(&mut *self).await?)
    }
}

/// How many rows a statement changed, in either dialect's answer.
pub trait RowsAffected {
    fn rows_affected(&self) -> u64;
}

impl RowsAffected for sqlx::sqlite::SqliteQueryResult {
    fn rows_affected(&self) -> u64 {
        self.rows_affected()
    }
}

impl RowsAffected for sqlx::postgres::PgQueryResult {
    fn rows_affected(&self) -> u64 {
        self.rows_affected()
    }
}

/// The one row an aggregate answers.
pub async fn one<S: Sql + ?Sized>(
    conn: &mut S,
    sql: impl Into<Text> + Send,
    args: &[Arg<'_>],
) -> StoreResult<S::Row> {
    conn.row(sql, args)
        .await?
        .ok_or_else(|| StoreError::Internal("a statement answered no row".into()).into())
}
