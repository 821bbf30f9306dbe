//! The allocator against a brute-force reference that looks at every address,
//! over random sequences of reserve, release and expiry, in both families.

use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;
use crate::domain::cidr::{AddressCount, Family};

fn b(text: &str) -> Block {
    Block::parse(text).unwrap()
}

/// Gives a block back to a buddy free list, merging it with free buddies (as
/// the store does row by row).
fn give_back(free: &mut BTreeSet<Block>, pool: Block, mut block: Block) {
    while block != pool {
        let buddy = block.buddy().unwrap();
        if !free.remove(&buddy) {
            break;
        }
        block = block.parent().unwrap();
    }
    free.insert(block);
}

fn take(free: &mut BTreeSet<Block>, grant: Grant) {
    assert!(free.remove(&grant.from), "{:?} was not free", grant.from);
    free.extend(carve(grant.from, grant.block));
}

/// Every aligned block of `len` in `pool` (small pools only).
fn blocks_of(pool: Block, len: u8) -> Vec<Block> {
    let step = 1u128 << (pool.family().width() - len);
    let count = 1u128 << (len - pool.prefix_len());
    (0..count)
        .map(|i| Block::new(pool.family(), pool.start() + i * step, len).unwrap())
        .collect()
}

fn all_free(block: Block, blocked: &[Block]) -> bool {
    (block.start()..=block.last()).all(|a| {
        let single = Block::new(block.family(), a, block.family().width()).unwrap();
        !blocked.iter().any(|x| x.overlaps(single))
    })
}

/// The largest wholly free aligned block in the pool holding `block`.
fn maximal(pool: Block, block: Block, blocked: &[Block]) -> Block {
    let mut m = block;
    while let Some(p) = m
        .parent()
        .filter(|p| pool.contains(*p) && all_free(*p, blocked))
    {
        m = p;
    }
    m
}

/// Best fit, then lowest address, by looking at every candidate block.
fn reference(pool: Block, blocked: &[Block], len: u8) -> Result<Block, Option<Block>> {
    let free: Vec<Block> = blocks_of(pool, len)
        .into_iter()
        .filter(|g| all_free(*g, blocked))
        .collect();
    let best = free
        .iter()
        .map(|g| (*g, maximal(pool, *g, blocked)))
        .filter(|(g, m)| g.start() == m.start())
        .min_by_key(|(_, m)| (std::cmp::Reverse(m.prefix_len()), m.start()));
    if let Some((g, _)) = best {
        return Ok(g);
    }
    let largest = (pool.prefix_len()..=pool.family().width())
        .flat_map(|l| blocks_of(pool, l))
        .find(|g| all_free(*g, blocked));
    Err(largest)
}

#[derive(Debug, Clone)]
enum Op {
    Reserve {
        extra_len: u8,
        ttl: Option<u8>,
        excludes: Vec<(u8, u8, bool)>,
    },
    Release(usize),
    Advance(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..=8, proptest::option::of(1u8..5), proptest::collection::vec((0u8..=255, 0u8..=10, any::<bool>()), 0..3))
            .prop_map(|(extra_len, ttl, excludes)| Op::Reserve { extra_len, ttl, excludes }),
        2 => any::<usize>().prop_map(Op::Release),
        1 => (1u8..4).prop_map(Op::Advance),
    ]
}

/// An exclude near the pool: an offset in it, a length around its own, and
/// sometimes the other family (which must not matter).
fn exclude(pool: Block, (offset, len, other_family): (u8, u8, bool)) -> Block {
    let family = if other_family {
        match pool.family() {
            Family::V4 => Family::V6,
            Family::V6 => Family::V4,
        }
    } else {
        pool.family()
    };
    let len = (pool.prefix_len() + len)
        .saturating_sub(2)
        .min(family.width());
    Block::around(family, pool.start() + u128::from(offset), len)
}

fn run(pool: Block, ops: Vec<Op>) {
    let mut free = BTreeSet::from([pool]);
    // (block, expires_at or None when allocated, the excludes it was granted under)
    let mut live: Vec<(Block, Option<u32>, Vec<Block>)> = Vec::new();
    let mut now = 0u32;
    for op in ops {
        match op {
            Op::Reserve {
                extra_len,
                ttl,
                excludes,
            } => {
                // Rule 1: expired reservations are absent before the decision.
                live.retain(|(blk, exp, _)| {
                    let gone = exp.is_some_and(|e| e <= now);
                    if gone {
                        give_back(&mut free, pool, *blk);
                    }
                    !gone
                });
                let len = (pool.prefix_len() + extra_len).min(pool.family().width());
                let raw: Vec<Block> = excludes.into_iter().map(|x| exclude(pool, x)).collect();
                let excludes = relevant_excludes(pool, &raw);
                let free_list: Vec<Block> = free.iter().copied().collect();
                let mut blocked: Vec<Block> = live.iter().map(|l| l.0).collect();
                blocked.extend(&excludes);
                let expected = reference(pool, &blocked, len);
                match allocate(&free_list, &excludes, len) {
                    Ok(grant) => {
                        assert_eq!(Ok(grant.block), expected);
                        take(&mut free, grant);
                        live.push((grant.block, ttl.map(|t| now + u32::from(t)), excludes));
                    }
                    Err(Exhausted { largest_free }) => assert_eq!(Err(largest_free), expected),
                }
            }
            Op::Release(i) if !live.is_empty() => {
                let (blk, _, _) = live.remove(i % live.len());
                give_back(&mut free, pool, blk);
            }
            Op::Release(_) => {}
            Op::Advance(by) => now += u32::from(by),
        }
        check(pool, &free, &live);
    }
}

fn check(pool: Block, free: &BTreeSet<Block>, live: &[(Block, Option<u32>, Vec<Block>)]) {
    for (i, (blk, _, excludes)) in live.iter().enumerate() {
        assert!(pool.contains(*blk), "{blk} outside {pool}");
        assert_eq!(
            Some(*blk),
            Block::new(blk.family(), blk.start(), blk.prefix_len())
        );
        assert!(!excludes.iter().any(|x| x.overlaps(*blk)), "{blk} excluded");
        for (other, _, _) in &live[i + 1..] {
            assert!(!blk.overlaps(*other), "{blk} overlaps {other}");
        }
    }
    let taken: Vec<Block> = live.iter().map(|l| l.0).collect();
    let canonical: BTreeSet<Block> = free_space(pool, &taken).into_iter().collect();
    assert_eq!(
        free, &canonical,
        "the buddy free list is the maximal free blocks"
    );
    let sum = free
        .iter()
        .chain(taken.iter())
        .fold(AddressCount::default(), |acc, x| acc + x.size());
    assert_eq!(
        sum,
        pool.size(),
        "free and taken addresses add up to the pool"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn ipv4_sequences_match_the_reference(ops in proptest::collection::vec(op(), 1..40)) {
        run(b("10.0.0.0/24"), ops);
    }

    #[test]
    fn ipv6_sequences_match_the_reference(ops in proptest::collection::vec(op(), 1..40)) {
        run(b("2001:db8::ff00/120"), ops);
    }
}

#[test]
fn one_size_is_handed_out_in_address_order() {
    let pool = b("192.168.0.0/16");
    let mut free = BTreeSet::from([pool]);
    for i in 0..256u32 {
        let list: Vec<Block> = free.iter().copied().collect();
        let grant = allocate(&list, &[], 24).unwrap();
        assert_eq!(grant.block.to_string(), format!("192.168.{i}.0/24"));
        take(&mut free, grant);
    }
    assert!(free.is_empty());
    assert_eq!(
        allocate(&[], &[], 24),
        Err(Exhausted { largest_free: None })
    );
}

#[test]
fn best_fit_takes_the_smallest_free_block_that_holds_the_request() {
    // Free: a /25 at .0 and a /26 at .192. A /26 comes from the /26.
    let free = [b("10.0.0.0/25"), b("10.0.0.192/26")];
    assert_eq!(allocate(&free, &[], 26).unwrap().block, b("10.0.0.192/26"));
    assert_eq!(allocate(&free, &[], 25).unwrap().block, b("10.0.0.0/25"));
    let exhausted = allocate(&free, &[], 24).unwrap_err();
    assert_eq!(exhausted.largest_free, Some(b("10.0.0.0/25")));
}

#[test]
fn excludes_cut_into_free_blocks() {
    let free = [b("10.0.0.0/24")];
    let excludes = [b("10.0.0.0/26"), b("172.17.0.0/16")];
    let grant = allocate(&free, &relevant_excludes(b("10.0.0.0/24"), &excludes), 26).unwrap();
    assert_eq!(grant.block, b("10.0.0.64/26"));
    assert_eq!(grant.from, b("10.0.0.0/24"));
    // A host network written with its address is still the network.
    assert!(relevant_excludes(b("10.0.0.0/24"), &[b("::/0")]).is_empty());
}

#[test]
fn a_64_comes_out_of_a_32() {
    let pool = b("2001:db8::/32");
    let grant = allocate(&[pool], &[], 64).unwrap();
    assert_eq!(grant.block, b("2001:db8::/64"));
    let rest = carve(pool, grant.block);
    assert_eq!(rest.len(), 32);
    assert_eq!(rest[0], b("2001:db8:8000::/33"));
    let sum = rest
        .iter()
        .fold(grant.block.size(), |acc, x| acc + x.size());
    assert_eq!(sum, pool.size());
}

#[test]
fn a_127_comes_out_of_a_120() {
    let pool = b("2001:db8::100/120");
    let grant = allocate(&[pool], &[], 127).unwrap();
    assert_eq!(grant.block, b("2001:db8::100/127"));
    assert_eq!(carve(pool, grant.block).len(), 7);
}

#[test]
fn the_last_block_of_the_top_8_of_all_ipv6() {
    let pool = b("::/0");
    let last = b("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127");
    assert!(b("ff00::/8").contains(last));
    check_want(pool, Want::Subnet(last)).unwrap();
    let rest = carve(pool, last);
    assert_eq!(rest.len(), 127);
    let mut free: BTreeSet<Block> = rest.into_iter().collect();
    assert_eq!(
        free_space(pool, &[last]),
        free.iter().copied().collect::<Vec<_>>()
    );
    give_back(&mut free, pool, last);
    assert_eq!(free, BTreeSet::from([pool]));
    assert_eq!(last.last(), u128::MAX);
}

#[test]
fn a_whole_family_is_a_pool() {
    let pool = b("0.0.0.0/0");
    let grant = allocate(&[pool], &[], 32).unwrap();
    assert_eq!(grant.block, b("0.0.0.0/32"));
    assert_eq!(carve(pool, grant.block).len(), 32);
    assert_eq!(pool.size().to_string(), "4294967296");
}

#[test]
fn requests_are_checked_against_their_pool() {
    let pool = b("10.0.0.0/24");
    assert!(check_want(pool, Want::PrefixLen(32)).is_ok());
    assert_eq!(allocate(&[pool], &[], 32).unwrap().block, b("10.0.0.0/32"));
    assert_eq!(
        check_want(pool, Want::PrefixLen(33)).unwrap_err().field,
        "prefix_len"
    );
    assert_eq!(
        check_want(pool, Want::PrefixLen(16)).unwrap_err().field,
        "prefix_len"
    );
    let v6 = Want::Subnet(b("2001:db8::/64"));
    assert!(check_want(pool, v6).unwrap_err().message.contains("IPv6"));
    let outside = Want::Subnet(b("10.0.1.0/24"));
    assert!(
        check_want(pool, outside)
            .unwrap_err()
            .message
            .contains("not inside")
    );
    assert!(check_want(pool, Want::Subnet(pool)).is_ok());
}

#[test]
fn the_next_blocks_use_up_the_best_fit_before_the_next() {
    let free = vec![
        b("10.0.8.0/21"),
        b("10.0.2.0/23"),
        b("10.0.1.0/24"),
        b("10.0.0.0/25"),
    ];
    let next: Vec<String> = next_blocks(free, 24, 5)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        next,
        [
            "10.0.1.0/24",
            "10.0.2.0/24",
            "10.0.3.0/24",
            "10.0.8.0/24",
            "10.0.9.0/24"
        ]
    );
    assert_eq!(next_blocks(vec![b("10.0.0.0/24")], 24, 5).len(), 1);
    assert!(next_blocks(vec![b("10.0.0.0/25")], 24, 5).is_empty());
}
