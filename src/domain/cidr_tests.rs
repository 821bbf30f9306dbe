//! Parsing, printing, buddies and exact counts of CIDR blocks.

use super::*;

fn b(text: &str) -> Block {
    Block::parse(text).unwrap()
}

#[test]
fn parses_and_prints_both_families() {
    assert_eq!(b("192.168.0.0/16").to_string(), "192.168.0.0/16");
    assert_eq!(b("2001:db8::/32").to_string(), "2001:db8::/32");
    assert_eq!(b("::/0").to_string(), "::/0");
    assert_eq!(b("10.1.2.3/32").last(), b("10.1.2.3/32").start());
    assert!(Block::parse("10.0.0.0").is_err());
    assert!(Block::parse("10.0.0.0/33").is_err());
    assert!(Block::parse("10.0.0.0/+8").is_err());
    assert!(Block::parse("::/129").is_err());
    assert!(Block::parse("banana/8").is_err());
}

#[test]
fn host_bits_are_refused_with_the_aligned_network() {
    assert_eq!(
        Block::parse("192.168.1.5/24"),
        Err(CidrError::HostBits {
            aligned: b("192.168.1.0/24")
        })
    );
    assert_eq!(
        Block::parse("2001:db8::1/64"),
        Err(CidrError::HostBits {
            aligned: b("2001:db8::/64")
        })
    );
}

#[test]
fn halves_parents_and_buddies_agree() {
    let (lo, hi) = b("10.0.0.0/8").halves().unwrap();
    assert_eq!((lo, hi), (b("10.0.0.0/9"), b("10.128.0.0/9")));
    assert_eq!(lo.buddy(), Some(hi));
    assert_eq!(hi.buddy(), Some(lo));
    assert_eq!(hi.parent(), Some(b("10.0.0.0/8")));
    assert_eq!(b("::/0").parent(), None);
    assert_eq!(b("::/0").buddy(), None);
    let (lo, hi) = b("::/0").halves().unwrap();
    assert_eq!(
        (lo.to_string(), hi.to_string()),
        ("::/1".into(), "8000::/1".into())
    );
    assert_eq!(b("::1/128").halves(), None);
    assert_eq!(b("0.0.0.0/0").last(), u128::from(u32::MAX));
    assert_eq!(b("::/0").last(), u128::MAX);
}

#[test]
fn containment_and_overlap_respect_families() {
    assert!(b("10.0.0.0/8").contains(b("10.3.0.0/16")));
    assert!(!b("10.3.0.0/16").contains(b("10.0.0.0/8")));
    assert!(b("10.3.0.0/16").overlaps(b("10.0.0.0/8")));
    assert!(!b("10.0.0.0/8").overlaps(b("11.0.0.0/8")));
    assert!(!b("0.0.0.0/0").overlaps(b("::/0")));
}

#[test]
fn bytes_round_trip_in_address_order() {
    let a = b("2001:db8::/32");
    assert_eq!(Block::from_bytes(Family::V6, &a.start_bytes(), 32), Some(a));
    assert!(b("10.0.0.0/8").start_bytes() < b("10.1.0.0/16").start_bytes());
}

#[test]
fn counts_are_exact_beyond_u128() {
    assert_eq!(b("10.0.0.0/8").size().to_string(), "16777216");
    assert_eq!(
        b("::/0").size().to_string(),
        "340282366920938463463374607431768211456"
    );
    let half = b("::/1").size();
    assert_eq!(half + half, b("::/0").size());
    assert_eq!(
        AddressCount::default().add_times(b("::/2").size(), 4),
        b("::/0").size()
    );
    assert_eq!(
        AddressCount::from(7)
            .add_times(AddressCount::from(3), 5)
            .to_string(),
        "22"
    );
}
