//! A pool as a map: its address space cut into blocks of one prefix length
//! (the resolution the caller asks for), each block free, reserved,
//! allocated or mixed, and consecutive blocks alike told as one run. The
//! runs number at most twice the live reservations plus one, however many
//! blocks the resolution makes (a /8 at /24 is 65,536 blocks; an IPv6 pool
//! far more): a map is never one element per possible subnet.

use super::InvalidInput;
use super::cidr::{AddressCount, Block};
use super::subnet::{Child, ReservationState};

/// The most blocks a map may cut a pool into, as a power of two: counts of
/// blocks stay exact integers.
pub const MAX_DEPTH: u8 = 64;

/// How many bits finer than the pool a map is by default.
pub const DEFAULT_DEPTH: u8 = 8;

/// The prefix length a pool's map is cut at: inside the pool's family,
/// no coarser than the pool, at most `MAX_DEPTH` bits finer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolution(u8);

impl Resolution {
    /// `asked`, or the pool's length plus `DEFAULT_DEPTH` (within the family).
    pub fn parse(pool: Block, asked: Option<u32>) -> Result<Self, InvalidInput> {
        let width = pool.family().width();
        let low = pool.prefix_len();
        let high = width.min(low.saturating_add(MAX_DEPTH));
        let Some(asked) = asked else {
            return Ok(Self(width.min(low.saturating_add(DEFAULT_DEPTH))));
        };
        match u8::try_from(asked) {
            Ok(len) if (low..=high).contains(&len) => Ok(Self(len)),
            _ => Err(InvalidInput::new(
                "prefix_len",
                format!("the map of {pool} is cut at a prefix length from {low} to {high}"),
            )),
        }
    }

    pub fn get(self) -> u8 {
        self.0
    }
}

/// What a block of the map holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    Free,
    /// Wholly reserved (not yet confirmed).
    Reserved,
    /// Wholly allocated (confirmed).
    Allocated,
    /// Partly used, or reserved and allocated both.
    Mixed,
    /// Wholly one child pool's block (its addresses count as allocated).
    Child,
}

/// `count` consecutive blocks from `first`, alike: each holds `reserved`
/// and `allocated` addresses.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub first: Block,
    pub count: u128,
    pub cell: Cell,
    pub reserved: AddressCount,
    pub allocated: AddressCount,
    /// The child pool whose block the run is, when `cell` is `Child`.
    pub child: Option<String>,
}

/// What occupies a block of a pool: a live reservation, or a pool cut from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occupant<'a> {
    Lease(ReservationState),
    Child(&'a str),
}

/// A block by its index in the pool, and what it holds so far.
struct Span {
    index: u128,
    count: u128,
    reserved: AddressCount,
    allocated: AddressCount,
    whole: Option<Cell>,
    child: Option<String>,
}

/// The map of `pool` at `resolution`, from its live reservations in
/// address order (disjoint, as the allocator keeps them).
pub fn map(pool: Block, resolution: Resolution, used: &[(Block, ReservationState)]) -> Vec<Run> {
    let used: Vec<_> = used.iter().map(|&(b, s)| (b, Occupant::Lease(s))).collect();
    map_occupied(pool, resolution, &used)
}

/// The map of `pool` at `resolution`, from what occupies it (its live
/// reservations and its children) in address order, disjoint.
pub fn map_occupied(pool: Block, resolution: Resolution, used: &[(Block, Occupant)]) -> Vec<Run> {
    let r = resolution.get();
    let shift = u32::from(pool.family().width() - r);
    let block_size = AddressCount::power_of_two(shift);
    let index = |b: Block| (b.start() - pool.start()).checked_shr(shift).unwrap_or(0);
    let mut spans: Vec<Span> = Vec::new();
    for &(subnet, occupant) in used {
        let size = subnet.size();
        let (reserved, allocated) = match occupant {
            Occupant::Lease(ReservationState::Reserved) => (size, AddressCount::default()),
            Occupant::Lease(ReservationState::Allocated) | Occupant::Child(_) => {
                (AddressCount::default(), size)
            }
        };
        if subnet.prefix_len() <= r {
            let (whole, child) = match occupant {
                Occupant::Lease(ReservationState::Reserved) => (Cell::Reserved, None),
                Occupant::Lease(ReservationState::Allocated) => (Cell::Allocated, None),
                Occupant::Child(name) => (Cell::Child, Some(name.to_owned())),
            };
            let per_block = |n: AddressCount| if n == size { block_size } else { n };
            spans.push(Span {
                index: index(subnet),
                count: 1u128 << (r - subnet.prefix_len()),
                reserved: per_block(reserved),
                allocated: per_block(allocated),
                whole: Some(whole),
                child,
            });
            continue;
        }
        match spans.last_mut() {
            Some(last) if last.whole.is_none() && last.index == index(subnet) => {
                last.reserved = last.reserved + reserved;
                last.allocated = last.allocated + allocated;
            }
            _ => spans.push(Span {
                index: index(subnet),
                count: 1,
                reserved,
                allocated,
                whole: None,
                child: None,
            }),
        }
    }
    runs(pool, r, block_size, spans)
}

/// A pool's live reservations and its children, in address order.
pub fn occupants<'a>(
    leases: &[(Block, ReservationState)],
    children: &'a [Child],
) -> Vec<(Block, Occupant<'a>)> {
    let mut all: Vec<_> = leases
        .iter()
        .map(|&(b, s)| (b, Occupant::Lease(s)))
        .chain(children.iter().map(|c| (c.cidr, Occupant::Child(&c.name))))
        .collect();
    all.sort_by_key(|(b, _)| b.start());
    all
}

/// The spans in order, with free runs between them, alike neighbours merged.
fn runs(pool: Block, r: u8, block_size: AddressCount, spans: Vec<Span>) -> Vec<Run> {
    let blocks = 1u128 << (r - pool.prefix_len());
    let shift = u32::from(pool.family().width() - r);
    let at = |index: u128| {
        let start = pool.start() + index.checked_shl(shift).unwrap_or(0);
        Block::new(pool.family(), start, r).expect("an aligned block of the pool")
    };
    let nothing = AddressCount::default();
    let mut out: Vec<Run> = Vec::new();
    let mut push = |index: u128, count: u128, cell, reserved, allocated, child: Option<String>| {
        if let Some(last) = out.last_mut()
            && (last.cell, last.reserved, last.allocated) == (cell, reserved, allocated)
            && last.child == child
        {
            last.count += count;
            return;
        }
        let first = at(index);
        out.push(Run {
            first,
            count,
            cell,
            reserved,
            allocated,
            child,
        });
    };
    let mut next = 0u128;
    for span in spans {
        if span.index > next {
            push(next, span.index - next, Cell::Free, nothing, nothing, None);
        }
        let cell = span.whole.unwrap_or(if span.reserved == block_size {
            Cell::Reserved
        } else if span.allocated == block_size {
            Cell::Allocated
        } else {
            Cell::Mixed
        });
        push(
            span.index,
            span.count,
            cell,
            span.reserved,
            span.allocated,
            span.child,
        );
        next = span.index + span.count;
    }
    if next < blocks {
        push(next, blocks - next, Cell::Free, nothing, nothing, None);
    }
    out
}

#[cfg(test)]
#[path = "pool_map_tests.rs"]
mod tests;
