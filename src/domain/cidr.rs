//! CIDR blocks of either family as one type over `u128` addresses, and exact
//! address counts (all of IPv6 holds 2^128 addresses, one more than `u128`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An address family; IPv4 addresses use the low 32 bits of the `u128`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    /// Bits in an address.
    pub fn width(self) -> u8 {
        match self {
            Family::V4 => 32,
            Family::V6 => 128,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }
}

/// The host bits of a block of `prefix_len` (all ones), without overflowing
/// when the block is a whole family of 128 bits.
fn host_mask(family: Family, prefix_len: u8) -> u128 {
    let bits = u32::from(family.width() - prefix_len);
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

/// An aligned block of addresses: `start` has every host bit clear.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Block {
    family: Family,
    start: u128,
    prefix_len: u8,
}

/// Why a text is not an aligned block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CidrError {
    Malformed(String),
    /// The address has host bits set; `aligned` is the network it lies in.
    HostBits {
        aligned: Block,
    },
}

impl fmt::Display for CidrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CidrError::Malformed(m) => f.write_str(m),
            CidrError::HostBits { aligned } => {
                write!(f, "has host bits set; the aligned network is {aligned}")
            }
        }
    }
}

impl Block {
    /// The aligned block `start/prefix_len`; `None` when it is not one.
    pub fn new(family: Family, start: u128, prefix_len: u8) -> Option<Block> {
        if prefix_len > family.width() || start & host_mask(family, prefix_len) != 0 {
            return None;
        }
        if family == Family::V4 && start > u128::from(u32::MAX) {
            return None;
        }
        Some(Block {
            family,
            start,
            prefix_len,
        })
    }

    /// The block of `prefix_len` that holds `address`.
    pub fn around(family: Family, address: u128, prefix_len: u8) -> Block {
        let prefix_len = prefix_len.min(family.width());
        Block {
            family,
            start: address & !host_mask(family, prefix_len),
            prefix_len,
        }
    }

    pub fn family(self) -> Family {
        self.family
    }

    pub fn start(self) -> u128 {
        self.start
    }

    pub fn prefix_len(self) -> u8 {
        self.prefix_len
    }

    /// The last address in the block.
    pub fn last(self) -> u128 {
        self.start | host_mask(self.family, self.prefix_len)
    }

    /// How many addresses the block holds.
    pub fn size(self) -> AddressCount {
        AddressCount::power_of_two(u32::from(self.family.width() - self.prefix_len))
    }

    pub fn contains(self, other: Block) -> bool {
        self.family == other.family
            && other.prefix_len >= self.prefix_len
            && other.start & !host_mask(self.family, self.prefix_len) == self.start
    }

    pub fn overlaps(self, other: Block) -> bool {
        self.family == other.family && self.start <= other.last() && other.start <= self.last()
    }

    /// The two halves, lower first; `None` for a single address.
    pub fn halves(self) -> Option<(Block, Block)> {
        if self.prefix_len == self.family.width() {
            return None;
        }
        let len = self.prefix_len + 1;
        let upper = self.start | (host_mask(self.family, len) + 1);
        Some((
            Block {
                prefix_len: len,
                ..self
            },
            Block {
                start: upper,
                prefix_len: len,
                ..self
            },
        ))
    }

    /// The block twice as large that holds this one; `None` for a whole family.
    pub fn parent(self) -> Option<Block> {
        (self.prefix_len > 0).then(|| Block::around(self.family, self.start, self.prefix_len - 1))
    }

    /// The other half of the parent.
    pub fn buddy(self) -> Option<Block> {
        (self.prefix_len > 0).then(|| Block {
            start: self.start ^ (host_mask(self.family, self.prefix_len) + 1),
            ..self
        })
    }

    /// Parses `192.168.0.0/16` or `2001:db8::/32`; host bits set are refused
    /// with the aligned network as a hint.
    pub fn parse(text: &str) -> Result<Block, CidrError> {
        let malformed =
            || CidrError::Malformed(format!("{text:?} is not a CIDR block such as 10.0.0.0/16"));
        let (address, len) = text.split_once('/').ok_or_else(malformed)?;
        if len.is_empty() || len.len() > 3 || !len.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed());
        }
        let len: u8 = len.parse().map_err(|_| malformed())?;
        let (family, address) = match address.parse::<IpAddr>().map_err(|_| malformed())? {
            IpAddr::V4(a) => (Family::V4, u128::from(u32::from(a))),
            IpAddr::V6(a) => (Family::V6, u128::from(a)),
        };
        if len > family.width() {
            return Err(CidrError::Malformed(format!(
                "{text:?}: an {} prefix length is at most {}",
                family.name(),
                family.width()
            )));
        }
        let aligned = Block::around(family, address, len);
        if aligned.start != address {
            return Err(CidrError::HostBits { aligned });
        }
        Ok(aligned)
    }

    /// The start address as 16 big-endian bytes, so that byte order is address order.
    pub fn start_bytes(self) -> [u8; 16] {
        self.start.to_be_bytes()
    }

    pub fn last_bytes(self) -> [u8; 16] {
        self.last().to_be_bytes()
    }

    /// The inverse of `start_bytes`; `None` when the bytes are no aligned block.
    pub fn from_bytes(family: Family, start: &[u8], prefix_len: u8) -> Option<Block> {
        let start: [u8; 16] = start.try_into().ok()?;
        Block::new(family, u128::from_be_bytes(start), prefix_len)
    }
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.family {
            Family::V4 => write!(
                f,
                "{}/{}",
                Ipv4Addr::from(self.start as u32),
                self.prefix_len
            ),
            Family::V6 => write!(f, "{}/{}", Ipv6Addr::from(self.start), self.prefix_len),
        }
    }
}

/// An exact number of addresses, from 0 to 2^128 and beyond (a carry above `u128`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, PartialOrd, Ord)]
pub struct AddressCount {
    carry: u64,
    low: u128,
}

impl AddressCount {
    pub fn power_of_two(bits: u32) -> AddressCount {
        if bits >= 128 {
            AddressCount {
                carry: 1 << (bits - 128).min(63),
                low: 0,
            }
        } else {
            AddressCount {
                carry: 0,
                low: 1 << bits,
            }
        }
    }

    /// `self + other * n`.
    pub fn add_times(self, other: AddressCount, n: u64) -> AddressCount {
        let mut sum = self;
        // Doubling keeps every step exact without a wider integer type.
        let (mut term, mut n) = (other, n);
        while n > 0 {
            if n & 1 == 1 {
                sum = sum + term;
            }
            term = term + term;
            n >>= 1;
        }
        sum
    }
}

impl From<u128> for AddressCount {
    fn from(low: u128) -> Self {
        AddressCount { carry: 0, low }
    }
}

impl std::ops::Add for AddressCount {
    type Output = AddressCount;

    fn add(self, other: AddressCount) -> AddressCount {
        let (low, overflow) = self.low.overflowing_add(other.low);
        AddressCount {
            carry: self.carry + other.carry + u64::from(overflow),
            low,
        }
    }
}

impl fmt::Display for AddressCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.carry == 0 {
            return write!(f, "{}", self.low);
        }
        // Long division by 10^19 over three 64-bit limbs, most significant first.
        const CHUNK: u128 = 10_000_000_000_000_000_000;
        let mut limbs = [self.carry, (self.low >> 64) as u64, self.low as u64];
        let mut chunks = Vec::new();
        while limbs.iter().any(|&l| l != 0) {
            let mut rem: u128 = 0;
            for limb in &mut limbs {
                let current = (rem << 64) | u128::from(*limb);
                *limb = (current / CHUNK) as u64;
                rem = current % CHUNK;
            }
            chunks.push(rem as u64);
        }
        let mut text = chunks.pop().map(|c| c.to_string()).unwrap_or_default();
        for chunk in chunks.iter().rev() {
            text.push_str(&format!("{chunk:019}"));
        }
        f.write_str(&text)
    }
}

#[cfg(test)]
#[path = "cidr_tests.rs"]
mod tests;
