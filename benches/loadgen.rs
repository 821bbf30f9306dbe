//! The load generator behind `bench/run.sh`: one workload against one system,
//! printed as one line of figures. Systems: leasehold (its HTTP API), etcd
//! (v3 JSON gateway: lease grant + txn put-if-absent, lease revoke), Redis
//! (`SET NX PX` + compare-and-delete script).
//!
//! `cargo bench --bench loadgen -- SYSTEM ADDRESS WORKLOAD CLIENTS SECONDS`
//! A SYSTEM named `leasehold-…` (e.g. `leasehold-pg2`) is leasehold under
//! another label; ADDRESS may list several replicas, `HOST:PORT,HOST:PORT`,
//! over which the clients are spread.
//! WORKLOAD: `uncontended` (acquire + release of distinct keys) or
//! `contended` (every client waits on one key; handoffs).

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// One client's connection to the system under test.
enum Conn {
    Leasehold(reqwest::Client, String),
    Etcd(reqwest::Client, String),
    Redis(BufReader<TcpStream>),
}

async fn redis_call(stream: &mut BufReader<TcpStream>, args: &[&str]) -> Result<String> {
    let mut out = format!("*{}\r\n", args.len());
    for a in args {
        out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    stream.get_mut().write_all(out.as_bytes()).await?;
    let mut line = String::new();
    stream.read_line(&mut line).await?;
    if let Some(len) = line.strip_prefix('$') {
        let len: i64 = len.trim().parse()?;
        let mut value = String::new();
        if len >= 0 {
            stream.read_line(&mut value).await?;
        }
        return Ok(value.trim().to_owned());
    }
    if line.starts_with('-') {
        return Err(line.into());
    }
    Ok(line.trim().to_owned())
}

const REDIS_UNLOCK: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

impl Conn {
    async fn open(system: &str, address: &str) -> Result<Self> {
        let http = || reqwest::Client::builder().pool_max_idle_per_host(1).build();
        Ok(match system {
            s if s == "leasehold" || s.starts_with("leasehold-") => {
                Conn::Leasehold(http()?, format!("http://{address}"))
            }
            "etcd" => Conn::Etcd(http()?, format!("http://{address}")),
            "redis" => Conn::Redis(BufReader::new(TcpStream::connect(address).await?)),
            other => return Err(format!("unknown system {other}").into()),
        })
    }

    /// Acquires `key` (waiting when `wait`), returns what release needs.
    async fn acquire(&mut self, key: &str, wait: bool) -> Result<Option<String>> {
        match self {
            Conn::Leasehold(c, base) => {
                let r = c
                    .post(format!("{base}/v1/locks/{key}/acquire"))
                    .json(&json!({"holder": "bench", "ttl_ms": 30_000, "wait_ms": if wait { 60_000 } else { 0 }}))
                    .send()
                    .await?;
                if r.status() != 201 {
                    return Ok(None);
                }
                let v: Value = r.json().await?;
                Ok(Some(v["token"].as_str().unwrap_or_default().to_owned()))
            }
            Conn::Etcd(c, base) => {
                let lease: Value = c
                    .post(format!("{base}/v3/lease/grant"))
                    .json(&json!({"TTL": 30}))
                    .send()
                    .await?
                    .json()
                    .await?;
                let id = lease["ID"].as_str().unwrap_or_default().to_owned();
                if wait {
                    let locked: Value = c
                        .post(format!("{base}/v3/lock/lock"))
                        .json(&json!({"name": B64.encode(key), "lease": id}))
                        .send()
                        .await?
                        .json()
                        .await?;
                    let held = locked["key"].as_str().unwrap_or_default().to_owned();
                    return Ok(Some(format!("{id} {held}")));
                }
                let k = B64.encode(key);
                let txn: Value = c
                    .post(format!("{base}/v3/kv/txn"))
                    .json(&json!({
                        "compare": [{"target": "CREATE", "key": k, "createRevision": "0"}],
                        "success": [{"requestPut": {"key": k, "value": B64.encode("bench"), "lease": id}}]
                    }))
                    .send()
                    .await?
                    .json()
                    .await?;
                Ok(txn["succeeded"]
                    .as_bool()
                    .unwrap_or(false)
                    .then_some(format!("{id} -")))
            }
            Conn::Redis(s) => {
                let token = format!("{:032x}", rand::random::<u128>());
                let ok = redis_call(s, &["SET", key, &token, "NX", "PX", "30000"]).await?;
                Ok((ok == "+OK" || ok == "OK").then_some(token))
            }
        }
    }

    async fn release(&mut self, key: &str, token: &str) -> Result<()> {
        match self {
            Conn::Leasehold(c, base) => {
                let r = c
                    .post(format!("{base}/v1/locks/{key}/release"))
                    .json(&json!({ "token": token }))
                    .send()
                    .await?;
                if r.status() != 204 {
                    return Err(format!("release answered {}", r.status()).into());
                }
            }
            Conn::Etcd(c, base) => {
                let (id, held) = token.split_once(' ').unwrap_or((token, "-"));
                if held != "-" {
                    c.post(format!("{base}/v3/lock/unlock"))
                        .json(&json!({"key": held}))
                        .send()
                        .await?;
                }
                c.post(format!("{base}/v3/lease/revoke"))
                    .json(&json!({"ID": id}))
                    .send()
                    .await?;
            }
            Conn::Redis(s) => {
                redis_call(s, &["EVAL", REDIS_UNLOCK, "1", key, token]).await?;
            }
        }
        Ok(())
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)].as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [system, address, workload, clients, seconds] = args.as_slice() else {
        return Err("usage: loadgen SYSTEM ADDRESS WORKLOAD CLIENTS SECONDS".into());
    };
    let clients: usize = clients.parse()?;
    let deadline = Instant::now() + Duration::from_secs(seconds.parse()?);
    let contended = workload == "contended";
    let started = Instant::now();
    let errors = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks = vec![];
    let replicas: Vec<&str> = address.split(',').collect();
    for c in 0..clients {
        let mut conn = Conn::open(system, replicas[c % replicas.len()]).await?;
        let errors = errors.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = vec![];
            let mut i = 0u64;
            while Instant::now() < deadline {
                i += 1;
                let key = if contended {
                    "bench-one".to_owned()
                } else {
                    format!("bench-{c}-{i}")
                };
                let t = Instant::now();
                match conn.acquire(&key, contended).await {
                    Ok(Some(token)) => {
                        if conn.release(&key, &token).await.is_err() {
                            errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        latencies.push(t.elapsed());
                    }
                    _ => {
                        errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
            latencies
        }));
    }
    let mut all = vec![];
    for t in tasks {
        all.extend(t.await?);
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort_unstable();
    println!(
        "{system} {workload} ops_per_s={:.0} p50_ms={:.2} p99_ms={:.2} ops={} errors={}",
        all.len() as f64 / elapsed,
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        all.len(),
        errors.load(std::sync::atomic::Ordering::Relaxed)
    );
    Ok(())
}
