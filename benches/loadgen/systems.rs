//! One client's connection to a system under test, and the operations the
//! workloads run through it: leasehold (its HTTP API), etcd (v3 JSON gateway:
//! lease grant + txn put-if-absent, lease revoke; the lock API when waiting),
//! Redis (`SET NX PX` + compare-and-delete script).

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::Result;
use super::http::Http;

pub enum Conn {
    Leasehold(Http),
    Etcd(Http),
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

/// A reservation lasts this long: the longest TTL a default server allows.
pub const RESERVATION_TTL_MS: u64 = 86_400_000;

impl Conn {
    pub async fn open(system: &str, address: &str) -> Result<Self> {
        Ok(match system {
            s if s == "leasehold" || s.starts_with("leasehold-") => {
                Conn::Leasehold(Http::connect(address).await?)
            }
            "etcd" => Conn::Etcd(Http::connect(address).await?),
            "redis" => Conn::Redis(BufReader::new(TcpStream::connect(address).await?)),
            other => return Err(format!("unknown system {other}").into()),
        })
    }

    /// The leasehold client; the subnet workloads need leasehold.
    pub fn leasehold(&mut self) -> Result<&mut Http> {
        match self {
            Conn::Leasehold(c) => Ok(c),
            _ => Err("this workload runs against leasehold only".into()),
        }
    }

    /// Acquires `key` (waiting when `wait`), returns what release needs.
    pub async fn acquire(&mut self, key: &str, wait: bool) -> Result<Option<String>> {
        match self {
            Conn::Leasehold(c) => {
                let r = c
                    .post(
                        &format!("/v1/locks/{key}/acquire"),
                        &json!({"holder": "bench", "ttl_ms": 30_000, "wait_ms": if wait { 60_000 } else { 0 }}),
                    )
                    .await?;
                if r.status != 201 {
                    return Ok(None);
                }
                let v: Value = r.json()?;
                Ok(Some(v["token"].as_str().unwrap_or_default().to_owned()))
            }
            Conn::Etcd(c) => {
                let lease = c
                    .post("/v3/lease/grant", &json!({"TTL": 30}))
                    .await?
                    .json()?;
                let id = lease["ID"].as_str().unwrap_or_default().to_owned();
                if wait {
                    let locked = c
                        .post(
                            "/v3/lock/lock",
                            &json!({"name": B64.encode(key), "lease": id}),
                        )
                        .await?
                        .json()?;
                    let held = locked["key"].as_str().unwrap_or_default().to_owned();
                    return Ok(Some(format!("{id} {held}")));
                }
                let k = B64.encode(key);
                let txn = c
                    .post(
                        "/v3/kv/txn",
                        &json!({
                            "compare": [{"target": "CREATE", "key": k, "createRevision": "0"}],
                            "success": [{"requestPut": {"key": k, "value": B64.encode("bench"), "lease": id}}]
                        }),
                    )
                    .await?
                    .json()?;
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

    pub async fn release(&mut self, key: &str, token: &str) -> Result<()> {
        match self {
            Conn::Leasehold(c) => {
                let r = c
                    .post(
                        &format!("/v1/locks/{key}/release"),
                        &json!({ "token": token }),
                    )
                    .await?;
                if r.status != 204 {
                    return Err(format!("release answered {}", r.status).into());
                }
            }
            Conn::Etcd(c) => {
                let (id, held) = token.split_once(' ').unwrap_or((token, "-"));
                if held != "-" {
                    c.post("/v3/lock/unlock", &json!({"key": held})).await?;
                }
                c.post("/v3/lease/revoke", &json!({"ID": id})).await?;
            }
            Conn::Redis(s) => {
                redis_call(s, &["EVAL", REDIS_UNLOCK, "1", key, token]).await?;
            }
        }
        Ok(())
    }

    /// Creates `pool` as `cidr` if it does not exist yet.
    pub async fn put_pool(&mut self, pool: &str, cidr: &str) -> Result<()> {
        let r = self
            .leasehold()?
            .put(&format!("/v1/pools/{pool}"), &json!({ "cidr": cidr }))
            .await?;
        if !(200..300).contains(&r.status) {
            let text = String::from_utf8_lossy(&r.body);
            return Err(format!("pool {pool}: {text}").into());
        }
        Ok(())
    }

    /// Reserves a /24 in `pool`; returns its id and token.
    pub async fn reserve(&mut self, pool: &str) -> Result<Option<(String, String)>> {
        let r = self
            .leasehold()?
            .post(
                &format!("/v1/pools/{pool}/reservations"),
                &json!({"holder": "bench", "prefix_len": 24, "ttl_ms": RESERVATION_TTL_MS}),
            )
            .await?;
        if r.status != 201 {
            return Ok(None);
        }
        let v = r.json()?;
        let field = |name: &str| v[name].as_str().unwrap_or_default().to_owned();
        Ok(Some((field("id"), field("token"))))
    }

    pub async fn release_reservation(&mut self, pool: &str, id: &str, token: &str) -> Result<()> {
        let r = self
            .leasehold()?
            .post(
                &format!("/v1/pools/{pool}/reservations/{id}/release"),
                &json!({ "token": token }),
            )
            .await?;
        if r.status != 204 {
            return Err(format!("release answered {}", r.status).into());
        }
        Ok(())
    }

    /// A counter of leasehold's `/metrics`, e.g. `leasehold_reaped_locks_total`.
    pub async fn counter(&mut self, name: &str) -> Result<u64> {
        let answer = self.leasehold()?.get("/metrics").await?;
        let text = String::from_utf8_lossy(&answer.body);
        let value = text
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
            .ok_or_else(|| format!("/metrics has no {name}"))?;
        Ok(value.trim().parse::<f64>()? as u64)
    }
}
