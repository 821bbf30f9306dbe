use super::*;

#[test]
fn a_prefix_is_the_first_path_segment() {
    assert_eq!(first_segment("lb/3f2a"), Some("lb/"));
    assert_eq!(first_segment("scheduler"), None);
    assert_eq!(first_segment("a/b/c"), Some("a/"));
}

#[test]
fn a_key_without_a_slash_is_counted_as_other_never_as_itself() {
    let activity = PrefixActivity::first_seen(8);
    activity.note("scheduler", Activity::Grant);
    let figures = activity.figures(|_| true, 1);
    let names: Vec<&str> = figures.iter().map(|f| f.prefix.as_str()).collect();
    assert_eq!(names, ["other"]);
    assert_eq!(figures[0].totals.grants, 1);
}

#[test]
fn fixed_prefixes_count_a_key_under_the_longest_it_starts_with() {
    let activity = PrefixActivity::fixed(["a/".into(), "a/x/".into(), "".into(), "b".into()]);
    for key in ["a/1", "a/x/1", "a/x/2", "b/1", "bc", "zzz", "other"] {
        activity.note(key, Activity::Grant);
    }
    let figures = activity.figures(|_| true, 1);
    let counted: Vec<(&str, u64)> = figures
        .iter()
        .map(|f| (f.prefix.as_str(), f.totals.grants))
        .collect();
    assert_eq!(
        counted,
        [("a/", 1), ("a/x/", 2), ("b", 2), ("other", 2)],
        "every prefix of the file is a bucket, the empty one none"
    );
    assert_eq!(activity.bucket_of("a/x/y"), "a/x/");
    assert_eq!(activity.bucket_of("c/1"), OTHER);
}

#[test]
fn prefixes_past_the_limit_are_counted_as_other() {
    let activity = PrefixActivity::first_seen(2);
    activity.note("a/1", Activity::Grant);
    activity.note("b/1", Activity::Grant);
    activity.note("c/1", Activity::Grant);
    activity.note("d/1", Activity::Refusal);
    activity.note("a/2", Activity::Release);
    let figures = activity.figures(|_| true, 1);
    let names: Vec<&str> = figures.iter().map(|f| f.prefix.as_str()).collect();
    assert_eq!(names, ["a/", "b/", "other"]);
    assert_eq!(
        (figures[0].totals.grants, figures[0].totals.releases),
        (1, 1)
    );
    assert_eq!(
        (figures[2].totals.grants, figures[2].totals.refusals),
        (1, 1)
    );
    assert_eq!(activity.bucket_of("zzz/1"), OTHER);
    assert_eq!(activity.bucket_of("b/2"), "b/");
}

#[test]
fn a_selection_sees_only_its_buckets() {
    let activity = PrefixActivity::first_seen(8);
    activity.note("a/1", Activity::Grant);
    activity.note("b/1", Activity::Grant);
    let only_a = activity.figures(|p| p == "a/", 1);
    assert_eq!(only_a.len(), 1);
    assert_eq!(only_a[0].prefix, "a/");
}

#[test]
fn slots_count_what_happened_in_them_and_the_current_one_is_left_out() {
    let bucket = Bucket::new();
    bucket.note(7, Activity::Grant);
    bucket.note(7, Activity::Grant);
    bucket.note(8, Activity::Expiry);
    bucket.note(8, Activity::Wait(Duration::from_millis(40)));
    let window = bucket.window(9, 3);
    assert_eq!(window.len(), 3);
    assert_eq!(
        window[0],
        Counts {
            waits: vec![0; BINS],
            ..Counts::default()
        }
    );
    assert_eq!(window[1].grants, 2);
    assert_eq!(window[2].expiries, 1);
    assert_eq!(window[2].waits.iter().sum::<u64>(), 1);
    // An old slot overwritten by the same place a window later is reset.
    bucket.note(7 + SLOTS as u64, Activity::Refusal);
    let later = bucket.window(8 + SLOTS as u64, 2);
    assert_eq!((later[1].grants, later[1].refusals), (0, 1));
}

#[test]
fn wait_quantiles_interpolate_within_their_bin() {
    let mut counts = Counts::default();
    assert_eq!(counts.wait_quantile_ms(0.5), None);
    counts.waits = vec![0; BINS];
    // Four waits between 25 ms and 50 ms.
    counts.waits[3] = 4;
    let p50 = counts.wait_quantile_ms(0.5).unwrap();
    assert!((p50 - 37.5).abs() < 1e-9, "{p50}");
    let p99 = counts.wait_quantile_ms(0.99).unwrap();
    assert!(p99 > 49.0 && p99 <= 50.0, "{p99}");
}

#[test]
fn metrics_carry_the_prefix_label() {
    let activity = PrefixActivity::first_seen(4);
    activity.note("lb/1", Activity::Grant);
    let mut out = Exposition::default();
    activity.render(&mut out, &[("lb/".into(), 1)]);
    let text = out.finish();
    assert!(
        text.contains("leasehold_prefix_lock_grants_total{prefix=\"lb/\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("leasehold_prefix_waiters{prefix=\"lb/\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("leasehold_prefix_lock_grants_total{prefix=\"other\"} 0\n"),
        "{text}"
    );
}
