//! The HTTP/1.1 server loop: one task per connection, a deadline on request
//! headers (which also closes idle keep-alive connections), and a graceful
//! stop that lets requests in flight finish.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use axum::Router;
use axum::serve::Listener;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::ServiceExt;

/// How a connection may behave before it is closed.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Time to send a request's headers, counted from the first byte awaited:
    /// a connection that sends nothing for this long between requests is closed too.
    pub header_timeout: Duration,
}

/// Serves `app` on `listener` until `shutdown` resolves; then stops accepting,
/// lets every connection finish the request it is serving, and returns.
pub async fn serve(
    mut listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    // Connections hold `stopped`; it closes when the shutdown signal arrives.
    let (stop, stopped) = watch::channel(());
    tokio::spawn(async move {
        shutdown.await;
        drop(stopped);
    });
    // Each connection task holds a receiver; all dropped means all finished.
    let (done, finished) = watch::channel(());
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    loop {
        let (io, remote) = tokio::select! {
            // Accept errors (out of file descriptors, say) are retried inside.
            accepted = Listener::accept(&mut listener) => accepted,
            () = stop.closed() => break,
        };
        let _ = io.set_nodelay(true);
        let service =
            TowerToHyperService::new(app.clone().map_request(
                |request: hyper::Request<Incoming>| request.map(axum::body::Body::new),
            ));
        let connection = http.serve_connection(TokioIo::new(io), service);
        let stop = stop.clone();
        let finished = finished.clone();
        tokio::spawn(async move {
            let mut connection = pin!(connection);
            let mut stopping = pin!(stop.closed());
            let mut told = false;
            loop {
                tokio::select! {
                    result = connection.as_mut() => {
                        if let Err(e) = result {
                            tracing::debug!(error = %e, remote = %remote, "connection ended");
                        }
                        break;
                    }
                    () = &mut stopping, if !told => {
                        told = true;
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(finished);
        });
    }
    drop(listener);
    drop(finished);
    done.closed().await;
}
