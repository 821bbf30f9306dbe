//! A grant whose answer is lost on the way back: the CLI's retry carries the
//! first try's `Idempotency-Key`, so the server answers the lease it already
//! granted instead of holding the key against its own client until the TTL
//! runs out.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{Cli, spawn_app};

/// The answer put in place of the server's: the server failing for a moment.
fn lost() -> String {
    let body =
        r#"{"type":"/problems/overloaded","title":"Overloaded","status":503,"reason":"in_flight"}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Forwards to `upstream`, but answers the first `lies` acquires with a 503
/// of its own after the server has granted them.
async fn liar(upstream: SocketAddr, lies: u32) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let lies = Arc::new(AtomicU32::new(lies));
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let lies = lies.clone();
            let server = TcpStream::connect(upstream).await.unwrap();
            let (mut client_read, mut client_write) = client.into_split();
            let (mut server_read, mut server_write) = server.into_split();
            // Whether each request sent on, in order, was an acquire.
            let (asked, mut answered) = tokio::sync::mpsc::unbounded_channel::<bool>();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = client_read.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                    let text = String::from_utf8_lossy(&buf[..n]);
                    if let Some(line) = text.lines().next().filter(|l| l.ends_with("HTTP/1.1")) {
                        let _ = asked.send(
                            line.starts_with("POST /v1/locks/") && line.contains("/acquire "),
                        );
                    }
                    if server_write.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = server_read.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                    if buf.starts_with(b"HTTP/1.1 ") {
                        let acquire = answered.recv().await.unwrap_or(false);
                        let lie = acquire
                            && lies
                                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |l| {
                                    l.checked_sub(1)
                                })
                                .is_ok();
                        if lie {
                            let _ = client_write.write_all(lost().as_bytes()).await;
                            return;
                        }
                    }
                    if client_write.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

#[tokio::test]
async fn a_campaign_whose_grant_was_answered_with_a_lost_reply_leads_at_once() {
    let server = spawn_app().await;
    let upstream: SocketAddr = server
        .address
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let url = liar(upstream, 1).await;
    let marker = server.path("led");
    let script = format!("echo led > {marker}; sleep 60");
    let mut campaigner = server
        .leasehold(&[
            "elect",
            "scheduler",
            "--ttl",
            "30s",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .env("LEASEHOLD_URL", &url)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Without the key the retry finds the key held (by its own lost grant)
    // and leads only once that lease's 30 s have run out.
    let mut tries = 0;
    while !std::path::Path::new(&marker).exists() {
        tries += 1;
        if tries == 100 {
            campaigner.kill().await.unwrap();
            let out = campaigner.wait_with_output().await.unwrap();
            panic!(
                "the campaigner did not lead within 10 s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let lease: Value = reqwest::get(format!("{}/v1/locks/scheduler", server.address))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        lease["fencing_token"], 1,
        "one grant, answered twice: {lease}"
    );
    campaigner.kill().await.unwrap();
}
