//! A page of history for one reader, written once for both dialects: the
//! events after a revision that its `Selection` selects, filtered in SQL,
//! examining a bounded number of rows however few of them match.
//!
//! Two ways to the same page, both bounded by `scan` rows:
//!
//! - By the terms' indexes (`events_by_key`, `events_by_pool`,
//!   `events_by_group`, `events_of_sessions`). An exact term (a pool, a
//!   group, a token's sessions) reads its own events in revision order from
//!   where the page starts; a range (a key prefix, every pool) reads its
//!   entries in key order, so it helps only when it holds few events in the
//!   whole log: it reads at most its share of `scan` and gives up past it.
//!   When every term is read this way, the page knows each event it
//!   selects up to where the shortest of them stopped: a tenant whose
//!   events are few in a log of others' is answered at once, however long
//!   the log.
//! - Else through the log in revision order from where the page starts,
//!   at most `scan` revisions (the primary key), every term in one filter.
//!
//! The page answers the events found and `examined`, the revision through
//! which every event was examined: the next page starts after it.

use super::events::Log;
use super::events::{EVENT_COLUMNS, event};
use super::sql::{Arg, Columns, Sql, args};
use super::{StoreError, StoreResult};
use crate::domain::Revision;
use crate::domain::events::Event;
use crate::domain::lock::prefix_upper_bound;
use crate::domain::selection::{Selection, Term};

/// What a page of history asks for.
#[derive(Debug, Clone)]
pub struct HistoryQuery {
    /// The page starts after this revision…
    pub after: Revision,
    /// …and ends at this one at most (every revision up to it is committed).
    pub through: Revision,
    /// The most events it answers.
    pub limit: u32,
    /// The rows it examines at most.
    pub scan: u32,
    pub selection: Selection,
}

/// A page of history: the events found, in revision order, and the
/// revision through which every event was examined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryPage {
    pub events: Vec<Event>,
    pub examined: Revision,
}

/// A term as SQL: its condition on `events` from placeholder `$n` on, and
/// the values it binds there, in order.
struct Condition {
    sql: String,
    values: Vec<String>,
    /// The order of its index: `revision` for an equality (its events in
    /// revision order), else the range's columns, so that a read of a few
    /// entries stops after them (rather than collect every entry first, as
    /// a bitmap of the index would).
    order: &'static str,
}

impl Condition {
    fn ordered(&self) -> bool {
        self.order == "revision"
    }
}

/// The statement shared by session events: no key, pool or group.
const SESSION_EVENT: &str = "key IS NULL AND pool IS NULL AND group_name IS NULL";

/// `column` (`key` or `group_name`) starts with `prefix`, as a range its
/// index reads.
fn under(column: &'static str, order: &'static str, prefix: &str, n: usize) -> Condition {
    match prefix_upper_bound(prefix) {
        Some(upper) => Condition {
            sql: format!("{column} >= ${n} AND {column} < ${}", n + 1),
            values: vec![prefix.to_owned(), upper],
            order,
        },
        None => Condition {
            sql: format!("{column} >= ${n}"),
            values: vec![prefix.to_owned()],
            order,
        },
    }
}

fn equal(column: &str, value: &str, n: usize) -> Condition {
    Condition {
        sql: format!("{column} = ${n}"),
        values: vec![value.to_owned()],
        order: "revision",
    }
}

fn condition(term: &Term, n: usize) -> Condition {
    let fixed = |sql: &str, order| Condition {
        sql: sql.to_owned(),
        values: vec![],
        order,
    };
    match term {
        Term::KeysUnder(p) => under("key", "key, revision", p, n),
        Term::GroupsUnder(p) => under("group_name", "group_name, revision", p, n),
        Term::Pool(p) => equal("pool", p, n),
        Term::Group(g) => equal("group_name", g, n),
        Term::EveryPool => fixed("pool IS NOT NULL", "pool, revision"),
        Term::EverySession => fixed(SESSION_EVENT, "owner, revision"),
        Term::SessionsOf(o) => {
            let owned = equal("owner", o, n);
            Condition {
                sql: format!("{SESSION_EVENT} AND {}", owned.sql),
                ..owned
            }
        }
    }
}

impl Log<'_> {
    /// A page of history for one reader: the events after `after` up to
    /// `through` that its selection selects, at most `limit`, examining at
    /// most about `scan` rows; with the revision through which every event
    /// was examined (where the next page starts).
    pub async fn history(self, query: HistoryQuery) -> StoreResult<HistoryPage> {
        // A few at a time, so that other reads always find a connection.
        let _lane = self
            .store
            .history_lanes
            .acquire()
            .await
            .map_err(|_| StoreError::Unavailable("the database is closed".into()))?;
        self.store
            .read(query, |c, query| {
                Box::pin(async move { page(c, &query).await })
            })
            .await
    }
}

/// One page of the history `q` asks for.
pub async fn page(conn: &mut dyn Sql, q: &HistoryQuery) -> StoreResult<HistoryPage> {
    let nothing = |examined| HistoryPage {
        events: Vec::new(),
        examined,
    };
    if q.after >= q.through {
        return Ok(nothing(q.after));
    }
    let terms = match &q.selection {
        Selection::Everything => return in_order(conn, q, &[]).await,
        Selection::Terms(terms) if terms.is_empty() => return Ok(nothing(q.through)),
        Selection::Terms(terms) => terms,
    };
    match by_index(conn, q, terms).await? {
        Some(page) => Ok(page),
        None => in_order(conn, q, terms).await,
    }
}

/// Through the log in revision order: at most `scan` revisions after
/// `after`, the terms in one filter. The subquery keeps the plan on the
/// primary key whichever term an index might serve (an index of a term
/// would read every entry of it, in the whole log).
async fn in_order(
    conn: &mut dyn Sql,
    q: &HistoryQuery,
    terms: &[Term],
) -> StoreResult<HistoryPage> {
    let end = q.through.min(q.after.saturating_add(i64::from(q.scan)));
    let mut conditions = Vec::with_capacity(terms.len());
    let mut n = 5;
    for term in terms {
        let c = condition(term, n);
        n += c.values.len();
        conditions.push(c);
    }
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        let any: Vec<String> = conditions.iter().map(|c| format!("({})", c.sql)).collect();
        format!("WHERE {}", any.join(" OR "))
    };
    // Rows come out of the subquery in its order: the filter passes them
    // on as they come, and the page stops at its `limit`th match.
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM (SELECT {EVENT_COLUMNS} FROM events \
         WHERE revision > $1 AND revision <= $2 ORDER BY revision LIMIT $3) e \
         {filter} LIMIT $4"
    );
    let mut bound: Vec<Arg<'_>> =
        args![q.after, end, i64::from(q.scan), i64::from(q.limit)].to_vec();
    for c in &conditions {
        bound.extend(c.values.iter().map(Arg::from));
    }
    let mut events = conn
        .rows(sql, &bound)
        .await?
        .iter()
        .map(event)
        .collect::<StoreResult<Vec<_>>>()?;
    events.sort_unstable_by_key(|e| e.revision);
    let examined = match events.last() {
        Some(last) if events.len() >= q.limit as usize => last.revision,
        _ => end,
    };
    Ok(HistoryPage { events, examined })
}

/// By the terms' indexes, if each reads few enough of its entries; `None`
/// when one holds more than its share of `scan` in the whole log. Every
/// term's read is one branch of one statement: one round trip.
async fn by_index(
    conn: &mut dyn Sql,
    q: &HistoryQuery,
    terms: &[Term],
) -> StoreResult<Option<HistoryPage>> {
    let share = (i64::from(q.scan) / terms.len() as i64).max(1);
    let mut branches = Vec::with_capacity(terms.len());
    let mut ordered = Vec::with_capacity(terms.len());
    let mut bound: Vec<Arg<'_>> = args![q.after, q.through, share + 1].to_vec();
    let mut values = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        let c = condition(term, 4 + values.len());
        let read = if c.ordered() {
            format!(
                "SELECT revision FROM events WHERE {} AND revision > $1 AND revision <= $2 \
                 ORDER BY revision LIMIT $3",
                c.sql
            )
        } else {
            format!(
                "SELECT revision FROM events WHERE {} ORDER BY {} LIMIT $3",
                c.sql, c.order
            )
        };
        branches.push(format!(
            "SELECT CAST({i} AS bigint) AS term, revision FROM ({read}) t{i}"
        ));
        ordered.push(c.ordered());
        values.extend(c.values);
    }
    bound.extend(values.iter().map(Arg::from));
    let mut read: Vec<Vec<Revision>> = vec![Vec::new(); terms.len()];
    for row in conn.rows(branches.join(" UNION ALL "), &bound).await? {
        let term = usize::try_from(row.int("term")?).unwrap_or(0);
        read[term.min(terms.len() - 1)].push(row.revision("revision")?);
    }
    let mut found: Vec<Revision> = Vec::new();
    // Every event each term selects is known up to here.
    let mut known = q.through;
    for (mut revisions, ordered) in read.into_iter().zip(ordered) {
        if revisions.len() as i64 > share {
            if !ordered {
                return Ok(None);
            }
            revisions.sort_unstable();
            revisions.truncate(share as usize);
            known = known.min(revisions.last().copied().unwrap_or(q.after));
        }
        found.extend(revisions);
    }
    found.retain(|r| *r > q.after && *r <= known);
    found.sort_unstable();
    found.dedup();
    let full = found.len() >= q.limit as usize;
    found.truncate(q.limit as usize);
    let examined = match found.last() {
        Some(last) if full => *last,
        _ => known,
    };
    Ok(Some(HistoryPage {
        events: fetch(conn, &found).await?,
        examined,
    }))
}

/// The events of these revisions, in revision order.
async fn fetch(conn: &mut dyn Sql, revisions: &[Revision]) -> StoreResult<Vec<Event>> {
    if revisions.is_empty() {
        return Ok(Vec::new());
    }
    let list: Vec<String> = (1..=revisions.len()).map(|i| format!("${i}")).collect();
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE revision IN ({}) ORDER BY revision",
        list.join(", ")
    );
    let bound: Vec<Arg<'_>> = revisions.iter().map(|r| Arg::from(*r)).collect();
    conn.rows(sql, &bound).await?.iter().map(event).collect()
}
