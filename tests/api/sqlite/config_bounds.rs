//! Bounds no request could live with are refused at start, by flag or by
//! environment variable, before the database is touched.

use crate::refusals::refused_at_start as refused;

async fn a_max_ttl_under_100ms_is_refused_by_flag_and_by_environment() {
    let words = ["--max-ttl", "LEASEHOLD_MAX_TTL", "30ms", "100ms"];
    refused(&["--max-ttl", "30"], &[], &words).await;
    refused(&[], &[("LEASEHOLD_MAX_TTL", "30")], &words).await;
}

async fn a_default_ttl_above_the_max_ttl_is_refused() {
    let words = [
        "--default-ttl",
        "LEASEHOLD_DEFAULT_TTL",
        "2h",
        "--max-ttl",
        "1h",
    ];
    refused(&["--default-ttl", "2h", "--max-ttl", "1h"], &[], &words).await;
    let env = [("LEASEHOLD_DEFAULT_TTL", "2h"), ("LEASEHOLD_MAX_TTL", "1h")];
    refused(&[], &env, &words).await;
}

async fn a_default_ttl_under_100ms_is_refused() {
    let words = ["--default-ttl", "LEASEHOLD_DEFAULT_TTL", "50ms"];
    refused(&["--default-ttl", "50"], &[], &words).await;
    refused(&[], &[("LEASEHOLD_DEFAULT_TTL", "50ms")], &words).await;
}

async fn a_reaper_that_could_not_run_is_refused() {
    let words = ["--reaper-interval", "LEASEHOLD_REAPER_INTERVAL", "0ms"];
    refused(&["--reaper-interval", "0"], &[], &words).await;
    let words = ["--reaper-batch", "LEASEHOLD_REAPER_BATCH", "0"];
    refused(&[], &[("LEASEHOLD_REAPER_BATCH", "0")], &words).await;
}

async fn waits_and_ttls_beyond_ten_years_are_refused() {
    let words = ["--max-wait", "LEASEHOLD_MAX_WAIT", "87601h"];
    refused(&["--max-wait", "87601h"], &[], &words).await;
    let words = ["--max-ttl", "LEASEHOLD_MAX_TTL", "87624h"];
    refused(&[], &[("LEASEHOLD_MAX_TTL", "3651d")], &words).await;
}

crate::harness::tests! {
    a_max_ttl_under_100ms_is_refused_by_flag_and_by_environment,
    a_default_ttl_above_the_max_ttl_is_refused,
    a_default_ttl_under_100ms_is_refused,
    a_reaper_that_could_not_run_is_refused,
    waits_and_ttls_beyond_ten_years_are_refused,
}
