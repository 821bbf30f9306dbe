use super::*;
use crate::domain::session::SessionAccess;

fn grant(prefixes: &[&str], pools: &[&str], access: Access, admin: bool) -> ApiToken {
    ApiToken {
        name: "t".into(),
        sha256: sha256("secret"),
        lock_prefixes: prefixes.iter().map(|p| (*p).to_owned()).collect(),
        pools: pools.iter().map(|p| (*p).to_owned()).collect(),
        access,
        admin,
        metrics: false,
        max_live_leases: None,
        max_live_sessions: None,
        max_groups: None,
        max_writes_per_second: None,
        sessions: SessionAccess::Owners(Vec::new()),
    }
}

fn named(name: &str, mut g: ApiToken) -> ApiToken {
    g.name = name.into();
    g
}

#[test]
fn an_admin_sees_the_sessions_of_the_tokens_it_covers_and_no_others() {
    let tokens = Tokens::new(vec![
        named("root", grant(&[""], &["*"], Access::ReadWrite, true)),
        named("b-admin", grant(&["b/"], &["pb"], Access::ReadWrite, true)),
        named(
            "b-app",
            grant(&["b/app/"], &["pb"], Access::ReadWrite, false),
        ),
        named("b-wide", grant(&["b/"], &["*"], Access::ReadWrite, false)),
        named("a", grant(&["a/"], &["pa"], Access::ReadWrite, false)),
    ]);
    let access = |name: &str| {
        tokens
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .sessions
            .clone()
    };
    assert_eq!(access("root"), SessionAccess::Any);
    assert_eq!(
        access("b-admin"),
        SessionAccess::Owners(vec!["b-admin".into(), "b-app".into()]),
        "b-wide reaches every pool, beyond b-admin's scope"
    );
    assert_eq!(access("b-app"), SessionAccess::Owners(vec!["b-app".into()]));
    assert_eq!(access("a"), SessionAccess::Owners(vec!["a".into()]));
}

#[test]
fn a_token_is_found_by_its_hash_and_no_other() {
    let tokens = Tokens::new(vec![grant(&[""], &[], Access::ReadWrite, false)]);
    assert_eq!(
        tokens.find("secret").map(|g| g.name.clone()).as_deref(),
        Some("t")
    );
    assert!(tokens.find("secret ").is_none());
    assert!(tokens.find("").is_none());
}

#[test]
fn keys_and_pools_are_checked_against_the_scope() {
    let g = grant(&["ci/", "lb/"], &["nets"], Access::ReadWrite, false);
    assert_eq!(g.may_lock("ci/job-1", Need::Write), Ok(()));
    assert_eq!(g.may_lock("db/x", Need::Read), Err(Denial::OutOfScope));
    assert_eq!(g.may_lock("ci/job-1", Need::Admin), Err(Denial::NotAdmin));
    assert_eq!(g.may_pool("nets", Need::Write), Ok(()));
    assert_eq!(g.may_pool("nets2", Need::Read), Err(Denial::OutOfScope));
    let ro = grant(&[""], &["*"], Access::ReadOnly, false);
    assert_eq!(ro.may_lock("any", Need::Read), Ok(()));
    assert_eq!(ro.may_lock("any", Need::Write), Err(Denial::ReadOnly));
    assert_eq!(ro.may_pool("any-pool", Need::Read), Ok(()));
    let admin = grant(&["ci/"], &[], Access::ReadWrite, true);
    assert_eq!(admin.may_lock("ci/x", Need::Admin), Ok(()));
    assert_eq!(admin.may_lock("lb/x", Need::Admin), Err(Denial::OutOfScope));
}

#[test]
fn a_listing_covers_exactly_the_visible_prefixes_in_key_order() {
    let g = grant(&["lb/", "ci/", "ci/a/", "db"], &[], Access::ReadOnly, false);
    assert_eq!(g.visible_prefixes(""), ["ci/", "db", "lb/"]);
    assert_eq!(g.visible_prefixes("ci/a/b"), ["ci/a/b"]);
    assert_eq!(g.visible_prefixes("d"), ["db"]);
    assert!(g.visible_prefixes("x").is_empty());
    let all = grant(&[""], &[], Access::ReadOnly, false);
    assert_eq!(all.visible_prefixes("q/"), ["q/"]);
}

#[test]
fn the_auth_file_is_read_and_checked() {
    let hash = hash_hex("secret");
    let text = format!(
        r#"{{"tokens": [{{"name": "ci", "sha256": "{hash}", "lock_prefixes": ["ci/"],
            "pools": ["*"], "access": "read-write", "max_live_leases": 3}}]}}"#
    );
    let tokens = parse(&text).unwrap();
    let g = tokens.find("secret").unwrap();
    assert_eq!(g.max_live_leases, Some(3));
    assert_eq!(
        g.group_quota(),
        Some(3),
        "groups default to max_live_leases"
    );
    assert!(!g.admin);
    let text = format!(
        r#"{{"tokens": [{{"name": "ci", "sha256": "{hash}", "access": "read-write",
            "max_live_leases": 3, "max_groups": 7}}]}}"#
    );
    assert_eq!(
        parse(&text).unwrap().find("secret").unwrap().group_quota(),
        Some(7)
    );
    let text =
        format!(r#"{{"tokens": [{{"name": "ci", "sha256": "{hash}", "access": "read-write"}}]}}"#);
    assert_eq!(
        parse(&text).unwrap().find("secret").unwrap().group_quota(),
        None
    );

    let bad = |text: String, needle: &str| {
        let e = parse(&text).unwrap_err();
        assert!(e.contains(needle), "{e:?} should mention {needle:?}");
    };
    bad(
        r#"{"tokens": [{"name": "a", "sha256": "abc", "access": "read-write"}]}"#.into(),
        "tokens[0].sha256",
    );
    bad(
        format!(r#"{{"tokens": [{{"name": "a", "sha256": "{hash}", "access": "all"}}]}}"#),
        "tokens[0].access",
    );
    bad(
        format!(
            r#"{{"tokens": [{{"name": "a", "sha256": "{hash}", "access": "read-only", "admin": true}}]}}"#
        ),
        "admin",
    );
    bad(
        format!(
            r#"{{"tokens": [{{"name": "a", "sha256": "{hash}", "access": "read-only"}},
                {{"name": "a", "sha256": "{}", "access": "read-only"}}]}}"#,
            hash_hex("other")
        ),
        "used twice",
    );
    bad(
        format!(
            r#"{{"tokens": [{{"name": "a", "sha256": "{hash}", "access": "read-only", "pools": ["Bad Name"]}}]}}"#
        ),
        "pools",
    );
    bad(
        format!(
            r#"{{"tokens": [{{"name": "a", "sha256": "{hash}", "access": "read-write", "max_groups": 0}}]}}"#
        ),
        "tokens[0].max_groups",
    );
    bad(r#"{"tokens": [], "extra": 1}"#.into(), "extra");
}

#[test]
fn metrics_are_read_by_a_metrics_token_or_an_admin_of_every_key() {
    let mut scraper = grant(&[], &[], Access::ReadOnly, false);
    scraper.metrics = true;
    assert!(scraper.reads_metrics());
    assert!(grant(&[""], &["*"], Access::ReadWrite, true).reads_metrics());
    assert!(!grant(&["b/"], &["pb"], Access::ReadWrite, true).reads_metrics());
    assert!(!grant(&[""], &["*"], Access::ReadOnly, false).reads_metrics());
    let text = format!(
        r#"{{"tokens": [{{"name": "scrape", "sha256": "{}", "access": "read-only", "metrics": true}}]}}"#,
        hash_hex("s")
    );
    let tokens = parse(&text).unwrap();
    assert!(tokens.find("s").unwrap().reads_metrics());
}

#[test]
fn the_key_prefixes_of_every_token_are_named_once() {
    let tokens = Tokens::new(vec![
        named(
            "a",
            grant(&["a/", "shared/"], &[], Access::ReadWrite, false),
        ),
        named(
            "b",
            grant(&["b/", "shared/"], &[], Access::ReadWrite, false),
        ),
        named("root", grant(&[""], &["*"], Access::ReadWrite, true)),
    ]);
    assert_eq!(tokens.key_prefixes(), ["", "a/", "b/", "shared/"]);
}

#[test]
fn fresh_tokens_differ_and_hash_to_64_hex_digits() {
    let (a, b) = (new_token(), new_token());
    assert_ne!(a, b);
    assert!(a.starts_with("lh_"));
    assert_eq!(hash_hex(&a).len(), 64);
}
