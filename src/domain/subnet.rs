//! Subnet pools and reservations: what they are, how they are named, and when
//! a pool definition conflicts with the existing one.

use std::collections::BTreeMap;

use super::cidr::{AddressCount, Block, CidrError};
use super::events::{Event, EventType, Holding, Reason, Resource};
use super::fencing_token::FencingToken;
use super::lease::Lease;
use super::names::PoolName;
use super::pool_rules::Rules;
use super::{At, InvalidInput};

pub const MAX_LABELS_BYTES: usize = 4096;
pub const MAX_EXCLUDES: usize = 256;
/// The deepest a pool may nest: a pool at this depth takes no children.
pub const MAX_POOL_DEPTH: u8 = 10;

/// A named range of addresses that reservations are cut from.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    pub name: String,
    pub cidr: Block,
    pub labels: BTreeMap<String, String>,
    pub created_at: At,
    /// The pool it is cut from, whose block it occupies.
    pub parent: Option<String>,
    /// 0 without a parent, one more than its parent's with one.
    pub depth: u8,
    /// Its effective allocation rules.
    pub rules: Rules,
}

/// A pool cut from another: its name and block.
#[derive(Debug, Clone, PartialEq)]
pub struct Child {
    pub name: String,
    pub cidr: Block,
}

/// A pool and what is taken of it, over live reservations only.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolUsage {
    pub pool: Pool,
    pub reserved: u64,
    pub allocated: u64,
    pub free: AddressCount,
    pub largest_free: Option<Block>,
    /// The pools cut from it, in address order (each counts as allocated).
    pub children: Vec<Child>,
}

/// `reserved` until confirmed, then `allocated` (no expiry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReservationState {
    Reserved,
    Allocated,
}

impl ReservationState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReservationState::Reserved => "reserved",
            ReservationState::Allocated => "allocated",
        }
    }
}

/// A lease held on a subnet of a pool.
#[derive(Debug, Clone, PartialEq)]
pub struct Reservation {
    pub pool: String,
    pub subnet: Block,
    pub lease: Lease,
    pub idempotency_key: Option<String>,
    /// The session it is bound to until confirmed: it lives as long as that session.
    pub session: Option<String>,
    /// Free text labels of the reservation.
    pub labels: BTreeMap<String, String>,
}

impl Reservation {
    /// The fencing token is unique across all grants and never reused, so
    /// the id is made of it.
    pub fn id(&self) -> String {
        reservation_id(self.lease.fencing_token)
    }

    pub fn state(&self) -> ReservationState {
        match self.lease.expires_at {
            Some(_) => ReservationState::Reserved,
            None => ReservationState::Allocated,
        }
    }
}

pub fn reservation_id(fencing_token: FencingToken) -> String {
    format!("r_{:016x}", fencing_token.get())
}

impl Holding<'_> {
    /// An event about the reservation of `subnet` in `pool`.
    pub fn reservation(
        &self,
        kind: EventType,
        pool: &str,
        subnet: String,
        reason: Option<Reason>,
        at: At,
    ) -> Event {
        let resource = Resource::Reservation {
            pool: pool.to_owned(),
            id: reservation_id(self.fencing_token),
            subnet,
        };
        self.event(kind, resource, reason, at)
    }
}

/// The fencing token an id names; `None` for a text this server never issues.
pub fn parse_reservation_id(id: &str) -> Option<FencingToken> {
    let hex = id.strip_prefix("r_").filter(|h| h.len() == 16)?;
    if !hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    i64::from_str_radix(hex, 16).ok().map(FencingToken::new)
}

/// Why a reservation cannot be granted now.
#[derive(Debug, Clone, PartialEq)]
pub enum ReserveRefusal {
    /// No usable free block holds the request; `largest_free` is the largest
    /// that the request (with its excludes) could have had.
    Exhausted {
        largest_free: Option<Block>,
        /// When the earliest reservation of the pool expires, if any does.
        retry_at: Option<At>,
    },
    /// The named subnet overlaps live reservations (at most `MAX_CONFLICTS` of
    /// them are listed) or the request's own excludes.
    Unavailable {
        conflicts: Vec<Reservation>,
        more_conflicts: bool,
        excluded: Vec<Block>,
        /// The child pools it overlaps.
        children: Vec<Child>,
    },
}

/// How many overlapping reservations a `subnet-unavailable` answer lists.
pub const MAX_CONFLICTS: usize = 100;

/// Labels are a small object of non-empty keys to text.
pub fn labels(labels: &BTreeMap<String, String>) -> Result<(), InvalidInput> {
    if labels.keys().any(|k| k.is_empty()) {
        return Err(InvalidInput::new("labels", "keys must not be empty"));
    }
    let size = serde_json::to_string(labels).map_or(usize::MAX, |t| t.len());
    if size > MAX_LABELS_BYTES {
        return Err(InvalidInput::new(
            "labels",
            format!("are {size} bytes as JSON; the limit is {MAX_LABELS_BYTES}"),
        ));
    }
    Ok(())
}

/// What differs between an existing pool and a definition of the same name:
/// empty when they are identical.
pub fn pool_differences(existing: &Pool, wanted: &Pool) -> Vec<&'static str> {
    let mut differs = Vec::new();
    if existing.cidr != wanted.cidr {
        differs.push("cidr");
    }
    if existing.parent != wanted.parent {
        differs.push("parent");
    }
    if existing.rules != wanted.rules {
        differs.push("rules");
    }
    if existing.labels != wanted.labels {
        differs.push("labels");
    }
    differs
}

/// The depth of a pool of `cidr` cut from `parent`: its block lies inside
/// the parent's (aligned, as every parsed block is), and the parent is not
/// at the deepest level.
pub fn child_depth(parent: &Pool, cidr: Block) -> Result<u8, InvalidInput> {
    if parent.depth >= MAX_POOL_DEPTH {
        return Err(InvalidInput::new(
            "parent",
            format!(
                "pool {} is at depth {MAX_POOL_DEPTH}, the deepest a pool nests: it takes no \
                 children",
                parent.name
            ),
        ));
    }
    if cidr == parent.cidr || !parent.cidr.contains(cidr) {
        return Err(InvalidInput::new(
            "cidr",
            format!(
                "{cidr} does not lie inside {}, the block of parent pool {}",
                parent.cidr, parent.name
            ),
        ));
    }
    Ok(parent.depth + 1)
}

/// Parses a CIDR field; host bits set are refused with the aligned network as a hint.
pub fn cidr(field: &str, text: &str) -> Result<Block, InvalidInput> {
    Block::parse(text).map_err(|e| {
        let invalid = InvalidInput::new(field, e.to_string());
        match e {
            CidrError::HostBits { aligned } => invalid.with_hint(aligned.to_string()),
            CidrError::Malformed(_) => invalid,
        }
    })
}

/// The `parent` a pool names: a pool name.
pub fn parent(text: String) -> Result<PoolName, InvalidInput> {
    PoolName::parse(text).map_err(|e| InvalidInput::new("parent", e.message))
}

/// The networks a caller excludes. They are its hosts' networks, often written
/// with an interface address (`192.168.1.5/24`), so host bits are cleared
/// rather than refused.
pub fn excludes(texts: &[String]) -> Result<Vec<Block>, InvalidInput> {
    if texts.len() > MAX_EXCLUDES {
        return Err(InvalidInput::new(
            "exclude",
            format!(
                "lists {} networks; the limit is {MAX_EXCLUDES}",
                texts.len()
            ),
        ));
    }
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| match Block::parse(text) {
            Ok(block) | Err(CidrError::HostBits { aligned: block }) => Ok(block),
            Err(e) => Err(InvalidInput::new(format!("exclude[{i}]"), e.to_string())),
        })
        .collect()
}

/// An opaque resumption point of a list ordered by a text or an address.
pub fn encode_cursor(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

pub fn decode_cursor(text: &str) -> Result<Vec<u8>, InvalidInput> {
    hex::decode(text)
        .ok()
        .filter(|b| !b.is_empty())
        .ok_or_else(cursor_error)
}

/// The refusal of a cursor of a pool or reservation page this server did
/// not issue.
pub fn cursor_error() -> InvalidInput {
    InvalidInput::new("cursor", "is not a cursor this server issued")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::validate::pool_name;

    #[test]
    fn pool_names_follow_the_pattern() {
        for ok in ["a", "docker-nets", "k8s_pods.eu-1", &"a".repeat(63)] {
            assert!(pool_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "A", "a/b", "ünï", &"a".repeat(64), ".a"] {
            assert_eq!(pool_name(bad).unwrap_err().field, "pool", "{bad}");
        }
    }

    #[test]
    fn ids_round_trip_and_foreign_texts_name_nothing() {
        assert_eq!(reservation_id(FencingToken::new(42)), "r_000000000000002a");
        let id = parse_reservation_id("r_000000000000002a");
        assert_eq!(id, Some(FencingToken::new(42)));
        assert_eq!(parse_reservation_id("r_2a"), None);
        assert_eq!(parse_reservation_id("r_000000000000002A"), None);
        assert_eq!(parse_reservation_id("x_000000000000002a"), None);
    }

    #[test]
    fn cidrs_with_host_bits_are_refused_with_a_hint_but_excludes_are_cleared() {
        let err = cidr("subnet", "192.168.1.5/24").unwrap_err();
        assert_eq!(err.hint.as_deref(), Some("192.168.1.0/24"));
        let texts = vec!["192.168.1.5/24".to_owned(), "fe80::1/64".to_owned()];
        let parsed = excludes(&texts).unwrap();
        assert_eq!(parsed[0].to_string(), "192.168.1.0/24");
        let bad = excludes(&["10.0.0.0/8".to_owned(), "nope".to_owned()]).unwrap_err();
        assert_eq!(bad.field, "exclude[1]");
    }

    #[test]
    fn differences_name_what_differs() {
        let pool = top("p", "10.0.0.0/8");
        let labels = BTreeMap::from([("env".to_owned(), "prod".to_owned())]);
        let other = Pool {
            labels: labels.clone(),
            ..top("p", "10.0.0.0/16")
        };
        let relabelled = Pool {
            labels,
            ..pool.clone()
        };
        let nested = Pool {
            parent: Some("q".into()),
            ..pool.clone()
        };
        assert!(pool_differences(&pool, &pool).is_empty());
        assert_eq!(pool_differences(&pool, &other), ["cidr", "labels"]);
        assert_eq!(pool_differences(&pool, &relabelled), ["labels"]);
        assert_eq!(pool_differences(&pool, &nested), ["parent"]);
    }

    fn top(name: &str, cidr: &str) -> Pool {
        Pool {
            name: name.into(),
            cidr: Block::parse(cidr).unwrap(),
            labels: BTreeMap::new(),
            created_at: At::EPOCH,
            parent: None,
            depth: 0,
            rules: Rules::default(),
        }
    }

    #[test]
    fn a_child_lies_inside_its_parent_above_the_deepest_level() {
        let parent = top("p", "10.0.0.0/8");
        let inside = Block::parse("10.1.0.0/16").unwrap();
        assert_eq!(child_depth(&parent, inside), Ok(1));
        for outside in ["11.0.0.0/16", "10.0.0.0/8", "0.0.0.0/0", "fd00::/64"] {
            let err = child_depth(&parent, Block::parse(outside).unwrap()).unwrap_err();
            assert_eq!(err.field, "cidr", "{outside}");
        }
        let deepest = Pool {
            depth: MAX_POOL_DEPTH,
            ..parent
        };
        assert_eq!(child_depth(&deepest, inside).unwrap_err().field, "parent");
    }
}
