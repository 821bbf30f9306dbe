//! Rate limits as stored: a limit's numbers, its bucket's time, and what a
//! name under a family takes from. The arithmetic is `rate`; this says which
//! bucket a name takes from and what a request may ask.

use super::Revision;
use super::events::{Event, EventType, Resource};
use super::rate::{Level, MAX_RATE, RateLimit, Tat};
use super::time::At;
use super::validate::InvalidInput;

/// A limit, or a family's bucket, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    pub name: String,
    /// The numbers its bucket time was taken at.
    pub numbers: RateLimit,
    pub tat: Tat,
    /// The family this row is a bucket of; `None` for a limit defined by
    /// name.
    pub bucket_of: Option<String>,
    /// The API token that defined it.
    pub owner: Option<String>,
}

impl Limit {
    /// What the bucket holds at `now`.
    pub fn level(&self, now: At) -> Level {
        self.numbers.level_at(Some(self.tat), now)
    }
}

/// A limit with what its bucket holds now, as the API shows it: under a
/// family, the name asked for with the family's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitView {
    pub numbers: RateLimit,
    pub level: Level,
}

/// What a take took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    pub cost: u64,
    pub level: Level,
}

/// Whether a name defines a family: it ends in `/`.
pub fn is_family(name: &str) -> bool {
    name.ends_with('/')
}

/// The families a name without a limit of its own may take from, the
/// nearest first: each of its prefixes that ends in `/`, itself aside.
pub fn families_of(name: &str) -> impl Iterator<Item = &str> {
    name.char_indices()
        .filter(|&(at, c)| c == '/' && at + 1 < name.len())
        .map(|(at, _)| &name[..=at])
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
}

/// The bucket time of a new limit: full at `now`.
pub fn full_at(now: At) -> Tat {
    Tat { ms: now, part: 0 }
}

/// A bucket that is full at `now` (its time not after it) may be
/// forgotten: a family takes a new one on the next take.
pub fn forgettable(tat: Tat, now: At) -> bool {
    tat.ms < now || (tat.ms == now && tat.part == 0)
}

/// A count of tokens a request names (`cost`): 1 to `MAX_RATE`.
pub fn cost(field: &'static str, cost: Option<i64>) -> Result<u64, InvalidInput> {
    let Some(cost) = cost else {
        return Ok(1);
    };
    u64::try_from(cost)
        .ok()
        .filter(|c| (1..=MAX_RATE).contains(c))
        .ok_or_else(|| InvalidInput::new(field, format!("must be between 1 and {MAX_RATE}")))
}

/// The event of a limit's definition or change (`LimitChanged`) or its
/// deletion, to be given its revision when recorded. A limit has no holder:
/// its `holder` is empty; `owner`, the token that defined it, is never shown.
pub fn limit_event(kind: EventType, name: &str, owner: Option<&str>, at: At) -> Event {
    Event {
        revision: Revision::ZERO,
        kind,
        at,
        resource: Resource::Limit {
            name: name.to_owned(),
        },
        holder: String::new(),
        fencing_token: None,
        session: None,
        owner: owner.map(str::to_owned),
        reason: None,
    }
}

/// One page of limits in name order: those under each prefix in turn.
#[derive(Debug, Clone, Default)]
pub struct LimitQuery {
    pub prefixes: Vec<String>,
    pub after: Option<String>,
    pub limit: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_takes_from_its_nearest_family_first() {
        let found: Vec<_> = families_of("api/users/42").collect();
        assert_eq!(found, ["api/users/", "api/"]);
        assert_eq!(families_of("plain").count(), 0);
        let of_family: Vec<_> = families_of("api/users/").collect();
        assert_eq!(of_family, ["api/"]);
    }

    #[test]
    fn a_bucket_is_forgettable_once_full() {
        let at = At::from_millis;
        assert!(forgettable(Tat { ms: at(9), part: 3 }, at(10)));
        assert!(forgettable(
            Tat {
                ms: at(10),
                part: 0
            },
            at(10)
        ));
        assert!(!forgettable(
            Tat {
                ms: at(10),
                part: 1
            },
            at(10)
        ));
    }

    #[test]
    fn a_cost_is_one_by_default_and_bounded() {
        assert_eq!(cost("cost", None), Ok(1));
        assert_eq!(cost("cost", Some(7)), Ok(7));
        assert_eq!(cost("cost", Some(0)).unwrap_err().field, "cost");
        assert!(cost("cost", Some(-1)).is_err());
        assert!(cost("cost", Some(i64::MAX)).is_err());
    }
}
