//! A pool's rules: a child has its parent's and may only narrow them; a
//! reserve that breaks one is refused naming it; a default prefix length
//! lets a reserve name none.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{problem, spawn_app};
use crate::nested_pools::{pool_names, put_pool};

async fn a_child_narrows_its_parents_rules_and_answers_the_effective_ones() {
    let app = spawn_app().await;
    let rules = json!({"min_prefix_len": 20, "max_prefix_len": 28, "default_prefix_len": 24,
        "disallowed": ["10.0.1.0/24"], "required_labels": ["env"]});
    let r = put_pool(&app, "plan", json!({"cidr": "10.0.0.0/16", "rules": rules})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let own =
        json!({"max_prefix_len": 26, "allowed": ["10.0.0.0/18"], "required_labels": ["team"]});
    let r = put_pool(
        &app,
        "eu",
        json!({"cidr": "10.0.0.0/17", "parent": "plan", "rules": own}),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let eu: Value = app.get("/v1/pools/eu").await.json().await.unwrap();
    assert_eq!(
        eu["rules"],
        json!({"min_prefix_len": 20, "max_prefix_len": 26, "default_prefix_len": 24,
            "allowed": ["10.0.0.0/18"], "disallowed": ["10.0.1.0/24"],
            "required_labels": ["env", "team"]})
    );
    let top: Value = app.get("/v1/pools/plan").await.json().await.unwrap();
    assert_eq!(top["rules"]["max_prefix_len"], 28);
    // The same definition again is unchanged.
    let again = put_pool(
        &app,
        "eu",
        json!({"cidr": "10.0.0.0/17", "parent": "plan", "rules": own}),
    )
    .await;
    assert_eq!(again.status(), StatusCode::OK);
}

async fn wider_or_inconsistent_rules_are_refused_and_nothing_is_created() {
    let app = spawn_app().await;
    let rules = json!({"min_prefix_len": 20, "max_prefix_len": 26, "allowed": ["10.0.0.0/17"]});
    let r = put_pool(&app, "plan", json!({"cidr": "10.0.0.0/16", "rules": rules})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let before = pool_names(&app).await;
    let wider = [
        (json!({"min_prefix_len": 18}), "min_prefix_len"),
        (json!({"max_prefix_len": 28}), "max_prefix_len"),
        (json!({"default_prefix_len": 28}), "default_prefix_len"),
        (json!({"allowed": ["10.0.128.0/18"]}), "allowed"),
    ];
    for (own, rule) in wider {
        let body = json!({"cidr": "10.0.0.0/18", "parent": "plan", "rules": own});
        let answer = problem(
            put_pool(&app, "eu", body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "rule-conflict",
        )
        .await;
        assert_eq!(answer["rule"], rule);
    }
    let inconsistent = [
        (
            json!({"min_prefix_len": 26, "max_prefix_len": 24}),
            "rules.min_prefix_len",
        ),
        (
            json!({"min_prefix_len": 20, "default_prefix_len": 18}),
            "rules.default_prefix_len",
        ),
        (json!({"max_prefix_len": 40}), "rules.max_prefix_len"),
        (json!({"allowed": ["10.0.0.5/24"]}), "rules.allowed[0]"),
        (json!({"disallowed": ["fd00::/64"]}), "rules.disallowed[0]"),
    ];
    for (own, field) in inconsistent {
        let body = json!({"cidr": "10.0.0.0/18", "parent": "plan", "rules": own});
        let answer = problem(
            put_pool(&app, "eu", body).await,
            StatusCode::BAD_REQUEST,
            "invalid-request",
        )
        .await;
        assert_eq!(answer["field"], field);
    }
    assert_eq!(pool_names(&app).await, before);
}

async fn a_reserve_that_breaks_a_rule_is_refused_naming_it() {
    let app = spawn_app().await;
    let rules = json!({"min_prefix_len": 20, "max_prefix_len": 26, "default_prefix_len": 24,
        "allowed": ["10.0.0.0/17"], "disallowed": ["10.0.0.0/24"], "required_labels": ["env"]});
    let r = put_pool(&app, "plan", json!({"cidr": "10.0.0.0/16", "rules": rules})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let env = json!({"env": "prod"});
    let broken = [
        (
            json!({"holder": "h", "prefix_len": 18, "labels": env}),
            "min_prefix_len",
        ),
        (
            json!({"holder": "h", "prefix_len": 28, "labels": env}),
            "max_prefix_len",
        ),
        (
            json!({"holder": "h", "subnet": "10.0.200.0/24", "labels": env}),
            "allowed",
        ),
        (
            json!({"holder": "h", "subnet": "10.0.0.0/24", "labels": env}),
            "disallowed",
        ),
        (json!({"holder": "h", "prefix_len": 24}), "required_labels"),
    ];
    for (body, rule) in broken {
        let r = app.post("/v1/pools/plan/reservations", body.clone()).await;
        let answer = problem(r, StatusCode::UNPROCESSABLE_ENTITY, "rule-violated").await;
        assert_eq!(answer["rule"], rule, "{body}");
    }
    // No prefix length: the default, outside the disallowed block.
    let r = app
        .post(
            "/v1/pools/plan/reservations",
            json!({"holder": "h", "labels": env, "count": 2}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let granted: Value = r.json().await.unwrap();
    let subnets: Vec<&str> = granted["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["subnet"].as_str().unwrap())
        .collect();
    assert_eq!(subnets, ["10.0.1.0/24", "10.0.2.0/24"]);
    // Without a default, a reserve names a length or a subnet.
    let r = put_pool(&app, "bare", json!({"cidr": "10.1.0.0/16"})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = app
        .post("/v1/pools/bare/reservations", json!({"holder": "h"}))
        .await;
    let answer = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(answer["field"], "prefix_len");
}

crate::harness::tests! {
    a_child_narrows_its_parents_rules_and_answers_the_effective_ones,
    wider_or_inconsistent_rules_are_refused_and_nothing_is_created,
    a_reserve_that_breaks_a_rule_is_refused_naming_it,
}
