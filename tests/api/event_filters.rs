//! The store filters a reader's history in SQL exactly as the live fan-out
//! filters its stream: each term of a selection (a key prefix, a pool, a
//! group, the sessions of a token, and their "every"), by its index or
//! through the log in order, neither more nor less, for readers of every
//! scope and filter.

use std::time::Duration;

use serde_json::{Value, json};

use crate::auth::{ADMIN, send};
use crate::event_reads::{acquire, page, settled, spawn, stream};
use crate::helpers::{TestApp, wait_for_gauge};
use crate::tenants::{A, B, B_ADMIN, Q};
use leasehold::domain::Revision;
use leasehold::domain::selection::{Selection, Term};
use leasehold::store::HistoryQuery;

/// Who reads with which filter: every kind of term of a selection.
const READERS: [(&str, &str); 11] = [
    (A, ""),
    (B, ""),
    (B, "?prefix=b/x"),
    (B, "?pool=pb"),
    (B, "?group=b%2Fg"),
    (B, "?prefix=b/&group=b%2Fg&pool=pb"),
    (B_ADMIN, ""),
    (ADMIN, ""),
    (ADMIN, "?prefix=a/"),
    (ADMIN, "?pool=pa&group=a%2Fg"),
    (Q, ""),
];

/// The status of a request of `token`.
async fn status(app: &TestApp, token: &str, method: &str, path: &str, body: Option<Value>) -> u16 {
    send(app, token, method, path, body).await.status().as_u16()
}

/// Changes of every kind, by every tenant: locks, reservations, groups and
/// members, sessions.
async fn churn(app: &TestApp) {
    let cidr = |c: &str| Some(json!({ "cidr": c }));
    assert_eq!(
        status(app, A, "PUT", "/v1/pools/pa", cidr("10.1.0.0/16")).await,
        201
    );
    assert_eq!(
        status(app, B, "PUT", "/v1/pools/pb", cidr("10.2.0.0/16")).await,
        201
    );
    let a_session = crate::tenants::open_session(app, A).await;
    let b_session = crate::tenants::open_session(app, B).await;
    for (token, key) in [
        (A, "a/1"),
        (B, "b/x1"),
        (B, "b/y1"),
        (Q, "q/1"),
        (B, "b/x2"),
    ] {
        acquire(app, token, key).await;
    }
    for (token, pool) in [(A, "pa"), (B, "pb")] {
        let body = Some(json!({"holder": "h", "prefix_len": 24}));
        let path = format!("/v1/pools/{pool}/reservations");
        assert_eq!(status(app, token, "POST", &path, body).await, 201);
    }
    for (token, group, s) in [(A, "a%2Fg", &a_session), (B, "b%2Fg", &b_session)] {
        assert_eq!(
            status(app, token, "PUT", &format!("/v1/groups/{group}"), None).await,
            201
        );
        let claim = Some(json!({"session": {"id": s["id"], "token": s["token"]}}));
        let path = format!("/v1/groups/{group}/members/m");
        assert_eq!(status(app, token, "PUT", &path, claim).await, 201);
    }
    let path = format!("/v1/sessions/{}/close", b_session["id"].as_str().unwrap());
    let body = Some(json!({"token": b_session["token"]}));
    assert_eq!(status(app, B, "POST", &path, body).await, 204);
    assert_eq!(status(app, Q, "PUT", "/v1/groups/q%2Fg", None).await, 201);
}

/// Every page of history after `since`, three events at a time.
async fn history(app: &TestApp, token: &str, query: &str, since: i64, end: i64) -> Vec<Value> {
    let (mut since, mut events) = (since, Vec::new());
    let join = if query.is_empty() { "?" } else { "&" };
    while since < end {
        let body = page(app, token, &format!("{query}{join}since={since}&limit=3")).await;
        events.extend(body["items"].as_array().unwrap().iter().cloned());
        since = body["next_revision"].as_i64().unwrap();
    }
    events
}

/// What the store selects in SQL, page by page, is what the live fan-out
/// sends each reader, event for event.
async fn history_selects_what_the_stream_sends(scan: u32) {
    let app = spawn(scan).await;
    let mut streams = Vec::new();
    for (token, query) in READERS {
        streams.push(stream(&app, token, query).await);
    }
    wait_for_gauge(&app, "leasehold_watchers", READERS.len() as u64).await;
    let start = settled(&app).await;
    churn(&app).await;
    let end = settled(&app).await;
    for ((token, query), stream) in READERS.iter().zip(&mut streams) {
        let read = history(&app, token, query, start, end).await;
        let mut sent = Vec::new();
        for _ in 0..read.len() {
            sent.push(stream.next().await);
        }
        assert!(
            stream
                .next_within(Duration::from_millis(200))
                .await
                .is_none(),
            "{query}"
        );
        assert_eq!(read, sent, "{token} {query}");
        assert!(!read.is_empty(), "{token} {query}");
    }
}

/// Every event the store answers to `selection` after `since`, page by
/// page, as the store itself filters them.
async fn stored(
    app: &TestApp,
    selection: &Selection,
    since: Revision,
    end: Revision,
    scan: u32,
) -> Vec<Revision> {
    let (mut after, mut revisions) = (since, Vec::new());
    while after < end {
        let query = HistoryQuery {
            after,
            through: end,
            limit: 4,
            scan,
            selection: selection.clone(),
        };
        let page = app.leases.store.log().history(query).await.unwrap();
        // It goes on, however little it found (by an index, a page may
        // examine up to the end at once).
        assert!(page.examined > after, "{selection:?}: stuck at {after}");
        revisions.extend(page.events.iter().map(|e| e.revision));
        after = page.examined;
    }
    revisions
}

/// The store's filter is exact on its own: each term selects in SQL what
/// it selects in Rust, neither more nor less, by its index and in order.
async fn the_store_selects_each_term_exactly() {
    let app = spawn(50).await;
    let start = settled(&app).await;
    churn(&app).await;
    let end = settled(&app).await;
    let all = app
        .leases
        .store
        .log()
        .history(HistoryQuery {
            after: Revision::new(start),
            through: Revision::new(end),
            limit: 1_000,
            scan: 10_000,
            selection: Selection::Everything,
        })
        .await
        .unwrap()
        .events;
    assert_eq!(all.len() as i64, end - start, "every revision is an event");
    let terms = [
        Term::KeysUnder("b/".into()),
        Term::KeysUnder("b/x".into()),
        Term::KeysUnder(String::new()),
        Term::Pool("pb".into()),
        Term::EveryPool,
        Term::Group("b/g".into()),
        Term::GroupsUnder("a/".into()),
        Term::SessionsOf("b".into()),
        Term::EverySession,
    ];
    let mut selections: Vec<Selection> = terms
        .iter()
        .map(|t| Selection::of(vec![t.clone()]))
        .collect();
    selections.push(Selection::of(terms[..2].to_vec()));
    selections.push(Selection::of(vec![
        terms[3].clone(),
        terms[5].clone(),
        terms[7].clone(),
    ]));
    for selection in &selections {
        let expected: Vec<Revision> = all
            .iter()
            .filter(|e| selection.matches(e))
            .map(|e| e.revision)
            .collect();
        assert!(!expected.is_empty(), "{selection:?}");
        for scan in [3, 50, 10_000] {
            let (since, through) = (Revision::new(start), Revision::new(end));
            let got = stored(&app, selection, since, through, scan).await;
            assert_eq!(got, expected, "{selection:?}, scan {scan}");
        }
    }
}

async fn history_filters_as_the_fanout_with_a_small_scan() {
    history_selects_what_the_stream_sends(7).await;
}

async fn history_filters_as_the_fanout_by_the_indexes() {
    history_selects_what_the_stream_sends(10_000).await;
}

crate::harness::tests! {
    the_store_selects_each_term_exactly,
    history_filters_as_the_fanout_with_a_small_scan,
    history_filters_as_the_fanout_by_the_indexes,
}
