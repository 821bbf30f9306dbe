//! The rule of `lock::decide`: when leases on one key coexist, counted
//! in permits of a capacity.

use super::*;

fn row(mode: LockMode, max_holders: Option<u32>, expires_at: At, delay: Ms) -> LockLease {
    LockLease {
        key: "k".into(),
        lease: Lease {
            holder: "h".into(),
            token: "t".into(),
            fencing_token: FencingToken::new(1),
            acquired_at: At::EPOCH,
            expires_at: Some(expires_at),
            ttl_ms: Ms::new(1_000),
            metadata: None,
            ends_by: None,
        },
        mode,
        max_holders: max_holders.and_then(NonZeroU32::new),
        permits: NonZeroU32::MIN,
        lock_delay_ms: delay,
        idempotency_key: None,
        session: None,
        owner: None,
    }
}

const EXCLUSIVE: Claim = Claim {
    mode: LockMode::Exclusive,
    max_holders: None,
    permits: NonZeroU32::MIN,
};
const SHARED: Claim = Claim {
    mode: LockMode::Shared,
    max_holders: None,
    permits: NonZeroU32::MIN,
};

#[test]
fn a_free_key_is_granted() {
    assert_eq!(decide(EXCLUSIVE, None, &[], At::EPOCH), Ok(()));
}

#[test]
fn a_live_exclusive_lease_refuses_another_and_says_when_it_expires() {
    let held = [row(
        LockMode::Exclusive,
        None,
        At::from_millis(5_000),
        Ms::ZERO,
    )];
    match decide(EXCLUSIVE, None, &held, At::from_millis(1_000)) {
        Err(Refusal::Held {
            holders,
            available_at,
        }) => {
            assert_eq!(holders.len(), 1);
            assert_eq!(available_at, At::from_millis(5_000));
        }
        other => panic!("expected Held, got {other:?}"),
    }
}

#[test]
fn an_expired_lease_is_treated_as_absent() {
    let expired = [row(
        LockMode::Exclusive,
        None,
        At::from_millis(1_000),
        Ms::ZERO,
    )];
    assert_eq!(
        decide(EXCLUSIVE, None, &expired, At::from_millis(1_000)),
        Ok(())
    );
}

#[test]
fn a_semaphore_admits_up_to_its_size() {
    let three = Claim {
        mode: LockMode::Exclusive,
        max_holders: NonZeroU32::new(3),
        permits: NonZeroU32::MIN,
    };
    let mut rows = vec![];
    for _ in 0..3 {
        assert_eq!(decide(three, None, &rows, At::EPOCH), Ok(()));
        rows.push(row(
            LockMode::Exclusive,
            Some(3),
            At::from_millis(9_000),
            Ms::ZERO,
        ));
    }
    assert!(matches!(
        decide(three, None, &rows, At::EPOCH),
        Err(Refusal::Held { .. })
    ));
}

#[test]
fn every_acquirer_must_name_the_same_limit() {
    let rows = [row(
        LockMode::Exclusive,
        Some(3),
        At::from_millis(9_000),
        Ms::ZERO,
    )];
    let four = Claim {
        mode: LockMode::Exclusive,
        max_holders: NonZeroU32::new(4),
        permits: NonZeroU32::MIN,
    };
    assert_eq!(
        decide(four, None, &rows, At::EPOCH),
        Err(Refusal::LimitMismatch {
            current: NonZeroU32::new(3),
            clears_at: At::from_millis(9_000)
        })
    );
    assert!(matches!(
        decide(EXCLUSIVE, None, &rows, At::EPOCH),
        Err(Refusal::LimitMismatch { .. })
    ));
}

#[test]
fn shared_leases_coexist_but_not_with_an_exclusive_one() {
    let shared = [row(
        LockMode::Shared,
        None,
        At::from_millis(9_000),
        Ms::ZERO,
    )];
    assert_eq!(decide(SHARED, None, &shared, At::EPOCH), Ok(()));
    assert!(matches!(
        decide(EXCLUSIVE, None, &shared, At::EPOCH),
        Err(Refusal::Held { .. })
    ));
    let exclusive = [row(
        LockMode::Exclusive,
        None,
        At::from_millis(9_000),
        Ms::ZERO,
    )];
    assert!(matches!(
        decide(SHARED, None, &exclusive, At::EPOCH),
        Err(Refusal::Held { .. })
    ));
}

#[test]
fn an_expired_lease_with_a_lock_delay_keeps_the_key_until_the_delay_ends() {
    let rows = [row(
        LockMode::Exclusive,
        None,
        At::from_millis(1_000),
        Ms::new(500),
    )];
    assert_eq!(
        decide(EXCLUSIVE, None, &rows, At::from_millis(1_200)),
        Err(Refusal::Delayed {
            until: At::from_millis(1_500)
        })
    );
    assert_eq!(
        decide(EXCLUSIVE, None, &rows, At::from_millis(1_500)),
        Ok(())
    );
}

#[test]
fn prefix_bounds_cover_exactly_the_keys_with_that_prefix() {
    assert_eq!(prefix_upper_bound("lb/"), Some("lb0".to_owned()));
    assert_eq!(prefix_upper_bound(""), None);
    let bound = prefix_upper_bound("a\u{D7FF}").unwrap();
    assert_eq!(bound, "a\u{E000}");
    assert_eq!(prefix_upper_bound("b\u{10FFFF}"), Some("c".to_owned()));
}

#[test]
fn cursors_round_trip_and_garbage_is_refused() {
    let c = ListCursor {
        key: "lb/a:b".into(),
        fencing_token: FencingToken::new(42),
    };
    assert_eq!(ListCursor::decode(&c.encode()), Ok(c));
    assert!(ListCursor::decode("zz").is_err());
    assert!(ListCursor::decode(&hex::encode("nocolon")).is_err());
}

fn taking(permits: u32, expires_at: At) -> LockLease {
    let mut lease = row(LockMode::Exclusive, None, expires_at, Ms::ZERO);
    lease.permits = NonZeroU32::new(permits).unwrap();
    lease
}

fn asking(permits: u32, max_holders: Option<u32>) -> Claim {
    Claim {
        mode: LockMode::Exclusive,
        max_holders: max_holders.and_then(NonZeroU32::new),
        permits: NonZeroU32::new(permits).unwrap(),
    }
}

const FIVE: Option<NonZeroU32> = NonZeroU32::new(5);

#[test]
fn a_stored_capacity_admits_what_is_held_plus_what_is_asked_while_it_fits() {
    let held = [taking(3, At::from_millis(9_000))];
    assert_eq!(decide(asking(2, None), FIVE, &held, At::EPOCH), Ok(()));
    assert!(matches!(
        decide(asking(3, None), FIVE, &held, At::EPOCH),
        Err(Refusal::Held { .. })
    ));
    // After a shrink what is held may exceed it: nothing more fits.
    let over = [
        taking(3, At::from_millis(9_000)),
        taking(3, At::from_millis(9_000)),
    ];
    assert!(matches!(
        decide(asking(1, None), FIVE, &over, At::EPOCH),
        Err(Refusal::Held { .. })
    ));
}

#[test]
fn more_permits_than_the_capacity_are_refused_whatever_is_held() {
    let refused = |claim, stored| decide(claim, stored, &[], At::EPOCH);
    assert_eq!(
        refused(asking(6, None), FIVE),
        Err(Refusal::PermitsExceedCapacity {
            permits: NonZeroU32::new(6).unwrap(),
            capacity: NonZeroU32::new(5).unwrap(),
        })
    );
    // Without a stored capacity: max_holders, else one exclusive lease.
    assert!(matches!(
        refused(asking(4, Some(3)), None),
        Err(Refusal::PermitsExceedCapacity { .. })
    ));
    assert!(matches!(
        refused(asking(2, None), None),
        Err(Refusal::PermitsExceedCapacity { .. })
    ));
    assert_eq!(refused(asking(5, None), FIVE), Ok(()));
}

#[test]
fn under_a_stored_capacity_max_holders_is_left_out_or_the_same() {
    assert_eq!(decide(asking(1, Some(5)), FIVE, &[], At::EPOCH), Ok(()));
    assert_eq!(
        decide(asking(1, Some(4)), FIVE, &[], At::EPOCH),
        Err(Refusal::LimitMismatch {
            current: FIVE,
            clears_at: At::EPOCH
        })
    );
    // Leases granted with another max_holders before it was stored count
    // in permits; their number no longer binds.
    let mut named = taking(1, At::from_millis(9_000));
    named.max_holders = NonZeroU32::new(2);
    assert_eq!(decide(asking(1, None), FIVE, &[named], At::EPOCH), Ok(()));
}
