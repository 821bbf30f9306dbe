//! The live sessions, listed (`GET /v1/sessions`): in id order, page by
//! page with a cursor, each as an inspect shows it; a closed or expired
//! session leaves the list; a token lists exactly the sessions it could
//! inspect, however its pages fall among others'.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{ADMIN, READER, send};
use crate::helpers::{TestApp, problem, spawn_app};
use crate::sessions::{close, must_bind, open};
use crate::spec_answers::answered;
use crate::tenants::{A, B, B_ADMIN, open_session, spawn_tenants};

const LIST: &str = "/v1/sessions";

/// One page as `token` reads it (`None`: no token), checked against the spec.
async fn page(app: &TestApp, token: Option<&str>, query: &str) -> Value {
    let path = format!("{LIST}{query}");
    let r = match token {
        Some(token) => send(app, token, "GET", &path, None).await,
        None => app.get(&path).await,
    };
    assert_eq!(r.status(), StatusCode::OK, "{path}");
    answered("get", LIST, r).await
}

/// Every page of the list `token` reads, `limit` at a time: the ids in the
/// order listed. Every page but the last is full.
async fn every_page(app: &TestApp, token: Option<&str>, limit: usize) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let query = match &cursor {
            Some(c) => format!("?limit={limit}&cursor={c}"),
            None => format!("?limit={limit}"),
        };
        let page = page(app, token, &query).await;
        let items = page["items"].as_array().unwrap();
        assert!(page["revision"].as_i64().unwrap() > 0, "{page}");
        ids.extend(items.iter().map(|s| s["id"].as_str().unwrap().to_owned()));
        match page["next_cursor"].as_str() {
            Some(next) => {
                assert_eq!(items.len(), limit, "a page before the last is full");
                cursor = Some(next.to_owned());
            }
            None => return ids,
        }
        assert!(ids.len() <= 1_000, "the cursor never ends");
    }
}

fn id(session: &Value) -> String {
    session["id"].as_str().unwrap().to_owned()
}

async fn sessions_are_listed_in_id_order_page_by_page_as_an_inspect_shows_them() {
    let app = spawn_app().await;
    let mut opened = BTreeSet::new();
    let mut sessions = vec![];
    for _ in 0..5 {
        let s = open(&app, 60_000).await;
        opened.insert(id(&s));
        sessions.push(s);
    }
    must_bind(&app, "lists/a", &sessions[2]).await;
    must_bind(&app, "lists/b", &sessions[2]).await;

    let listed = every_page(&app, None, 2).await;
    assert_eq!(listed.len(), 5, "{listed:?}");
    assert!(listed.windows(2).all(|w| w[0] < w[1]), "{listed:?}");
    assert_eq!(listed.iter().cloned().collect::<BTreeSet<_>>(), opened);

    // Each item is the inspect's answer, never the token.
    let all = page(&app, None, "").await;
    assert!(all["next_cursor"].is_null());
    for item in all["items"].as_array().unwrap() {
        assert!(item.get("token").is_none(), "{item}");
        let shown: Value = app
            .get(&format!("{LIST}/{}", item["id"].as_str().unwrap()))
            .await
            .json()
            .await
            .unwrap();
        for field in [
            "id",
            "holder",
            "acquired_at",
            "expires_at",
            "ttl_ms",
            "metadata",
            "locks",
            "reservations",
            "members",
        ] {
            assert_eq!(item[field], shown[field], "{field} of {item}");
        }
    }
    let bound = &all["items"].as_array().unwrap()
        [listed.iter().position(|i| *i == id(&sessions[2])).unwrap()];
    assert_eq!(
        (&bound["locks"], &bound["reservations"], &bound["members"]),
        (&json!(2), &json!(0), &json!(0))
    );
    // The page's revision is that of its snapshot: the last grant's.
    assert_eq!(all["revision"], last_revision_of(&app, "lists/b").await);
}

/// The revision of `key`'s last event, once the change log's reader has it
/// (on PostgreSQL a moment after the commit).
async fn last_revision_of(app: &TestApp, key: &str) -> Value {
    for _ in 0..250 {
        let log: Value = app
            .get(&format!("/v1/events?since=0&prefix={key}"))
            .await
            .json()
            .await
            .unwrap();
        if let Some(last) = log["items"].as_array().unwrap().last() {
            return last["revision"].clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no event of {key} reached the change log");
}

async fn a_holder_names_its_own_sessions_alone() {
    let app = spawn_app().await;
    for holder in ["node-1", "node-2", "node-1", "node-10"] {
        let r = app
            .post(LIST, json!({"holder": holder, "ttl_ms": 60_000}))
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let named = page(&app, None, "?holder=node-1").await;
    let holders: Vec<&str> = named["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["holder"].as_str().unwrap())
        .collect();
    assert_eq!(holders, ["node-1", "node-1"]);
    let none = page(&app, None, "?holder=nobody").await;
    assert_eq!(none["items"], json!([]));
}

async fn a_closed_or_expired_session_leaves_the_list() {
    let app = spawn_app().await;
    let kept = open(&app, 60_000).await;
    let closed = open(&app, 60_000).await;
    let expiring = open(&app, 200).await;
    assert_ne!(id(&expiring), id(&kept));
    assert_eq!(every_page(&app, None, 10).await.len(), 3);

    assert_eq!(close(&app, &closed).await.status(), StatusCode::NO_CONTENT);
    let listed = every_page(&app, None, 10).await;
    assert!(!listed.contains(&id(&closed)), "{listed:?}");

    // Expired is gone at once, whether the reaper has run or not.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(every_page(&app, None, 10).await, [id(&kept)]);
}

async fn the_list_checks_its_limit_and_cursor_as_the_other_lists_do() {
    let app = spawn_app().await;
    for query in ["?limit=0", "?limit=1001", "?limit=ten", "?limit=-1"] {
        let r = app.get(&format!("{LIST}{query}")).await;
        let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(body["field"], "limit", "{query}: {body}");
        // The lock list answers the same.
        let r = app.get(&format!("/v1/locks{query}")).await;
        let locks = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(locks["field"], body["field"]);
    }
    for cursor in ["zz", "%FF"] {
        let r = app.get(&format!("{LIST}?cursor={cursor}")).await;
        let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(body["field"], "cursor", "{cursor}: {body}");
    }
    let r = app.get(&format!("{LIST}?holder=")).await;
    let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "holder", "{body}");
    let r = app.get(&format!("{LIST}?prefix=a")).await;
    let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "prefix", "{body}");

    // The default page is 100, the most 1000, as for every list.
    for _ in 0..101 {
        open(&app, 60_000).await;
    }
    let first = page(&app, None, "").await;
    assert_eq!(first["items"].as_array().unwrap().len(), 100);
    let next = first["next_cursor"].as_str().unwrap();
    let rest = page(&app, None, &format!("?cursor={next}")).await;
    assert_eq!(rest["items"].as_array().unwrap().len(), 1);
    assert!(rest["next_cursor"].is_null());
    let most = page(&app, None, "?limit=1000").await;
    assert_eq!(most["items"].as_array().unwrap().len(), 101);
}

async fn a_token_lists_exactly_the_sessions_it_may_inspect() {
    let app = spawn_tenants().await;
    let mut theirs: Vec<(&str, Vec<String>)> = vec![(A, vec![]), (B, vec![]), (B_ADMIN, vec![])];
    // Interleaved, so that every page of one token falls among others' ids.
    for _ in 0..4 {
        for (token, ids) in theirs.iter_mut() {
            ids.push(id(&open_session(&app, token).await));
        }
    }
    let mut all: Vec<String> = theirs.iter().flat_map(|(_, ids)| ids.clone()).collect();
    all.sort();
    let own = |token: &str| {
        let mut ids = theirs.iter().find(|(t, _)| *t == token).unwrap().1.clone();
        ids.sort();
        ids
    };
    // One at a time: a page is full until the last, never cut short by
    // sessions the token may not see.
    assert_eq!(every_page(&app, Some(A), 1).await, own(A));
    assert_eq!(every_page(&app, Some(B), 1).await, own(B));
    let mut b_admin = [own(B), own(B_ADMIN)].concat();
    b_admin.sort();
    assert_eq!(every_page(&app, Some(B_ADMIN), 3).await, b_admin);
    assert_eq!(every_page(&app, Some(ADMIN), 5).await, all);
    assert_eq!(
        every_page(&app, Some(READER), 5).await,
        Vec::<String>::new()
    );

    // What each lists, it may inspect; what it does not, it may not.
    for (token, _) in &theirs {
        let listed = every_page(&app, Some(token), 100).await;
        for id in &all {
            let r = send(&app, token, "GET", &format!("{LIST}/{id}"), None).await;
            let expected = if listed.contains(id) {
                StatusCode::OK
            } else {
                StatusCode::NOT_FOUND
            };
            assert_eq!(r.status(), expected, "{token} on {id}");
        }
    }
    // A holder filter never widens what a token sees.
    let named = page(&app, Some(A), "?holder=tenant").await;
    let ids: Vec<String> = named["items"].as_array().unwrap().iter().map(id).collect();
    assert_eq!(ids, own(A));
}

crate::harness::tests! {
    sessions_are_listed_in_id_order_page_by_page_as_an_inspect_shows_them,
    a_holder_names_its_own_sessions_alone,
    a_closed_or_expired_session_leaves_the_list,
    the_list_checks_its_limit_and_cursor_as_the_other_lists_do,
    a_token_lists_exactly_the_sessions_it_may_inspect,
}
