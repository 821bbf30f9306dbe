//! The load generator behind `bench/run.sh`: one workload against one system,
//! printed as one line of figures (ops/s, p50, p99 of the timed part).
//!
//! `cargo bench --bench loadgen -- SYSTEM ADDRESS WORKLOAD CLIENTS SECONDS`
//!
//! | WORKLOAD | each operation (timed part) | systems |
//! |---|---|---|
//! | `uncontended` | acquire + release of a distinct key (both) | leasehold, etcd, Redis |
//! | `contended` | every client waits on one key: a handoff (both) | leasehold, etcd |
//! | `acquire` | acquire (timed) + release of a random key | leasehold |
//! | `reaping:N` | as `acquire`, until the reaper has deleted N rows; prints `reap_s` | leasehold |
//! | `subnets:POOL` | reserve (timed) + release of a /24 in POOL, a /8 | leasehold |
//! | `fill:POOL:N` | N reserves of a /24 in POOL, kept for a day; then stops | leasehold |
//!
//! `cargo bench --bench loadgen -- seed DB COUNT live|expired` fills a
//! stopped server's database with lock leases (see `seed.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

mod http;
mod seed;
mod systems;

use systems::Conn;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The address block every pool of the subnet workloads covers.
const POOL_CIDR: &str = "10.0.0.0/8";

#[derive(Clone)]
enum Workload {
    Uncontended,
    Contended,
    Acquire,
    Reaping(u64),
    Subnets(String),
    Fill(String, u64),
}

impl Workload {
    fn parse(text: &str) -> Result<Self> {
        let parts: Vec<&str> = text.split(':').collect();
        Ok(match parts.as_slice() {
            ["uncontended"] => Workload::Uncontended,
            ["contended"] => Workload::Contended,
            ["acquire"] => Workload::Acquire,
            ["reaping", n] => Workload::Reaping(n.parse()?),
            ["subnets", pool] => Workload::Subnets((*pool).to_owned()),
            ["fill", pool, n] => Workload::Fill((*pool).to_owned(), n.parse()?),
            _ => return Err(format!("unknown workload {text}").into()),
        })
    }
}

/// One operation of `workload`; `Some(latency)` of its timed part when it
/// succeeded, `None` when it was refused.
async fn step(
    conn: &mut Conn,
    workload: &Workload,
    client: usize,
    i: u64,
) -> Result<Option<Duration>> {
    let t = Instant::now();
    match workload {
        Workload::Uncontended | Workload::Contended => {
            let contended = matches!(workload, Workload::Contended);
            let key = if contended {
                "bench-one".to_owned()
            } else {
                format!("bench-{client}-{i}")
            };
            let Some(token) = conn.acquire(&key, contended).await? else {
                return Ok(None);
            };
            conn.release(&key, &token).await?;
            Ok(Some(t.elapsed()))
        }
        Workload::Acquire | Workload::Reaping(_) => {
            let key = format!("svc%2F{:016x}", rand::random::<u64>());
            let Some(token) = conn.acquire(&key, false).await? else {
                return Ok(None);
            };
            let latency = t.elapsed();
            conn.release(&key, &token).await?;
            Ok(Some(latency))
        }
        Workload::Subnets(pool) => {
            let Some((id, token)) = conn.reserve(pool).await? else {
                return Ok(None);
            };
            let latency = t.elapsed();
            conn.release_reservation(pool, &id, &token).await?;
            Ok(Some(latency))
        }
        Workload::Fill(pool, _) => Ok(conn.reserve(pool).await?.map(|_| t.elapsed())),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)].as_secs_f64() * 1e3
}

/// Polls `/metrics` until the reaper has deleted `rows` lock rows; answers
/// how long that took from the start of the run (`None`: not by its end).
async fn watch_reaper(
    mut conn: Conn,
    rows: u64,
    started: Instant,
    stop: Arc<AtomicBool>,
) -> Result<Option<f64>> {
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if conn.counter("leasehold_reaped_locks_total").await? >= rows {
            stop.store(true, Ordering::Relaxed);
            return Ok(Some(started.elapsed().as_secs_f64()));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if let [cmd, db, count, kind] = args.as_slice()
        && cmd == "seed"
    {
        return seed::seed(db.as_ref(), count.parse()?, kind == "live").await;
    }
    let [system, address, workload, clients, seconds] = args.as_slice() else {
        return Err(
            "usage: loadgen SYSTEM ADDRESS WORKLOAD CLIENTS SECONDS | seed DB COUNT live|expired"
                .into(),
        );
    };
    let name = workload;
    let workload = Workload::parse(workload)?;
    let clients: usize = clients.parse()?;
    let seconds: u64 = seconds.parse()?;
    if let Workload::Subnets(pool) | Workload::Fill(pool, _) = &workload {
        Conn::open(system, first_replica(address))
            .await?
            .put_pool(pool, POOL_CIDR)
            .await?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(AtomicU64::new(0));
    let issued = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let reaper = match workload {
        Workload::Reaping(rows) => Some(tokio::spawn(watch_reaper(
            Conn::open(system, first_replica(address)).await?,
            rows,
            started,
            stop.clone(),
        ))),
        _ => None,
    };
    let mut tasks = vec![];
    // Several replicas, `HOST:PORT,HOST:PORT`: the clients are spread over them.
    let replicas: Vec<&str> = address.split(',').collect();
    for c in 0..clients {
        let mut conn = Conn::open(system, replicas[c % replicas.len()]).await?;
        let (workload, stop, errors, issued) = (
            workload.clone(),
            stop.clone(),
            errors.clone(),
            issued.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut latencies = vec![];
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                if let Workload::Fill(_, total) = workload
                    && issued.fetch_add(1, Ordering::Relaxed) >= total
                {
                    break;
                }
                match step(&mut conn, &workload, c, i).await {
                    Ok(Some(latency)) => latencies.push(latency),
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            latencies
        }));
    }
    let deadline = {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(seconds)).await;
            stop.store(true, Ordering::Relaxed);
        })
    };
    let mut all = vec![];
    for t in tasks {
        all.extend(t.await?);
    }
    let elapsed = started.elapsed().as_secs_f64();
    deadline.abort();
    stop.store(true, Ordering::Relaxed);
    let reaped = match reaper {
        Some(task) => match task.await?? {
            Some(s) => format!(" reap_s={s:.1}"),
            None => " reap_s=unfinished".to_owned(),
        },
        None => String::new(),
    };
    all.sort_unstable();
    println!(
        "{system} {name} ops_per_s={:.0} p50_ms={:.2} p99_ms={:.2} ops={} errors={}{reaped}",
        all.len() as f64 / elapsed,
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        all.len(),
        errors.load(Ordering::Relaxed)
    );
    Ok(())
}

/// The first of a comma-separated list of replicas.
fn first_replica(address: &str) -> &str {
    address.split(',').next().unwrap_or(address)
}
