use super::*;
use crate::domain::LockMode;

fn waiting(holder: &str, since: i64) -> Waiting {
    Waiting {
        holder: holder.into(),
        mode: LockMode::Exclusive,
        max_holders: None,
        permits: std::num::NonZeroU32::MIN,
        keys: 1,
        since: At::from_millis(since),
        until: At::from_millis(since + 1_000),
    }
}

fn enqueue(waiters: &Arc<Waiters>, key: &str) -> Ticket {
    waiters.enqueue(key, waiting("w", 0))
}

#[test]
fn the_first_to_arrive_is_the_head_and_leaving_passes_the_turn() {
    let waiters = Arc::new(Waiters::default());
    let a = enqueue(&waiters, "k");
    let b = enqueue(&waiters, "k");
    assert!(a.is_head());
    assert!(!b.is_head());
    drop(a);
    assert!(b.is_head());
}

#[test]
fn sets_queued_at_once_stand_in_one_order_in_every_queue() {
    let waiters = Arc::new(Waiters::default());
    let keys = ["x".to_owned(), "y".to_owned()];
    let a = waiters.enqueue_all(&keys, waiting("a", 0));
    let single = enqueue(&waiters, "y");
    let b = waiters.enqueue_all(&keys, waiting("b", 0));
    assert!(a.iter().all(Ticket::is_head));
    assert!(!b.iter().any(Ticket::is_head));
    drop(a);
    // b heads x, but waits behind the single waiter that came first on y.
    assert!(b[0].is_head() && !b[1].is_head());
    drop(single);
    assert!(b.iter().all(Ticket::is_head));
}

#[test]
fn a_key_is_forgotten_with_its_last_waiter() {
    let waiters = Arc::new(Waiters::default());
    let tickets: Vec<Ticket> = (0..100)
        .map(|i| enqueue(&waiters, &format!("k{i}")))
        .collect();
    assert_eq!(
        waiters.stats(),
        WaiterStats {
            waiters: 100,
            keys: 100
        }
    );
    drop(tickets);
    assert_eq!(
        waiters.stats(),
        WaiterStats {
            waiters: 0,
            keys: 0
        }
    );
    assert!(!waiters.is_queued("k1"));
}

#[tokio::test]
async fn a_wake_sent_before_the_waiter_listens_is_not_lost() {
    let waiters = Arc::new(Waiters::default());
    let a = enqueue(&waiters, "k");
    waiters.wake("k");
    tokio::time::timeout(std::time::Duration::from_secs(1), a.woken())
        .await
        .expect("the earlier wake is kept");
}

#[test]
fn a_queue_lists_its_waiters_in_order_and_keys_count_them() {
    let waiters = Arc::new(Waiters::default());
    let _a = waiters.enqueue("lb/1", waiting("a", 5));
    let _b = waiters.enqueue("lb/1", waiting("b", 7));
    let _c = waiters.enqueue("db/1", waiting("c", 9));
    let queue: Vec<String> = waiters
        .queue("lb/1")
        .iter()
        .map(|w| w.holder.clone())
        .collect();
    assert_eq!(queue, ["a", "b"]);
    let keys = waiters.keys(|k| k.starts_with("lb/"));
    assert_eq!(
        keys,
        [WaitingKey {
            key: "lb/1".into(),
            waiters: 2,
            since: At::from_millis(5)
        }]
    );
}

#[test]
fn a_waiter_that_comes_and_goes_between_publications_is_never_published() {
    let waiters = Arc::new(Waiters::default());
    let before = enqueue(&waiters, "k");
    waiters.note_changes();
    drop(enqueue(&waiters, "k"));
    let stays = enqueue(&waiters, "k");
    drop(before);
    let changes = waiters.take_changes();
    assert_eq!(
        changes.joined.keys().copied().collect::<Vec<_>>(),
        [stays.id]
    );
    assert_eq!(
        changes.left.iter().copied().collect::<Vec<_>>(),
        [before_id()]
    );
    assert!(waiters.take_changes().is_empty());
    assert_eq!(waiters.everyone().joined.len(), 1);
}

/// The first ticket drawn by a fresh registry.
fn before_id() -> u64 {
    0
}
