//! A bare TCP client for the tests of slow and stalled clients: it sends
//! exactly the bytes a test names and sees when the server closes.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::TestApp;

pub struct Raw {
    pub stream: TcpStream,
}

impl Raw {
    pub async fn connect(app: &TestApp) -> Self {
        Self::connect_to(&app.address).await
    }

    /// Connects to `http://host:port`.
    pub async fn connect_to(address: &str) -> Self {
        let address = address.trim_start_matches("http://");
        let stream = TcpStream::connect(address).await.expect("connects");
        Self { stream }
    }

    pub async fn send(&mut self, bytes: &str) {
        self.stream
            .write_all(bytes.as_bytes())
            .await
            .expect("the server reads");
    }

    /// Sends `text` a byte at a time with `pause` between bytes; stops when
    /// the server has closed the connection and answers whether all was sent.
    pub async fn trickle(&mut self, text: &str, pause: Duration) -> bool {
        for b in text.bytes() {
            if self.stream.write_all(&[b]).await.is_err() {
                return false;
            }
            tokio::time::sleep(pause).await;
        }
        true
    }

    /// Opens a POST of a JSON body declared `declared` bytes long and sends
    /// only `sent` of it.
    pub async fn stalled_post(app: &TestApp, path: &str, declared: usize, sent: &str) -> Self {
        let mut raw = Self::connect(app).await;
        raw.send(&format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {declared}\r\n\r\n{sent}"
        ))
        .await;
        raw
    }

    /// Everything the server sends until it closes the connection, and how
    /// long that took; panics if it is still open after `patience`.
    pub async fn read_until_closed(&mut self, patience: Duration) -> (String, Duration) {
        let started = Instant::now();
        let mut received = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let left = patience.saturating_sub(started.elapsed());
            match tokio::time::timeout(left, self.stream.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
                Err(_) => panic!(
                    "the connection is still open after {patience:?}; received {:?}",
                    String::from_utf8_lossy(&received)
                ),
            }
        }
        (
            String::from_utf8_lossy(&received).into_owned(),
            started.elapsed(),
        )
    }

    /// Reads one response with a `Content-Length` body; the connection stays open.
    pub async fn read_response(&mut self) -> String {
        let mut received = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = tokio::time::timeout(Duration::from_secs(10), self.stream.read(&mut buf))
                .await
                .expect("a response within 10 s")
                .expect("reads");
            assert!(n > 0, "closed before a whole response");
            received.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&received);
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if received.len() >= end + 4 + length {
                    return text.into_owned();
                }
            }
        }
    }
}

/// The status code of a raw HTTP/1.1 response.
pub fn status_of(response: &str) -> u16 {
    response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"))
}
