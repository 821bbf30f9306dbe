//! The statements of a transaction on a PostgreSQL connection: `Sql` over
//! sqlx's `PgConnection`, its arguments bound in order and its rows read by
//! column name.

use async_trait::async_trait;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::{PgConnection, Postgres, Row as _};

use super::texts::{STATEMENTS, TEXTS};
use crate::store::StoreResult;
use crate::store::sql::{Arg, Columns, Row, Sql, Text};
use crate::store::statements::Statements;
use crate::store::texts::Texts;

type Query = sqlx::query::Query<'static, Postgres, PgArguments>;

/// The statement with its arguments bound as `$1`, `$2`, … in order.
fn bound(sql: Text, args: &[Arg<'_>]) -> Query {
    let mut query = sqlx::query::<Postgres>(sqlx::AssertSqlSafe(sql));
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
impl Sql for PgConnection {
    fn texts(&self) -> &'static Texts {
        TEXTS
    }

    fn statements(&self) -> &'static Statements {
        &STATEMENTS
    }

    async fn run_execute(&mut self, sql: Text, args: &[Arg<'_>]) -> StoreResult<u64> {
        Ok(bound(sql, args).execute(&mut *self).await?.rows_affected())
    }

    async fn run_rows(
        &mut self,
        sql: Text,
        args: &[Arg<'_>],
        limit: usize,
    ) -> StoreResult<Vec<Row>> {
        let query = bound(sql, args);
        let rows = match limit {
            1 => query
                .fetch_optional(&mut *self)
                .await?
                .into_iter()
                .collect(),
            _ => query.fetch_all(&mut *self).await?,
        };
        Ok(rows.into_iter().map(|r| Box::new(r) as Row).collect())
    }
}

impl Columns for PgRow {
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
