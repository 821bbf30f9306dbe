//! Request values beyond names, parsed once at the edge: a page size, the
//! metadata or capabilities a lease or member carries, a pool's labels, the
//! keys of a lock set, a reservation id. A value of one of these types has
//! been checked; code below takes it and never checks it again.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fencing_token::FencingToken;
use super::names::LockKey;
use super::validate::{self, InvalidInput};
use super::{group, subnet};

/// The most keys one lock set may name.
pub const MAX_SET_KEYS: usize = 64;

/// The page size a list asks for: 1 to the server's maximum, 100 (or the
/// maximum, if lower) when none is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimit(u32);

/// How many of a key's newest events a read of its history answers
/// without `limit`, and at most.
pub const HISTORY_DEFAULT_LIMIT: u32 = 50;
pub const HISTORY_MAX_LIMIT: u32 = 500;

impl PageLimit {
    pub fn parse(limit: Option<u32>, max: u32) -> Result<Self, InvalidInput> {
        let limit = limit.unwrap_or(100.min(max));
        validate::page_limit(limit, max)?;
        Ok(Self(limit))
    }

    /// The events of a key's history one read answers: 1 to
    /// `HISTORY_MAX_LIMIT`, `HISTORY_DEFAULT_LIMIT` when none is asked for.
    pub fn history(limit: Option<u32>) -> Result<Self, InvalidInput> {
        let limit = limit.unwrap_or(HISTORY_DEFAULT_LIMIT);
        validate::page_limit(limit, HISTORY_MAX_LIMIT)?;
        Ok(Self(limit))
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

/// The small JSON object stored with a lease, a session or a group: at most
/// `MAX_METADATA_BYTES` as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Metadata(Map<String, Value>);

impl Metadata {
    pub fn parse(map: Map<String, Value>) -> Result<Self, InvalidInput> {
        validate::metadata(&map)?;
        Ok(Self(map))
    }

    /// `None` stays `None`; an object is checked.
    pub fn parse_some(map: Option<Map<String, Value>>) -> Result<Option<Self>, InvalidInput> {
        map.map(Self::parse).transpose()
    }

    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    pub fn into_map(self) -> Map<String, Value> {
        self.0
    }
}

/// What a group member can do: any JSON value of at most the server's
/// `--max-capabilities-bytes` as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Capabilities(Value);

impl Capabilities {
    pub fn parse(value: Value, max_bytes: usize) -> Result<Self, InvalidInput> {
        validate::capabilities(&value, max_bytes)?;
        Ok(Self(value))
    }

    pub fn as_value(&self) -> &Value {
        &self.0
    }

    pub fn into_value(self) -> Value {
        self.0
    }
}

/// A pool's labels: keys not empty, bounded in size (`subnet::labels`);
/// none sent is none at all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Labels(BTreeMap<String, String>);

impl Labels {
    pub fn parse(labels: Option<BTreeMap<String, String>>) -> Result<Self, InvalidInput> {
        let labels = labels.unwrap_or_default();
        subnet::labels(&labels)?;
        Ok(Self(labels))
    }

    pub fn into_map(self) -> BTreeMap<String, String> {
        self.0
    }

    /// Labels sent as any JSON object: a flat map of text to text, or
    /// refused naming `labels`.
    pub fn parse_flat(labels: Option<Map<String, Value>>) -> Result<Self, InvalidInput> {
        let Some(object) = labels else {
            return Ok(Self::default());
        };
        let mut flat = BTreeMap::new();
        for (key, value) in object {
            let Value::String(text) = value else {
                return Err(InvalidInput::new(
                    "labels",
                    format!("must map names to text: the value of {key:?} is not text"),
                ));
            };
            flat.insert(key, text);
        }
        Self::parse(Some(flat))
    }

    pub fn as_map(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// How many blocks one reserve asks for (`count`): 1 to `MAX_BATCH`,
/// all granted in one transaction or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchCount(u16);

/// The most blocks one reserve may ask for.
pub const MAX_BATCH: u16 = 256;

impl BatchCount {
    pub const ONE: BatchCount = BatchCount(1);

    pub fn parse(count: u64) -> Result<Self, InvalidInput> {
        match u16::try_from(count) {
            Ok(n) if (1..=MAX_BATCH).contains(&n) => Ok(Self(n)),
            _ => Err(InvalidInput::new(
                "count",
                format!("must be 1 to {MAX_BATCH} blocks, not {count}"),
            )),
        }
    }

    pub fn get(self) -> usize {
        usize::from(self.0)
    }
}

/// The keys of a lock set: 1 to `MAX_SET_KEYS`, distinct, in key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySet(Vec<LockKey>);

impl KeySet {
    /// The number of keys a set may name, checked before the keys themselves.
    pub fn check_count(count: usize) -> Result<(), InvalidInput> {
        if count == 0 || count > MAX_SET_KEYS {
            return Err(InvalidInput::new(
                "keys",
                format!("must name 1 to {MAX_SET_KEYS} keys"),
            ));
        }
        Ok(())
    }

    pub fn parse(mut keys: Vec<LockKey>) -> Result<Self, InvalidInput> {
        Self::check_count(keys.len())?;
        keys.sort_unstable();
        if let Some(twice) = keys.windows(2).find(|w| w[0] == w[1]) {
            return Err(InvalidInput::new(
                "keys",
                format!("names {} twice", twice[0]),
            ));
        }
        Ok(Self(keys))
    }

    /// The first key in key order: a set is never empty.
    pub fn first(&self) -> &LockKey {
        &self.0[0]
    }

    pub fn keys(&self) -> &[LockKey] {
        &self.0
    }
}

/// A reservation id as this server issues them (`r_` and 16 hex digits).
/// An id of any other shape names no reservation: it is not found, not
/// refused as bad input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReservationId {
    text: String,
    fencing_token: FencingToken,
}

impl ReservationId {
    pub fn parse(id: &str) -> Option<Self> {
        subnet::parse_reservation_id(id).map(|fencing_token| Self {
            text: id.to_owned(),
            fencing_token,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The fencing token of the grant the id names.
    pub fn fencing_token(&self) -> FencingToken {
        self.fencing_token
    }
}

/// The name after which a page of groups or members resumes, from the
/// cursor of the page before.
pub fn name_cursor(cursor: Option<&str>) -> Result<Option<String>, InvalidInput> {
    cursor.map(group::decode_cursor).transpose()
}

/// The pool name after which a page of pools resumes.
pub fn pool_cursor(cursor: Option<&str>) -> Result<Option<String>, InvalidInput> {
    cursor
        .map(subnet::decode_cursor)
        .transpose()?
        .map(|bytes| String::from_utf8(bytes).map_err(|_| subnet::cursor_error()))
        .transpose()
}

/// The first address (16 big-endian bytes) after which a page of
/// reservations resumes.
pub fn reservation_cursor(cursor: Option<&str>) -> Result<Option<[u8; 16]>, InvalidInput> {
    cursor
        .map(subnet::decode_cursor)
        .transpose()?
        .map(|bytes| <[u8; 16]>::try_from(bytes).map_err(|_| subnet::cursor_error()))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> LockKey {
        LockKey::parse(k).unwrap()
    }

    #[test]
    fn a_page_is_one_to_the_maximum_and_100_by_default() {
        assert_eq!(PageLimit::parse(None, 1_000).unwrap().get(), 100);
        assert_eq!(PageLimit::parse(None, 10).unwrap().get(), 10);
        assert_eq!(PageLimit::parse(Some(0), 1_000).unwrap_err().field, "limit");
        assert!(PageLimit::parse(Some(1_001), 1_000).is_err());
        assert_eq!(PageLimit::history(None).unwrap().get(), 50);
        assert_eq!(PageLimit::history(Some(500)).unwrap().get(), 500);
        assert_eq!(PageLimit::history(Some(501)).unwrap_err().field, "limit");
    }

    #[test]
    fn a_set_names_distinct_keys_in_key_order() {
        let set = KeySet::parse(vec![key("b"), key("a")]).unwrap();
        assert_eq!(set.first().as_str(), "a");
        let twice = KeySet::parse(vec![key("a"), key("b"), key("a")]).unwrap_err();
        assert_eq!(twice.message, "names a twice");
        assert_eq!(KeySet::parse(vec![]).unwrap_err().field, "keys");
    }

    #[test]
    fn cursors_are_those_the_server_issued() {
        let after = [7u8; 16];
        let text = subnet::encode_cursor(&after);
        assert_eq!(reservation_cursor(Some(&text)).unwrap(), Some(after));
        assert!(reservation_cursor(Some("0a")).is_err());
        assert_eq!(pool_cursor(Some("ff")).unwrap_err().field, "cursor");
        assert_eq!(name_cursor(None).unwrap(), None);
    }

    #[test]
    fn only_issued_reservation_ids_parse() {
        assert!(ReservationId::parse("r_000000000000002a").is_some());
        assert!(ReservationId::parse("r_2a").is_none());
    }
}
