//! The turns at reading history: taken in rotation, never refused once
//! begun, refused only at the bounds of a saturated server.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::*;

fn turns(reads: usize, reads_per_client: usize, queue: usize) -> Arc<HistoryTurns> {
    HistoryTurns::new(TurnBounds {
        reads,
        reads_per_client,
        queue,
        queue_per_client: queue,
    })
}

fn client(name: &str) -> Option<ClientId> {
    Some(ClientId::Token(name.into()))
}

type Told = mpsc::UnboundedSender<&'static str>;

/// Readers that each read `pages` pages, one turn a page, telling `tell`
/// who read each page.
fn readers(
    turns: &Arc<HistoryTurns>,
    names: &[&'static str],
    pages: usize,
    tell: &Told,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    for &name in names {
        let place = turns.place(client(name)).expect("a place");
        let tell = tell.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..pages {
                let _turn = place.turn().await;
                tell.send(name).unwrap();
                tokio::task::yield_now().await;
            }
        }));
    }
    tasks
}

#[tokio::test]
async fn a_client_with_many_readers_takes_turns_with_a_client_with_one() {
    let turns = turns(1, 1, 64);
    // Held while everyone queues, so that the order is the rotation's.
    let holder = turns.place(client("x")).unwrap();
    let held = holder.turn().await;
    let (tell, mut order) = mpsc::unbounded_channel();
    let mut tasks = readers(&turns, &["many"; 8], 2, &tell);
    tasks.extend(readers(&turns, &["one"], 4, &tell));
    while turns.waiting() < 9 {
        tokio::task::yield_now().await;
    }
    drop(held);
    let mut seen = Vec::new();
    while seen.len() < 8 {
        seen.push(order.recv().await.unwrap());
    }
    // The lone reader has a page for every page of the eight together.
    let ones = seen.iter().filter(|w| **w == "one").count();
    assert_eq!(ones, 4, "{seen:?}");
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!((turns.reading(), turns.waiting()), (0, 0));
}

#[tokio::test]
async fn every_reader_of_one_client_progresses_past_its_share_and_none_is_refused() {
    let turns = turns(4, 2, 64);
    let (tell, mut order) = mpsc::unbounded_channel();
    let tasks = readers(&turns, &["c"; 50], 3, &tell);
    let mut pages = 0;
    while pages < 150 {
        order.recv().await.unwrap();
        pages += 1;
        assert!(turns.reading() <= 2, "one client reads within its share");
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(turns.shed(), (0, 0));
    assert_eq!(turns.placed(), 0, "places are given back at the end");
}

#[tokio::test]
async fn a_reader_that_goes_while_waiting_leaves_the_queue_and_a_turn_it_was_given_goes_on() {
    let turns = turns(1, 1, 8);
    let (a, b) = (
        turns.place(client("a")).unwrap(),
        turns.place(client("b")).unwrap(),
    );
    let held = a.turn().await;
    let gone = tokio::time::timeout(Duration::from_millis(20), b.turn()).await;
    assert!(gone.is_err(), "no turn while a holds the only slot");
    assert_eq!(turns.waiting(), 0, "b left the queue as it went");
    drop(held);
    let again = b.turn().await;
    assert_eq!(turns.reading(), 1);
    drop(again);
    assert_eq!(turns.reading(), 0);
}

#[tokio::test]
async fn past_the_queue_or_a_first_turn_that_never_comes_a_reader_is_refused() {
    let turns = HistoryTurns::new(TurnBounds {
        reads: 1,
        reads_per_client: 1,
        queue: 3,
        queue_per_client: 2,
    });
    let a = [
        turns.place(client("a")).unwrap(),
        turns.place(client("a")).unwrap(),
    ];
    assert!(matches!(
        turns.place(client("a")),
        Err(Shed::ClientHistoryReads)
    ));
    let b = turns.place(client("b")).unwrap();
    assert!(matches!(turns.place(client("c")), Err(Shed::HistoryReads)));
    let _held = a[0].turn().await;
    let late = b.first_turn(Duration::from_millis(50)).await;
    assert!(matches!(late, Err(Shed::HistoryReads)));
    assert_eq!(turns.shed(), (2, 1));
    drop(a);
    assert!(
        turns.place(client("c")).is_ok(),
        "places given back are free"
    );
}
