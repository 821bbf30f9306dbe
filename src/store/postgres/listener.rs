//! The notification connection: every replica listens for keys freed and
//! events recorded by the others. A silent network gives a listening
//! connection no error, only silence, so a quiet connection is asked to
//! answer now and then, and one that does not answer within the database
//! bound is abandoned for a fresh one.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio::sync::{Notify, broadcast};
use tokio::task::JoinHandle;

use super::{EVENTS_CHANNEL, KEYS_CHANNEL};
use crate::store::KeyEvent;

/// How long the connection may stay quiet before it is asked to answer.
const QUIET_FOR: Duration = Duration::from_secs(5);

/// The pause before connecting again after a failure.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Listens from now on; `bound` limits every wait on the database.
pub(super) async fn start(
    options: PgConnectOptions,
    bound: Duration,
    events: broadcast::Sender<KeyEvent>,
    recorded: Arc<Notify>,
) -> Result<JoinHandle<()>, sqlx::Error> {
    let first = connect(&options, bound).await?;
    Ok(tokio::spawn(async move {
        // Whatever happened while no connection listened is unknown: waiters
        // and watchers look for themselves.
        let missed = || {
            let _ = events.send(KeyEvent::Missed);
            recorded.notify_one();
        };
        let mut listener = Some(first);
        loop {
            let Some(current) = listener.as_mut() else {
                match connect(&options, bound).await {
                    Ok(fresh) => {
                        listener = Some(fresh);
                        missed();
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot listen for other replicas' changes; retrying");
                        tokio::time::sleep(RETRY_AFTER).await;
                    }
                }
                continue;
            };
            match tokio::time::timeout(QUIET_FOR, current.try_recv()).await {
                Ok(Ok(Some(notification))) if notification.channel() == EVENTS_CHANNEL => {
                    recorded.notify_one();
                }
                Ok(Ok(Some(notification))) => {
                    let _ = events.send(KeyEvent::Freed(notification.payload().to_owned()));
                }
                // The connection was lost and is being replaced.
                Ok(Ok(None)) => missed(),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "lost the notification connection; retrying");
                    missed();
                    tokio::time::sleep(RETRY_AFTER).await;
                }
                Err(_quiet) => {
                    let answered =
                        tokio::time::timeout(bound, sqlx::query("SELECT 1").execute(&mut *current))
                            .await;
                    if !matches!(answered, Ok(Ok(_))) {
                        tracing::warn!(
                            "the notification connection stopped answering; connecting again"
                        );
                        listener = None;
                        missed();
                    }
                }
            }
        }
    }))
}

/// A listening connection from a pool of its own: one abandoned on a silent
/// network (its release waits on the socket for ever) holds no connection
/// the requests need.
async fn connect(options: &PgConnectOptions, bound: Duration) -> Result<PgListener, sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(bound)
        .connect_lazy_with(options.clone());
    tokio::time::timeout(bound, async {
        let mut listener = PgListener::connect_with(&pool).await?;
        listener.listen_all([KEYS_CHANNEL, EVENTS_CHANNEL]).await?;
        Ok(listener)
    })
    .await
    .map_err(|_| sqlx::Error::PoolTimedOut)?
}
