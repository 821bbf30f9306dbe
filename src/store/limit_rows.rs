//! A rate limit's row as the transactions of `limits` read and write it,
//! and the bucket a name takes from: its own limit's, or its family's
//! bucket of it (stored, or new and full).

use super::Error;
use super::StoreResult;
use super::limit_texts::{FAMILY, LIMIT_ROW, WRITE_LIMIT};
use super::rows::corrupt;
use super::sql::{Columns, Row, Sql, args};
use crate::domain::limit::{Limit, LimitView, families_of, full_at, is_family};
use crate::domain::rate::{RateLimit, Tat};
use crate::domain::refusal::Missing;
use crate::domain::time::At;

pub(super) fn count(row: &impl Columns, column: &str) -> StoreResult<u64> {
    u64::try_from(row.int(column)?).map_err(|_| corrupt("rate limit"))
}

pub(super) fn limit(row: &impl Columns) -> StoreResult<Limit> {
    let numbers = RateLimit::new(
        count(row, "rate")?,
        count(row, "period_ms")?,
        Some(count(row, "burst")?),
    )
    .map_err(|_| corrupt("rate limit"))?;
    Ok(Limit {
        name: row.text("name")?,
        numbers,
        tat: Tat {
            ms: row.at("tat_ms")?,
            part: count(row, "tat_part")?,
        },
        bucket_of: row.opt_text("bucket_of")?,
        owner: row.opt_text("owner")?,
    })
}

/// A limit with what it holds at `now`.
pub(super) fn view(limit: &Limit, now: At) -> LimitView {
    LimitView {
        numbers: limit.numbers,
        level: limit.level(now),
    }
}

/// Writes the limit or bucket whole, as `WRITE_LIMIT` says.
pub(super) async fn write(conn: &mut dyn Sql, limit: &Limit, now: At) -> StoreResult<()> {
    let n = limit.numbers;
    let as_int = |v: u64| i64::try_from(v).map_err(|_| corrupt("rate limit"));
    let family = i64::from(limit.bucket_of.is_none() && is_family(&limit.name));
    let args = args![
        limit.name.as_str(),
        limit.owner.as_deref(),
        as_int(n.rate())?,
        as_int(n.period_ms())?,
        as_int(n.burst())?,
        limit.tat.ms,
        as_int(limit.tat.part)?,
        family,
        limit.bucket_of.as_deref(),
        now,
    ];
    conn.execute(WRITE_LIMIT, args).await?;
    Ok(())
}

/// The bucket the name takes from at `now`, under the numbers it takes
/// with, and whether it is a stored row: the limit of its own, or its
/// family's bucket of it (a new, full one where none is stored).
pub(super) async fn bucket(conn: &mut dyn Sql, name: &str, now: At) -> StoreResult<(Limit, bool)> {
    let own = conn.row(LIMIT_ROW, args![name]).await?;
    let own = own.as_ref().map(limit).transpose()?;
    if let Some(own) = &own
        && own.bucket_of.is_none()
    {
        return Ok((own.clone(), true));
    }
    let family = match own.as_ref().and_then(|o| o.bucket_of.as_deref()) {
        Some(family) => conn.row(FAMILY, args![family]).await?,
        None => nearest_family(conn, name).await?,
    };
    let family = limit(&family.ok_or(Error::from(Missing::Limit))?)?;
    let tat = match &own {
        Some(o) if o.numbers == family.numbers => o.tat,
        Some(o) => o.numbers.change(&family.numbers, Some(o.tat), now),
        None => full_at(now),
    };
    let bucket = Limit {
        name: name.to_owned(),
        numbers: family.numbers,
        tat,
        bucket_of: Some(family.name),
        owner: None,
    };
    Ok((bucket, own.is_some()))
}

/// The nearest family above `name`, if any.
async fn nearest_family(conn: &mut dyn Sql, name: &str) -> StoreResult<Option<Row>> {
    for family in families_of(name) {
        if let Some(row) = conn.row(FAMILY, args![family]).await? {
            return Ok(Some(row));
        }
    }
    Ok(None)
}
