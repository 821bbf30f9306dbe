//! `/metrics` after a scripted workload: every counter moved by exactly the
//! work done, request histograms by route template, bounded labels.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestApp, spawn_app_with, wait_for_gauge};

/// The value of one series, `name` including its `{labels}` if any.
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no series {name} in\n{text}"))
        .parse()
        .unwrap()
}

async fn scrape(app: &TestApp) -> String {
    let response = app.scrape().await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    response.text().await.unwrap()
}

async fn counters_gauges_and_histograms_move_by_exactly_the_work_done() {
    // The reaper runs only when the test says so.
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3600)).await;

    // 6 grants, the last two short-lived; 1 conflict; 2 renewals; 3 releases.
    let mut tokens = Vec::new();
    for i in 1..=4 {
        let lease = app
            .must_acquire(&format!("metrics/secret-key-{i}"), "node-1", 60_000)
            .await;
        tokens.push(lease["token"].as_str().unwrap().to_owned());
    }
    for i in 5..=6 {
        app.must_acquire(&format!("metrics/secret-key-{i}"), "node-1", 100)
            .await;
    }
    let conflict = app.acquire("metrics/secret-key-1", "node-2", 60_000).await;
    assert_eq!(conflict.status(), StatusCode::CONFLICT);
    for (i, token) in tokens.iter().enumerate().take(2) {
        let key = format!("metrics/secret-key-{}", i + 1);
        assert_eq!(app.renew(&key, token).await.status(), StatusCode::OK);
    }
    for (i, token) in tokens.iter().enumerate().take(3) {
        let key = format!("metrics/secret-key-{}", i + 1);
        let released = app.release(&key, token).await;
        assert_eq!(released.status(), StatusCode::NO_CONTENT);
    }
    // Two reservations, one confirmed, and a short one.
    let pool = app
        .client
        .put(app.url("/v1/pools/metrics"))
        .json(&json!({"cidr": "10.0.0.0/16"}))
        .send()
        .await
        .unwrap();
    assert_eq!(pool.status(), StatusCode::CREATED);
    let mut reservations = Vec::new();
    for _ in 0..2 {
        let r = app
            .post(
                "/v1/pools/metrics/reservations",
                json!({"holder": "node-1", "prefix_len": 24}),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
        reservations.push(r.json::<serde_json::Value>().await.unwrap());
    }
    let short = app
        .post(
            "/v1/pools/metrics/reservations",
            json!({"holder": "node-1", "prefix_len": 24, "ttl_ms": 100}),
        )
        .await;
    assert_eq!(short.status(), StatusCode::CREATED);
    let confirmed = app
        .post(
            &format!(
                "/v1/pools/metrics/reservations/{}/confirm",
                reservations[0]["id"].as_str().unwrap()
            ),
            json!({"token": reservations[0]["token"]}),
        )
        .await;
    assert_eq!(confirmed.status(), StatusCode::OK);

    scrape(&app).await;

    // The short leases expire: a grant on key 6 finds its expired lease and
    // deletes it (a 7th grant), then one reaper pass deletes key 5's.
    tokio::time::sleep(Duration::from_millis(200)).await;
    app.must_acquire("metrics/secret-key-6", "node-2", 60_000)
        .await;
    // Reading the pool's usage purges its expired reservation.
    let usage = app.get("/v1/pools/metrics").await;
    assert_eq!(usage.status(), StatusCode::OK);
    let report = leasehold::reaper::reap_once(&app.leases, 500)
        .await
        .unwrap();
    assert_eq!(report.locks_removed, 1);

    let text = scrape(&app).await;
    for (name, expected) in [
        ("leasehold_lock_grants_total", 7.0),
        ("leasehold_lock_conflicts_total", 1.0),
        ("leasehold_lock_renewals_total", 2.0),
        ("leasehold_lock_releases_total", 3.0),
        ("leasehold_lock_replays_total", 0.0),
        ("leasehold_reaped_locks_total", 1.0),
        ("leasehold_reservation_grants_total", 3.0),
        ("leasehold_reservation_confirms_total", 1.0),
        ("leasehold_reservation_releases_total", 0.0),
        ("leasehold_reaped_reservations_total", 0.0),
        ("leasehold_waiters", 0.0),
        ("leasehold_expired_leases_total{kind=\"lock\"}", 2.0),
        ("leasehold_expired_leases_total{kind=\"reservation\"}", 1.0),
        ("leasehold_live_leases{kind=\"lock\"}", 2.0),
        ("leasehold_live_leases{kind=\"reservation\"}", 2.0),
        // 7 grants, 3 releases, 2 expiries of locks; 3 reservations, a
        // confirmation and an expiry.
        ("leasehold_events_written_total", 17.0),
        ("leasehold_watchers", 0.0),
        ("leasehold_watchers_ended_slow_total", 0.0),
        ("leasehold_requests_shed_total{reason=\"watchers\"}", 0.0),
    ] {
        assert_eq!(sample(&text, name), expected, "{name}");
    }

    // Request latency by route template and status class.
    let acquire = "leasehold_http_request_duration_seconds_count\
                   {route=\"/v1/locks/{key}/acquire\",method=\"POST\"";
    assert_eq!(sample(&text, &format!("{acquire},status=\"2xx\"}}")), 7.0);
    assert_eq!(sample(&text, &format!("{acquire},status=\"4xx\"}}")), 1.0);
    let acquire_inf = "leasehold_http_request_duration_seconds_bucket\
                       {route=\"/v1/locks/{key}/acquire\",method=\"POST\",status=\"2xx\",le=\"+Inf\"}";
    assert_eq!(sample(&text, acquire_inf), 7.0);
    let route = |r: &str| {
        format!(
            "leasehold_http_request_duration_seconds_count{{route=\"{r}\",method=\"POST\",status=\"2xx\"}}"
        )
    };
    assert_eq!(sample(&text, &route("/v1/locks/{key}/renew")), 2.0);
    assert_eq!(sample(&text, &route("/v1/locks/{key}/release")), 3.0);
    assert_eq!(sample(&text, &route("/v1/pools/{pool}/reservations")), 3.0);
    // The earlier scrape is counted too, under its own route.
    assert_eq!(
        sample(
            &text,
            "leasehold_http_request_duration_seconds_count{route=\"/metrics\",method=\"GET\",status=\"2xx\"}"
        ),
        1.0
    );

    // Every write above was committed (plus start-up and readiness writes);
    // writes that arrive together share a commit.
    let commits = sample(&text, "leasehold_commit_duration_seconds_count");
    assert!(commits >= 1.0, "{commits} commits");
    assert_eq!(sample(&text, "leasehold_commit_batch_size_count"), commits);
    let writes = sample(&text, "leasehold_commit_batch_size_sum");
    assert!(
        writes >= 18.0 && writes >= commits,
        "{writes} writes in {commits} commits"
    );
    // Every committed write is a client's or the server's own (start-up,
    // readiness, the reaper pass above), never both, never neither.
    let for_requests = sample(
        &text,
        "leasehold_committed_writes_total{origin=\"request\"}",
    );
    let background = sample(
        &text,
        "leasehold_committed_writes_total{origin=\"background\"}",
    );
    assert!(for_requests >= 15.0, "{for_requests} request writes");
    assert!(background >= 2.0, "{background} background writes");
    assert_eq!(for_requests + background, writes, "{text}");

    // Labels never carry a key.
    assert!(!text.contains("secret-key"), "{text}");
}

/// The commit this checkout is at, as `build.rs` records it.
fn checkout_commit() -> String {
    let output = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output();
    match output {
        Ok(o) if o.status.success() => String::from_utf8(o.stdout).unwrap().trim().to_owned(),
        _ => "unknown".to_owned(),
    }
}

async fn build_info_names_the_version_and_commit_with_value_1() {
    let app = spawn_app_with(|_| {}).await;
    let text = scrape(&app).await;

    let series = format!(
        "leasehold_build_info{{version=\"{}\",commit=\"{}\"}}",
        env!("CARGO_PKG_VERSION"),
        checkout_commit()
    );
    assert_eq!(sample(&text, &series), 1.0);
    assert!(text.contains("# TYPE leasehold_build_info gauge"));
}

#[cfg(target_os = "linux")]
async fn process_series_describe_a_live_recently_started_process() {
    let app = spawn_app_with(|_| {}).await;
    let text = scrape(&app).await;

    assert!(sample(&text, "process_resident_memory_bytes") > 1_000_000.0);
    assert!(
        sample(&text, "process_virtual_memory_bytes")
            >= sample(&text, "process_resident_memory_bytes")
    );
    assert!(sample(&text, "process_cpu_seconds_total") >= 0.0);
    let open = sample(&text, "process_open_fds");
    assert!(open >= 3.0, "{open} open files");
    assert!(sample(&text, "process_max_fds") >= open);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let started = sample(&text, "process_start_time_seconds");
    assert!(
        started <= now + 1.0 && started > now - 3600.0,
        "started at {started}, now {now}"
    );
    assert!(text.contains("# TYPE process_cpu_seconds_total counter\n"));
}

async fn responses_are_counted_by_their_exact_code_beside_the_class() {
    let app = spawn_app_with(|_| {}).await;
    let missing = app.get("/v1/locks/metrics%2Fnobody-holds-this").await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let pool = app
        .client
        .put(app.url("/v1/pools/codes"))
        .json(&json!({"cidr": "10.1.0.0/16"}))
        .send()
        .await
        .unwrap();
    assert_eq!(pool.status(), StatusCode::CREATED);

    let text = scrape(&app).await;
    let responses = |route: &str, method: &str, code: &str| {
        sample(
            &text,
            &format!(
                "leasehold_http_responses_total{{route=\"{route}\",method=\"{method}\",code=\"{code}\"}}"
            ),
        )
    };
    assert_eq!(responses("/v1/locks/{key}", "GET", "404"), 1.0);
    assert_eq!(responses("/v1/pools/{pool}", "PUT", "201"), 1.0);
    // The latency histogram keeps its classes.
    let class = "leasehold_http_request_duration_seconds_count\
                 {route=\"/v1/locks/{key}\",method=\"GET\",status=\"4xx\"}";
    assert_eq!(sample(&text, class), 1.0);
    assert!(text.contains("# TYPE leasehold_http_responses_total counter\n"));
}

async fn waited_acquires_are_timed_in_their_own_histogram_when_granted_or_refused() {
    let app = std::sync::Arc::new(spawn_app_with(|_| {}).await);
    let path = "/v1/locks/metrics%2Fqueue/acquire";
    let held = app.must_acquire("metrics/queue", "holder", 60_000).await;

    // One waiter gives up at its deadline: it waited at least 150 ms.
    let refused = app
        .post(
            path,
            json!({"holder": "brief", "ttl_ms": 60_000, "wait_ms": 150}),
        )
        .await;
    assert_eq!(refused.status(), StatusCode::CONFLICT);

    // Another waits until the holder lets go.
    let waiter = {
        let app = app.clone();
        tokio::spawn(async move {
            app.post(
                path,
                json!({"holder": "patient", "ttl_ms": 60_000, "wait_ms": 20_000}),
            )
            .await
            .status()
        })
    };
    wait_for_gauge(&app, "leasehold_waiters", 1).await;
    let released = app
        .release("metrics/queue", held["token"].as_str().unwrap())
        .await;
    assert_eq!(released.status(), StatusCode::NO_CONTENT);
    assert_eq!(waiter.await.unwrap(), StatusCode::CREATED);

    // The holder's own acquire asked for no wait: it is not in the histogram.
    let text = scrape(&app).await;
    assert_eq!(sample(&text, "leasehold_acquire_wait_seconds_count"), 2.0);
    let waited = sample(&text, "leasehold_acquire_wait_seconds_sum");
    assert!(waited >= 0.15, "{waited} s waited in all");
    assert_eq!(
        sample(&text, "leasehold_acquire_wait_seconds_bucket{le=\"+Inf\"}"),
        2.0
    );
    // The refused waiter waited its full 150 ms: above the 0.1 s bound.
    let quick = sample(&text, "leasehold_acquire_wait_seconds_bucket{le=\"0.1\"}");
    assert!(quick <= 1.0, "{quick} waits under 0.1 s");
    // The long polls are in the request histogram as well.
    let requests = "leasehold_http_request_duration_seconds_count\
                    {route=\"/v1/locks/{key}/acquire\",method=\"POST\",status=\"2xx\"}";
    assert_eq!(sample(&text, requests), 2.0);
}

crate::harness::tests! {
    counters_gauges_and_histograms_move_by_exactly_the_work_done,
    build_info_names_the_version_and_commit_with_value_1,
    process_series_describe_a_live_recently_started_process,
    responses_are_counted_by_their_exact_code_beside_the_class,
    waited_acquires_are_timed_in_their_own_histogram_when_granted_or_refused,
}
