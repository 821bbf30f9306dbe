//! A TCP proxy in front of a database that can go silent: a partition
//! (nothing refused, sockets left open, no byte forwarded).

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A TCP proxy in front of the database that can go silent: while cut, it
/// forwards nothing and closes nothing; a connection cut once stays silent
/// for ever, as a TCP session whose peer vanished does.
pub struct Partition {
    pub port: u16,
    cut: watch::Sender<bool>,
}

impl Partition {
    pub async fn in_front_of(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (cut, watching) = watch::channel(false);
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let mut cut = watching.clone();
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
        Self { port, cut }
    }

    pub fn cut(&self) {
        self.cut.send_replace(true);
    }

    pub fn heal(&self) {
        self.cut.send_replace(false);
    }
}

/// Holds the sockets open and never touches them again.
async fn silent<T>(sockets: T) {
    let _held = sockets;
    std::future::pending::<()>().await
}
