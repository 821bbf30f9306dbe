use super::*;
use crate::domain::subnet::Child;
use crate::domain::subnet::ReservationState::{Allocated, Reserved};

fn block(text: &str) -> Block {
    Block::parse(text).unwrap()
}

fn at(pool: &str, len: u32) -> (Block, Resolution) {
    let pool = block(pool);
    (pool, Resolution::parse(pool, Some(len)).unwrap())
}

fn shown(runs: &[Run]) -> Vec<String> {
    runs.iter()
        .map(|r| {
            format!(
                "{} x{} {:?} {}/{}",
                r.first, r.count, r.cell, r.reserved, r.allocated
            )
        })
        .collect()
}

#[test]
fn an_empty_pool_is_one_free_run() {
    let (pool, r) = at("10.0.0.0/8", 24);
    assert_eq!(shown(&map(pool, r, &[])), ["10.0.0.0/24 x65536 Free 0/0"]);
}

#[test]
fn whole_blocks_runs_and_partly_used_blocks_are_told_apart() {
    let (pool, r) = at("10.0.0.0/16", 24);
    let used = [
        (block("10.0.0.0/23"), Allocated),
        (block("10.0.2.0/24"), Allocated),
        (block("10.0.3.0/25"), Reserved),
        (block("10.0.5.0/26"), Reserved),
        (block("10.0.5.64/26"), Allocated),
        (block("10.0.6.0/25"), Reserved),
        (block("10.0.6.128/25"), Reserved),
        (block("10.0.7.0/24"), Reserved),
    ];
    assert_eq!(
        shown(&map(pool, r, &used)),
        [
            "10.0.0.0/24 x3 Allocated 0/256",
            "10.0.3.0/24 x1 Mixed 128/0",
            "10.0.4.0/24 x1 Free 0/0",
            "10.0.5.0/24 x1 Mixed 64/64",
            // Two halves reserved fill their block: it is reserved, and one
            // run with the next.
            "10.0.6.0/24 x2 Reserved 256/0",
            "10.0.8.0/24 x248 Free 0/0",
        ]
    );
}

#[test]
fn a_map_has_at_most_two_runs_per_reservation_and_one_more() {
    let (pool, r) = at("10.0.0.0/8", 24);
    // Every other /24 of the /8, each with a /30 in use: 32,768 blocks used.
    let used: Vec<(Block, ReservationState)> = (0..32_768u128)
        .map(|i| {
            (
                Block::new(pool.family(), pool.start() + (i << 9), 30).unwrap(),
                Reserved,
            )
        })
        .collect();
    let runs = map(pool, r, &used);
    assert_eq!(runs.len(), 65_536);
    assert!(runs.len() <= 2 * used.len() + 1);
    let coarse = map(pool, Resolution::parse(pool, Some(16)).unwrap(), &used);
    assert_eq!(shown(&coarse), ["10.0.0.0/16 x256 Mixed 512/0"]);
}

#[test]
fn an_ipv6_pool_maps_without_one_element_per_subnet() {
    let (pool, r) = at("2001:db8::/32", 64);
    let used = [(block("2001:db8:0:1::/64"), Allocated)];
    assert_eq!(
        shown(&map(pool, r, &used)),
        [
            "2001:db8::/64 x1 Free 0/0",
            "2001:db8:0:1::/64 x1 Allocated 0/18446744073709551616",
            "2001:db8:0:2::/64 x4294967294 Free 0/0",
        ]
    );
}

#[test]
fn a_resolution_is_within_the_pool_and_its_family() {
    let pool = block("10.0.0.0/16");
    assert_eq!(Resolution::parse(pool, None).unwrap().get(), 24);
    assert_eq!(
        Resolution::parse(block("10.0.0.0/28"), None).unwrap().get(),
        32
    );
    for bad in [15, 33, 300] {
        let e = Resolution::parse(pool, Some(bad)).unwrap_err();
        assert_eq!(e.field, "prefix_len");
    }
    let v6 = block("2001:db8::/32");
    assert!(Resolution::parse(v6, Some(96)).is_ok());
    assert!(Resolution::parse(v6, Some(97)).is_err());
}

#[test]
fn a_child_is_drawn_as_its_own_run_and_counts_as_allocated() {
    let (pool, r) = at("10.0.0.0/16", 18);
    let children = [
        Child {
            name: "eu".into(),
            cidr: block("10.0.0.0/18"),
        },
        Child {
            name: "us".into(),
            cidr: block("10.0.64.0/18"),
        },
        Child {
            name: "lab".into(),
            cidr: block("10.0.128.0/25"),
        },
    ];
    let used = occupants(&[(block("10.0.128.128/25"), Reserved)], &children);
    let runs = map_occupied(pool, r, &used);
    assert_eq!(
        shown(&runs),
        [
            "10.0.0.0/18 x1 Child 0/16384",
            "10.0.64.0/18 x1 Child 0/16384",
            "10.0.128.0/18 x1 Mixed 128/128",
            "10.0.192.0/18 x1 Free 0/0",
        ]
    );
    let names: Vec<_> = runs.iter().map(|r| r.child.as_deref()).collect();
    assert_eq!(names, [Some("eu"), Some("us"), None, None]);
}
