//! What a caller may read, counted, and what the database is, for
//! `GET /v1/status`: the live locks, other servers' waiters, sessions,
//! groups, members and reservations within a `Selection` (a token's whole
//! scope: what a watcher of every event receives), each a `count(*)` on an
//! index with the WHERE of its list, all in one snapshot with the revision
//! they reflect; and the database's own figures from its dialect.

use std::sync::LazyLock;

use super::hub::Store;
use super::rows::corrupt;
use super::sql::{Columns, Sql, args, one};
use super::{StoreResult, expiry, group_texts, owners, waiter_rows};
use crate::domain::At;
use crate::domain::Revision;
use crate::domain::commands::{DatabaseStatus, VisibleCounts};
use crate::domain::lock::prefix_upper_bound;
use crate::domain::selection::{Selection, Term};

impl Store {
    /// The live rows `selection` reads at `now`, by kind, in one snapshot
    /// with the change-log revision they reflect.
    pub async fn count_visible(
        &self,
        selection: &Selection,
        now: At,
    ) -> StoreResult<(VisibleCounts, Revision)> {
        let args = (Scope::of(selection), self.replica());
        self.snapshot(args, move |c, (scope, me)| {
            Box::pin(async move { counts(c, &scope, me.as_deref(), now).await })
        })
        .await
    }

    /// The database's figures at `now`.
    pub async fn database_status(&self, now: At) -> StoreResult<DatabaseStatus> {
        self.db.database_status(now).await
    }
}

/// What part of one kind's rows is read: every row, those whose column
/// starts with a prefix, or those whose column is a value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Narrow {
    All,
    Under(String),
    Is(String),
}

/// A selection as the parts of each kind it reads: the rows they count
/// are disjoint, so their counts add up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Scope {
    /// Locks and waiters, by key.
    keys: Vec<Narrow>,
    /// Groups by name, members by their group's.
    groups: Vec<Narrow>,
    /// Reservations by pool.
    pools: Vec<Narrow>,
    /// Sessions by the API token that opened them.
    sessions: Vec<Narrow>,
}

impl Scope {
    fn of(selection: &Selection) -> Self {
        let terms = match selection {
            Selection::Everything => {
                let all = vec![Narrow::All];
                return Self {
                    keys: all.clone(),
                    groups: all.clone(),
                    pools: all.clone(),
                    sessions: all,
                };
            }
            Selection::Terms(terms) => terms,
        };
        let mut scope = Self::default();
        for term in terms {
            let (kind, narrow) = match term {
                Term::KeysUnder(p) => (&mut scope.keys, Narrow::Under(p.clone())),
                Term::GroupsUnder(p) => (&mut scope.groups, Narrow::Under(p.clone())),
                Term::Group(g) => (&mut scope.groups, Narrow::Is(g.clone())),
                Term::Pool(p) => (&mut scope.pools, Narrow::Is(p.clone())),
                Term::EveryPool => (&mut scope.pools, Narrow::All),
                Term::SessionsOf(o) => (&mut scope.sessions, Narrow::Is(o.clone())),
                Term::EverySession => (&mut scope.sessions, Narrow::All),
            };
            kind.push(narrow);
        }
        for kind in [
            &mut scope.keys,
            &mut scope.groups,
            &mut scope.pools,
            &mut scope.sessions,
        ] {
            *kind = disjoint(std::mem::take(kind));
        }
        scope
    }
}

/// `parts` without any that another covers: every row once.
fn disjoint(parts: Vec<Narrow>) -> Vec<Narrow> {
    if parts.contains(&Narrow::All) {
        return vec![Narrow::All];
    }
    let mut prefixes: Vec<String> = Vec::new();
    let mut values: Vec<String> = Vec::new();
    for part in parts {
        match part {
            Narrow::Under(p) => prefixes.push(p),
            Narrow::Is(v) => values.push(v),
            Narrow::All => {}
        }
    }
    // Sorted, a prefix comes before every prefix it covers.
    prefixes.sort();
    prefixes.dedup_by(|later, kept| later.starts_with(kept.as_str()));
    values.sort();
    values.dedup();
    values.retain(|v| !prefixes.iter().any(|p| v.starts_with(p.as_str())));
    let prefixes = prefixes.into_iter().map(Narrow::Under);
    prefixes.chain(values.into_iter().map(Narrow::Is)).collect()
}

/// The counts of one kind's rows live at `$1`: all of them, or those whose
/// column is from `$2` on, from `$2` below `$3`, or `$2`.
struct Counting {
    all: String,
    from: String,
    below: String,
    equal: String,
}

impl Counting {
    /// Counts of `table`'s rows that meet `live` (none: every row).
    fn new(table: &str, live: Option<String>, column: &str) -> Self {
        let count = |narrow: Option<String>| {
            let conditions: Vec<String> = narrow.into_iter().chain(live.clone()).collect();
            match conditions.is_empty() {
                true => format!("SELECT count(*) AS n FROM {table}"),
                false => format!(
                    "SELECT count(*) AS n FROM {table} WHERE {}",
                    conditions.join(" AND ")
                ),
            }
        };
        Self {
            all: count(None),
            from: count(Some(format!("{column} >= $2"))),
            below: count(Some(format!("{column} >= $2 AND {column} < $3"))),
            equal: count(Some(format!("{column} = $2"))),
        }
    }

    async fn count(
        &'static self,
        conn: &mut dyn Sql,
        parts: &[Narrow],
        now: At,
    ) -> StoreResult<u64> {
        let mut n = 0;
        for part in parts {
            let row = match part {
                Narrow::All => one(conn, self.all.as_str(), args![now]).await?,
                Narrow::Under(p) => match prefix_upper_bound(p) {
                    Some(upper) => {
                        let args = args![now, p.as_str(), upper.as_str()];
                        one(conn, self.below.as_str(), args).await?
                    }
                    None => one(conn, self.from.as_str(), args![now, p.as_str()]).await?,
                },
                Narrow::Is(v) => one(conn, self.equal.as_str(), args![now, v.as_str()]).await?,
            };
            n += u64::try_from(row.int("n")?).map_err(|_| corrupt("count"))?;
        }
        Ok(n)
    }
}

static LOCKS: LazyLock<Counting> =
    LazyLock::new(|| Counting::new("lock_leases", Some(owners::live_lock()), "key"));

static RESERVATIONS: LazyLock<Counting> = LazyLock::new(|| {
    Counting::new(
        "subnet_reservations",
        Some(owners::live_reservation()),
        "pool",
    )
});

static SESSIONS: LazyLock<Counting> =
    LazyLock::new(|| Counting::new("sessions", Some(expiry::live("sessions", "$1")), "owner"));

/// A group is a row until deleted.
static GROUPS: LazyLock<Counting> = LazyLock::new(|| Counting::new("groups", None, "name"));

static MEMBERS: LazyLock<Counting> = LazyLock::new(|| {
    Counting::new(
        "group_members",
        Some(group_texts::live_plain(1)),
        "group_name",
    )
});

async fn counts(
    conn: &mut dyn Sql,
    scope: &Scope,
    me: Option<&str>,
    now: At,
) -> StoreResult<VisibleCounts> {
    let waiters = match me {
        Some(me) => {
            let prefixes: Vec<&str> = (scope.keys.iter())
                .filter_map(|k| match k {
                    Narrow::All => Some(""),
                    Narrow::Under(p) => Some(p.as_str()),
                    Narrow::Is(_) => None,
                })
                .collect();
            waiter_rows::count_others(conn, me, &prefixes, now).await?
        }
        None => 0,
    };
    Ok(VisibleCounts {
        locks: LOCKS.count(conn, &scope.keys, now).await?,
        waiters,
        sessions: SESSIONS.count(conn, &scope.sessions, now).await?,
        groups: GROUPS.count(conn, &scope.groups, now).await?,
        members: MEMBERS.count(conn, &scope.groups, now).await?,
        reservations: RESERVATIONS.count(conn, &scope.pools, now).await?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn under(p: &str) -> Narrow {
        Narrow::Under(p.into())
    }

    #[test]
    fn a_scope_reads_each_row_once() {
        let selection = Selection::Terms(vec![
            Term::KeysUnder("b/".into()),
            Term::GroupsUnder("b/".into()),
            Term::KeysUnder("a/".into()),
            Term::KeysUnder("a/x".into()),
            Term::Group("a/g".into()),
            Term::Group("c/g".into()),
            Term::GroupsUnder("a/".into()),
            Term::Pool("p2".into()),
            Term::Pool("p1".into()),
            Term::Pool("p1".into()),
            Term::SessionsOf("t".into()),
            Term::EverySession,
        ]);
        let scope = Scope::of(&selection);
        assert_eq!(scope.keys, [under("a/"), under("b/")]);
        assert_eq!(
            scope.groups,
            [under("a/"), under("b/"), Narrow::Is("c/g".into())]
        );
        assert_eq!(
            scope.pools,
            [Narrow::Is("p1".into()), Narrow::Is("p2".into())]
        );
        assert_eq!(scope.sessions, [Narrow::All]);
        let everything = Scope::of(&Selection::Everything);
        assert_eq!(everything.keys, [Narrow::All]);
        assert_eq!(everything.pools, [Narrow::All]);
        // A token of nothing reads nothing.
        assert_eq!(Scope::of(&Selection::Terms(vec![])), Scope::default());
    }

    #[test]
    fn every_count_has_its_texts() {
        let locks = Counting::new("t", Some("x > $1".into()), "c");
        assert_eq!(locks.all, "SELECT count(*) AS n FROM t WHERE x > $1");
        assert_eq!(
            locks.below,
            "SELECT count(*) AS n FROM t WHERE c >= $2 AND c < $3 AND x > $1"
        );
        let groups = Counting::new("g", None, "name");
        assert_eq!(groups.all, "SELECT count(*) AS n FROM g");
        assert_eq!(groups.equal, "SELECT count(*) AS n FROM g WHERE name = $2");
    }
}
