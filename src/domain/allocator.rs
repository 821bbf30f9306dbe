//! The subnet allocator: which block a request gets, given the pool's free
//! space and the networks the caller excludes.
//!
//! A pool's free space is kept as its maximal free aligned blocks (a buddy
//! system: two free halves of one block are always merged into it). Policy:
//! best fit, then lowest address. The request is cut from the smallest usable
//! free block that can hold it, at that block's lowest address.

use super::InvalidInput;
use super::cidr::Block;

/// What a reservation asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Any free block of this prefix length.
    PrefixLen(u8),
    /// This very block.
    Subnet(Block),
}

impl Want {
    pub fn prefix_len(self) -> u8 {
        match self {
            Want::PrefixLen(len) => len,
            Want::Subnet(block) => block.prefix_len(),
        }
    }
}

/// A block cut from a free block; what remains of `from` is `carve(from, block)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub from: Block,
    pub block: Block,
}

/// Checks a request against its pool: same family, a prefix length from the
/// pool's to the family's width, a named subnet inside the pool.
pub fn check_want(pool: Block, want: Want) -> Result<(), InvalidInput> {
    let family = pool.family();
    match want {
        Want::PrefixLen(len) => {
            if len > family.width() {
                return Err(InvalidInput::new(
                    "prefix_len",
                    format!(
                        "is {len}, past the {} width of {} bits",
                        family.name(),
                        family.width()
                    ),
                ));
            }
            if len < pool.prefix_len() {
                return Err(InvalidInput::new(
                    "prefix_len",
                    format!("is {len}, shorter than the pool's {pool}"),
                ));
            }
        }
        Want::Subnet(subnet) => {
            if subnet.family() != family {
                return Err(InvalidInput::new(
                    "subnet",
                    format!(
                        "is {}, but the pool {pool} is {}",
                        subnet.family().name(),
                        family.name()
                    ),
                ));
            }
            if !pool.contains(subnet) {
                return Err(InvalidInput::new(
                    "subnet",
                    format!("{subnet} is not inside the pool {pool}"),
                ));
            }
        }
    }
    Ok(())
}

/// The excludes that matter in `pool`: same family, overlapping it. Others
/// (the other family, networks elsewhere) cannot collide with a grant.
pub fn relevant_excludes(pool: Block, excludes: &[Block]) -> Vec<Block> {
    let mut relevant: Vec<Block> = excludes
        .iter()
        .copied()
        .filter(|x| x.overlaps(pool))
        .collect();
    relevant.sort();
    relevant.dedup();
    relevant
}

/// The maximal aligned blocks of `block` outside every hole, in address order.
pub fn subtract(block: Block, holes: &[Block]) -> Vec<Block> {
    let mut out = Vec::new();
    subtract_into(block, holes, &mut out);
    out
}

fn subtract_into(block: Block, holes: &[Block], out: &mut Vec<Block>) {
    let inside: Vec<Block> = holes
        .iter()
        .copied()
        .filter(|h| h.overlaps(block))
        .collect();
    if inside.is_empty() {
        out.push(block);
        return;
    }
    if inside.iter().any(|h| h.contains(block)) {
        return;
    }
    // Some hole is strictly inside, so the block has halves.
    if let Some((lo, hi)) = block.halves() {
        subtract_into(lo, &inside, out);
        subtract_into(hi, &inside, out);
    }
}

/// What of one free block a request with `excludes` may use: the block
/// itself, nothing, or its maximal aligned blocks outside the excludes.
pub fn usable(free: Block, excludes: &[Block]) -> Vec<Block> {
    subtract(free, excludes)
}

/// The next `limit` blocks of `len` that reserves would take one after
/// another from `free` (usable free blocks, disjoint): best fit takes the
/// smallest block that holds one, at its lowest address, and what is left
/// of it is smaller than any other, so the block is used up in address
/// order before the next best one is touched.
pub fn next_blocks(mut free: Vec<Block>, len: u8, limit: usize) -> Vec<Block> {
    free.retain(|b| b.prefix_len() <= len);
    free.sort_by_key(|b| (std::cmp::Reverse(b.prefix_len()), b.start()));
    let mut out = Vec::with_capacity(limit);
    for block in free {
        // A length past the family's width names no block at all.
        let Some(shift) = block.family().width().checked_sub(len) else {
            break;
        };
        let step = 1u128.checked_shl(u32::from(shift));
        let mut start = block.start();
        while out.len() < limit {
            let Some(next) = Block::new(block.family(), start, len).filter(|n| block.contains(*n))
            else {
                break;
            };
            out.push(next);
            match step.and_then(|s| start.checked_add(s)) {
                Some(s) => start = s,
                None => break,
            }
        }
    }
    out
}

/// Best fit, then lowest address, over `(free block, usable piece)` candidates.
pub fn best_fit(
    candidates: impl IntoIterator<Item = (Block, Block)>,
    prefix_len: u8,
) -> Option<Grant> {
    candidates
        .into_iter()
        .filter(|(_, piece)| piece.prefix_len() <= prefix_len)
        .min_by_key(|(_, piece)| (std::cmp::Reverse(piece.prefix_len()), piece.start()))
        .map(|(from, piece)| Grant {
            from,
            block: Block::around(piece.family(), piece.start(), prefix_len),
        })
}

/// The largest usable piece (lowest address among equals).
pub fn largest(candidates: impl IntoIterator<Item = Block>) -> Option<Block> {
    candidates
        .into_iter()
        .min_by_key(|piece| (piece.prefix_len(), piece.start()))
}

/// What remains free of `from` once `block` (inside it) is taken: the other
/// half at every level on the way down, each a maximal free block.
pub fn carve(from: Block, block: Block) -> Vec<Block> {
    let mut rest = Vec::new();
    let mut current = from;
    while current.prefix_len() < block.prefix_len() {
        let Some((lo, hi)) = current.halves() else {
            break;
        };
        let (keep, other) = if lo.contains(block) {
            (lo, hi)
        } else {
            (hi, lo)
        };
        rest.push(other);
        current = keep;
    }
    rest
}

/// The pool could not serve the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhausted {
    /// The largest block the request could have had (outside its excludes).
    pub largest_free: Option<Block>,
}

/// The whole decision over a pool's free blocks: the definition the store's
/// indexed search follows (it reads only the best plain free block and the
/// few free blocks an exclude cuts into).
pub fn allocate(free: &[Block], excludes: &[Block], prefix_len: u8) -> Result<Grant, Exhausted> {
    let candidates: Vec<(Block, Block)> = free
        .iter()
        .flat_map(|&f| usable(f, excludes).into_iter().map(move |p| (f, p)))
        .collect();
    best_fit(candidates.iter().copied(), prefix_len).ok_or_else(|| Exhausted {
        largest_free: largest(candidates.iter().map(|(_, p)| *p)),
    })
}

/// The maximal free aligned blocks of a pool with these blocks taken.
pub fn free_space(pool: Block, taken: &[Block]) -> Vec<Block> {
    subtract(pool, taken)
}

#[cfg(test)]
#[path = "allocator_tests.rs"]
mod tests;
