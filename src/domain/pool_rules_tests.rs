use super::*;

fn block(text: &str) -> Block {
    Block::parse(text).unwrap()
}

fn lens(min: Option<u8>, max: Option<u8>, default: Option<u8>) -> Rules {
    Rules {
        min_prefix_len: min,
        max_prefix_len: max,
        default_prefix_len: default,
        ..Rules::default()
    }
}

#[test]
fn rules_are_checked_among_themselves_naming_the_field() {
    let pool = block("10.0.0.0/16");
    assert_eq!(
        lens(Some(24), Some(20), None)
            .check(pool)
            .unwrap_err()
            .field,
        "rules.min_prefix_len"
    );
    assert_eq!(
        lens(Some(20), Some(24), Some(26))
            .check(pool)
            .unwrap_err()
            .field,
        "rules.default_prefix_len"
    );
    assert_eq!(
        lens(Some(8), None, None).check(pool).unwrap_err().field,
        "rules.min_prefix_len"
    );
    assert!(lens(Some(20), Some(24), Some(24)).check(pool).is_ok());
}

#[test]
fn a_child_may_narrow_but_never_widen() {
    let parent = Rules {
        allowed: vec![block("10.0.0.0/17")],
        ..lens(Some(20), Some(26), Some(24))
    };
    let narrower = Rules {
        allowed: vec![block("10.0.0.0/18")],
        required_labels: ["env".to_owned()].into(),
        ..lens(Some(22), Some(24), None)
    };
    let effective = parent.narrow(&narrower).unwrap();
    assert_eq!(effective.min_prefix_len, Some(22));
    assert_eq!(effective.default_prefix_len, Some(24));
    assert_eq!(effective.allowed, [block("10.0.0.0/18")]);
    for (wider, rule) in [
        (lens(Some(16), None, None), "min_prefix_len"),
        (lens(None, Some(28), None), "max_prefix_len"),
        (lens(None, None, Some(28)), "default_prefix_len"),
        (
            Rules {
                allowed: vec![block("10.0.128.0/17")],
                ..Rules::default()
            },
            "allowed",
        ),
    ] {
        assert_eq!(parent.narrow(&wider).unwrap_err().rule, rule);
    }
}

#[test]
fn a_reserve_keeps_every_rule_or_is_told_which_it_breaks() {
    let rules = Rules {
        disallowed: vec![block("10.0.1.0/24")],
        allowed: vec![block("10.0.0.0/20")],
        required_labels: ["env".to_owned()].into(),
        ..lens(Some(20), Some(26), Some(24))
    };
    let env = ["env".to_owned()];
    let ok = |want| rules.admit(want, env.iter());
    assert_eq!(rules.want(None), Some(Want::PrefixLen(24)));
    assert!(ok(Want::PrefixLen(24)).is_ok());
    assert_eq!(ok(Want::PrefixLen(16)).unwrap_err().rule, "min_prefix_len");
    assert_eq!(ok(Want::PrefixLen(28)).unwrap_err().rule, "max_prefix_len");
    assert_eq!(
        ok(Want::Subnet(block("10.0.1.0/24"))).unwrap_err().rule,
        "disallowed"
    );
    assert_eq!(
        ok(Want::Subnet(block("10.0.32.0/24"))).unwrap_err().rule,
        "allowed"
    );
    let none: [String; 0] = [];
    assert_eq!(
        rules
            .admit(Want::PrefixLen(24), none.iter())
            .unwrap_err()
            .rule,
        "required_labels"
    );
    let excludes = rules.excludes(block("10.0.0.0/16"));
    assert!(excludes.contains(&block("10.0.1.0/24")));
    assert!(excludes.contains(&block("10.0.128.0/17")));
    assert_eq!(Rules::from_json(&rules.to_json()), Some(rules));
}
