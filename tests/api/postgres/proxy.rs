//! A TCP proxy in front of a database that can go silent, and be pointed at
//! another one: a partition (nothing refused, sockets left open, no byte
//! forwarded), and the address that moves to a promoted standby.

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// While cut, it forwards nothing and closes nothing; a connection cut once
/// stays silent for ever, as a TCP session whose peer vanished does. New
/// connections go to the upstream it points at when they arrive.
pub struct Partition {
    pub port: u16,
    cut: watch::Sender<bool>,
    upstream: watch::Sender<SocketAddr>,
}

impl Partition {
    pub async fn in_front_of(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (cut, watching) = watch::channel(false);
        let (upstream, target) = watch::channel(upstream);
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let mut cut = watching.clone();
                let upstream = *target.borrow();
                tokio::spawn(async move {
                    let already = *cut.borrow();
                    if already {
                        return silent(client).await;
                    }
                    let Ok(mut server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let went_silent = tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => false,
                        _ = cut.wait_for(|cut| *cut) => true,
                    };
                    if went_silent {
                        silent((client, server)).await;
                    }
                });
            }
        });
        Self {
            port,
            cut,
            upstream,
        }
    }

    /// The URL of `url`'s database, reached through this proxy.
    pub fn url(&self, url: &str) -> String {
        super::database_down::through(url, self.port).0
    }

    pub fn cut(&self) {
        self.cut.send_replace(true);
    }

    pub fn heal(&self) {
        self.cut.send_replace(false);
    }

    /// New connections go to `upstream`; open ones stay where they are.
    pub fn switch_to(&self, upstream: SocketAddr) {
        self.upstream.send_replace(upstream);
    }
}

/// Holds the sockets open and never touches them again.
async fn silent<T>(sockets: T) {
    let _held = sockets;
    std::future::pending::<()>().await
}
