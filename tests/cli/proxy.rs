//! A TCP proxy on loopback that can be frozen: it then forwards nothing in
//! either direction but keeps every socket open, as a network partition
//! looks to both ends (no reset, no answer).

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct Proxy {
    pub url: String,
    frozen: watch::Sender<bool>,
}

impl Proxy {
    /// Forwards connections on a fresh port to the server at `upstream`
    /// (`http://host:port`).
    pub async fn start(upstream: &str) -> Proxy {
        let upstream: SocketAddr = upstream
            .trim_start_matches("http://")
            .parse()
            .expect("a server address");
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (frozen, _) = watch::channel(false);
        let gate = frozen.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pump(client_read, server_write, gate.subscribe()));
                tokio::spawn(pump(server_read, client_write, gate.subscribe()));
            }
        });
        Proxy { url, frozen }
    }

    /// Stops forwarding, on open connections and new ones alike.
    pub fn freeze(&self) {
        self.frozen.send_replace(true);
    }

    /// Forwards again, first what it held while frozen.
    pub fn thaw(&self) {
        self.frozen.send_replace(false);
    }
}

/// Copies `from` to `to`, holding what it read while the proxy is frozen.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut frozen: watch::Receiver<bool>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if frozen.wait_for(|f| !*f).await.is_err() || to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
