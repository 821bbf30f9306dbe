//! A user's scenario through the Rust client progenitor generates from
//! openapi/openapi-3.0.json (see build.rs): the same steps as .ci/sdk_scenario.py.
//! Only the generated client talks to the server; a refusal is read as the
//! typed problem the spec declares.
//!
//! Usage: leasehold-rust-client-check BASE_URL

include!(concat!(env!("OUT_DIR"), "/client.rs"));

use std::num::NonZeroU64;

use types::{
    AcquireRequest, ConfirmRequest, Mode, Problem, PutLimitRequest, PutPoolRequest, ReleaseRequest,
    RenewRequest, ReservationState, ReserveRequest, TakeRequest,
};

fn check(condition: bool, message: &str) {
    if !condition {
        eprintln!("FAIL: {message}");
        std::process::exit(1);
    }
    println!("ok: {message}");
}

/// The typed problem of a refusal; any other failure ends the scenario.
fn problem<T: std::fmt::Debug>(result: Result<T, Error<Problem>>) -> (u16, Problem) {
    match result {
        Err(Error::ErrorResponse(response)) => (response.status().as_u16(), response.into_inner()),
        other => panic!("expected a problem, got {other:?}"),
    }
}

fn acquire(holder: &str) -> AcquireRequest {
    AcquireRequest {
        holder: holder.parse().unwrap(),
        ttl_ms: Some(30_000),
        max_lifetime_ms: None,
        session: None,
        wait_ms: None,
        mode: None,
        max_holders: None,
        permits: None,
        lock_delay_ms: None,
        metadata: None,
    }
}

async fn locks(client: &Client) {
    let key = "rust/lock-1";
    let granted = client
        .acquire_lock(&key.parse().unwrap(), None, &acquire("rust-a"))
        .await
        .expect("acquire");
    check(granted.status().as_u16() == 201, "acquire answers 201");
    check(
        granted.headers().contains_key("location"),
        "the grant names its Location",
    );
    let lease = granted.into_inner();
    check(!lease.token.is_empty(), "the grant carries a token");
    check(
        matches!(lease.mode, Mode::Exclusive),
        "the lease is exclusive",
    );

    // A token the server issued fits the spec's pattern of one.
    let renew = RenewRequest {
        token: lease.token.parse().unwrap(),
        ttl_ms: Some(60_000),
        metadata: None,
    };
    let renewed = client
        .renew_lock(&key.parse().unwrap(), &renew)
        .await
        .expect("renew")
        .into_inner();
    check(
        renewed.fencing_token == lease.fencing_token,
        "renew keeps the fencing token",
    );
    check(renewed.expires_in_ms > 59_000, "renew extends the lease");

    let refused = client
        .acquire_lock(&key.parse().unwrap(), None, &acquire("rust-b"))
        .await;
    let (status, refusal) = problem(refused);
    check(status == 409, "a second acquire is refused with 409");
    let Problem::LockHeldProblem(held) = refusal else {
        panic!("expected lock-held, got {refusal:?}");
    };
    check(
        held.holder.as_deref() == Some("rust-a"),
        "the typed 409 names the holder",
    );
    check(held.key == key, "and the key");

    let shown = client
        .get_lock(&key.parse().unwrap())
        .await
        .expect("inspect")
        .into_inner();
    check(shown.holder == "rust-a", "inspect shows the holder");
    check(shown.holders.len() == 1, "and every holder");

    let release = ReleaseRequest {
        token: lease.token.parse().unwrap(),
    };
    let released = client
        .release_lock(&key.parse().unwrap(), &release)
        .await
        .expect("release");
    check(released.status().as_u16() == 204, "release answers 204");
    let (status, gone) = problem(client.get_lock(&key.parse().unwrap()).await);
    check(
        status == 404 && matches!(gone, Problem::LockNotFoundProblem(_)),
        "the released key is not held",
    );
}

async fn pool_usage(client: &Client, pool: &str) -> types::PoolBody {
    let pool = pool.parse().unwrap();
    client.get_pool(&pool).await.expect("usage").into_inner()
}

async fn pools(client: &Client) {
    let pool = "rust-docker";
    let definition = PutPoolRequest {
        cidr: "10.20.0.0/16".into(),
        labels: None,
        parent: None,
        rules: None,
    };
    let created = client
        .put_pool(&pool.parse().unwrap(), &definition)
        .await
        .expect("put pool");
    check(created.status().as_u16() == 201, "put pool answers 201");

    let request = ReserveRequest {
        holder: "rust-net".parse().unwrap(),
        prefix_len: Some(24),
        subnet: None,
        ttl_ms: None,
        max_lifetime_ms: None,
        session: None,
        exclude: None,
        metadata: None,
        count: None,
        labels: None,
    };
    let reserved = client
        .reserve_subnet(&pool.parse().unwrap(), None, &request)
        .await
        .expect("reserve");
    check(reserved.status().as_u16() == 201, "reserve answers 201");
    // Without `count` the answer is one reservation, not a batch's items.
    let types::ReserveAnswer::GrantBody(reservation) = reserved.into_inner() else {
        panic!("a reserve without count answered a batch");
    };
    check(
        reservation.subnet == "10.20.0.0/24",
        "the first /24 is the lowest address",
    );
    check(
        matches!(reservation.state, ReservationState::Reserved) && !reservation.token.is_empty(),
        "reserved, with a token",
    );

    let confirm = ConfirmRequest {
        token: reservation.token.parse().unwrap(),
    };
    let confirmed = client
        .confirm_reservation(
            &pool.parse().unwrap(),
            &reservation.id.parse().unwrap(),
            &confirm,
        )
        .await
        .expect("confirm")
        .into_inner();
    check(
        matches!(confirmed.state, ReservationState::Allocated),
        "now allocated",
    );
    check(
        confirmed.expires_at.is_none(),
        "an allocation does not expire",
    );

    let usage = pool_usage(client, pool).await;
    check(
        usage.allocated_count == 1 && usage.reserved_count == 0,
        "usage counts the allocation",
    );
    check(
        usage.free_addresses == (65536 - 256).to_string(),
        "free addresses are exact",
    );

    let (status, in_use) = problem(client.delete_pool(&pool.parse().unwrap()).await);
    check(status == 409, "a pool in use is not deleted");
    let Problem::PoolInUseProblem(in_use) = in_use else {
        panic!("expected pool-in-use, got {in_use:?}");
    };
    check(
        in_use.allocated_count == 1,
        "the typed 409 counts the allocation",
    );

    let release = ReleaseRequest {
        token: reservation.token.parse().unwrap(),
    };
    client
        .release_reservation(
            &pool.parse().unwrap(),
            &reservation.id.parse().unwrap(),
            &release,
        )
        .await
        .expect("release");
    let usage = pool_usage(client, pool).await;
    check(
        usage.allocated_count == 0 && usage.free_addresses == "65536",
        "the pool is free again",
    );
    let deleted = client
        .delete_pool(&pool.parse().unwrap())
        .await
        .expect("delete");
    check(deleted.status().as_u16() == 204, "delete pool");
}

async fn limits(client: &Client) {
    let name = "rust/rate";
    let defined = client
        .put_limit(
            &name.parse().unwrap(),
            &PutLimitRequest {
                rate: NonZeroU64::new(4).unwrap(),
                period_ms: NonZeroU64::new(60_000).unwrap(),
                burst: None,
            },
        )
        .await
        .expect("define");
    check(
        defined.status().as_u16() == 201,
        "define a rate limit answers 201",
    );
    check(
        defined.into_inner().available == 4,
        "a new limit starts full",
    );
    let take = |cost| TakeRequest {
        cost: NonZeroU64::new(cost),
        wait_ms: None,
    };
    let taken = client.take_limit(&name.parse().unwrap(), &take(3)).await.expect("take");
    check(taken.into_inner().available == 1, "a take of 3 leaves 1");
    let (status, denied) = problem(client.take_limit(&name.parse().unwrap(), &take(2)).await);
    check(status == 429, "a take of 2 with 1 left is refused with 429");
    let Problem::RateLimitedProblem(denied) = denied else {
        panic!("expected rate-limited, got {denied:?}");
    };
    check(
        denied
            .retry_after_ms
            .is_some_and(|ms| ms > 0 && ms <= 15_000),
        "the typed problem says when it would be admitted",
    );
    let shown = client.get_limit(&name.parse().unwrap()).await.expect("inspect").into_inner();
    check(shown.available == 1, "a denial takes nothing");
    let deleted = client.delete_limit(&name.parse().unwrap()).await.expect("delete");
    check(deleted.status().as_u16() == 204, "delete a rate limit");
}

#[tokio::main]
async fn main() {
    let base = std::env::args()
        .nth(1)
        .expect("usage: leasehold-rust-client-check BASE_URL");
    let client = Client::new(&base);
    let spec = client.get_open_api().await.expect("the spec").into_inner();
    check(
        spec.openapi.starts_with("3.1"),
        "the served spec is OpenAPI 3.1",
    );
    locks(&client).await;
    pools(&client).await;
    limits(&client).await;
    println!("rust client scenario passed");
}
