//! The HTTP/1.1 server loop: one task per connection, a deadline on request
//! headers (which also closes idle keep-alive connections), a deadline on a
//! client that takes none of what it is sent, a cap on open connections and
//! on the size of a request head, and a graceful stop that lets requests in
//! flight finish.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::atomic::Ordering;
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::serve::Listener;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::ServiceExt;

use crate::telemetry::ConnectionStats;

/// The largest request head (request line and headers) the server serves; a
/// larger one is answered 431 problem+json and the connection closed.
pub const MAX_HEAD_BYTES: usize = 32 * 1024;

/// What a connection may make the server buffer while its head arrives: a
/// head too large even for this is refused by the HTTP parser itself (a bare
/// 431), which also bounds what an endless head costs.
const HEAD_BUFFER_BYTES: usize = 2 * MAX_HEAD_BYTES;

/// The size of a request's head as the client sent it (request line, headers
/// and their separators).
fn head_bytes(request: &hyper::Request<Incoming>) -> usize {
    // Counted from the URI's parts: rendering it would allocate on every request.
    let uri = request.uri();
    let target = uri.scheme_str().map_or(0, |s| s.len() + 3)
        + uri.authority().map_or(0, |a| a.as_str().len())
        + uri.path_and_query().map_or(1, |p| p.as_str().len());
    let line = request.method().as_str().len() + target + 12;
    let headers: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    line + headers + 2
}

/// The answer to a head over `MAX_HEAD_BYTES`.
fn head_too_large() -> axum::response::Response {
    let body = serde_json::json!({
        "type": "/problems/request-header-fields-too-large",
        "title": "The request head is too large",
        "status": 431,
        "detail": format!("the request line and headers exceed {MAX_HEAD_BYTES} bytes"),
        "limit": MAX_HEAD_BYTES,
    })
    .to_string();
    axum::response::Response::builder()
        .status(431)
        .header("content-type", "application/problem+json")
        .header("connection", "close")
        .body(axum::body::Body::from(body))
        .unwrap_or_default()
}

/// Whether hyper ended a connection because a write met `SendDeadline`.
fn is_stalled(error: &hyper::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        {
            return true;
        }
        source = e.source();
    }
    false
}

/// What a connection refused at the cap is told, written without waiting (a
/// client that does not read gets nothing rather than hold the server up).
static REFUSED: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let body = serde_json::json!({
        "type": "/problems/overloaded",
        "title": "The server is overloaded",
        "status": 503,
        "detail": "the server holds as many connections as it takes; retry later",
        "reason": "connections",
    })
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
});

/// The kernel's send buffer of a client connection (it keeps twice this for
/// its own bookkeeping). Left to grow by itself it reaches megabytes, so a
/// client that stops reading its event stream could park that much in the
/// kernel before its writes stall and `send_timeout` notices; capped, a
/// stalled reader costs at most this much, and is noticed after it.
const SEND_BUFFER_BYTES: usize = 128 * 1024;

/// File descriptors kept for everything but client connections: the
/// database and its WAL, the listener, logs.
const RESERVED_FDS: u64 = 64;

/// The connection cap to enforce: `configured`, raising the process's soft
/// limit of open files toward its hard limit as far as that needs, and
/// lowered (with a warning) when even the hard limit leaves too little room.
pub fn connection_cap(configured: u32) -> usize {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let wanted = u64::from(configured) + RESERVED_FDS;
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return configured as usize;
    };
    let mut limit = soft;
    if soft < wanted && setrlimit(Resource::RLIMIT_NOFILE, wanted.min(hard), hard).is_ok() {
        limit = wanted.min(hard);
    }
    if limit >= wanted {
        return configured as usize;
    }
    let cap = limit.saturating_sub(RESERVED_FDS).max(1);
    tracing::warn!(
        max_connections = configured,
        open_files_limit = limit,
        effective = cap,
        "the open files limit is too low for --max-connections; capping connections lower"
    );
    cap as usize
}

/// How a connection may behave before it is closed.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Time to send a request's headers, counted from the first byte awaited:
    /// a connection that sends nothing for this long between requests is closed too.
    pub header_timeout: Duration,
    /// Connections served at once; past it a new connection is answered 503
    /// and closed at once, so the process never runs out of file descriptors.
    pub max_connections: usize,
    /// How long a client may take no byte of what it is sent (an answer, or
    /// an event stream it stopped reading) before the connection is closed:
    /// a stalled reader never keeps its slot for ever.
    pub send_timeout: Duration,
}

/// A connection whose writes fail once the client has taken no byte for
/// `limit`: hyper then drops the connection, and with it the answer being
/// sent (an event stream's slot among what that frees).
struct SendDeadline {
    io: tokio::net::TcpStream,
    limit: Duration,
    /// Running while a write waits for the client to take bytes.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl SendDeadline {
    /// The outcome of a write: progress ends a stall; a write that cannot
    /// proceed starts one, or fails once it lasted `limit`.
    fn bounded<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if polled.is_ready() {
            self.stalled = None;
            return polled;
        }
        let limit = self.limit;
        let stall = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match stall.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the client took no bytes for {} ms", limit.as_millis()),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for SendDeadline {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl AsyncWrite for SendDeadline {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_write(cx, buf);
        this.bounded(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.bounded(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_flush(cx);
        this.bounded(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_shutdown(cx);
        this.bounded(cx, polled)
    }
}

/// One open connection, counted while it lives.
struct Open(Arc<ConnectionStats>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves `app` on `listener` until `shutdown` resolves; then stops accepting,
/// lets every connection finish the request it is serving, and returns.
pub async fn serve(
    mut listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    stats: Arc<ConnectionStats>,
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
        .max_buf_size(HEAD_BUFFER_BYTES)
        .keep_alive(true);
    loop {
        let (io, remote) = tokio::select! {
            // Accept errors (out of file descriptors, say) are retried inside.
            accepted = Listener::accept(&mut listener) => accepted,
            () = stop.closed() => break,
        };
        let Some(open) = admit(&io, remote, &limits, &stats) else {
            continue;
        };
        let io = SendDeadline {
            io,
            limit: limits.send_timeout,
            stalled: None,
        };
        let (app, too_large) = (app.clone(), stats.clone());
        let service = TowerToHyperService::new(tower::service_fn(
            move |request: hyper::Request<Incoming>| {
                let (app, too_large) = (app.clone(), too_large.clone());
                async move {
                    if head_bytes(&request) > MAX_HEAD_BYTES {
                        too_large.heads_too_large.fetch_add(1, Ordering::Relaxed);
                        return Ok(head_too_large());
                    }
                    let mut request = request.map(axum::body::Body::new);
                    // Without an auth file, a client is known by its address.
                    request
                        .extensions_mut()
                        .insert(ConnectInfo::<SocketAddr>(remote));
                    app.oneshot(request).await
                }
            },
        ));
        let connection = http.serve_connection(TokioIo::new(io), service);
        let (stop, finished, stats) = (stop.clone(), finished.clone(), stats.clone());
        tokio::spawn(async move {
            let _open = open;
            let mut connection = pin!(connection);
            let mut stopping = pin!(stop.closed());
            let mut told = false;
            loop {
                tokio::select! {
                    result = connection.as_mut() => {
                        if let Err(e) = result {
                            ended_badly(&e, &stats, remote);
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

/// Counts a new connection open, or refuses it at the connection cap. Only
/// the accept loop opens connections, so the check and the count agree.
fn admit(
    io: &tokio::net::TcpStream,
    remote: SocketAddr,
    limits: &ConnectionLimits,
    stats: &Arc<ConnectionStats>,
) -> Option<Open> {
    if stats.open.load(Ordering::Relaxed) >= limits.max_connections as u64 {
        stats.refused.fetch_add(1, Ordering::Relaxed);
        let _ = io.try_write(&REFUSED);
        tracing::debug!(remote = %remote, "connection refused: at the connection cap");
        return None;
    }
    stats.open.fetch_add(1, Ordering::Relaxed);
    let _ = io.set_nodelay(true);
    let _ = nix::sys::socket::setsockopt(io, nix::sys::socket::sockopt::SndBuf, &SEND_BUFFER_BYTES);
    Some(Open(stats.clone()))
}

/// Counts a connection that ended in an error, and says why.
fn ended_badly(e: &hyper::Error, stats: &ConnectionStats, remote: SocketAddr) {
    if e.is_parse_too_large() {
        stats.heads_too_large.fetch_add(1, Ordering::Relaxed);
    }
    if is_stalled(e) {
        stats.stalled.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            remote = %remote,
            "connection closed: the client took nothing it was sent within the send timeout"
        );
    } else {
        tracing::debug!(error = %e, remote = %remote, "connection ended");
    }
}
