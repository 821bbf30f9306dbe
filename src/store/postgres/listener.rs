//! LISTEN for the keys other replicas (and this one) free, and pass them on to
//! the waiters; and for the commits that recorded events, which wake the
//! reader of the change log. Notifications sent while the connection was
//! down are lost, so a reconnection is passed on as `KeyEvent::Missed`
//! (every waiter retries) and wakes the reader.

use std::time::Duration;

use sqlx::postgres::{PgListener, PgPool};
use std::sync::Arc;

use tokio::sync::{Notify, broadcast};
use tokio::task::JoinHandle;

use super::{EVENTS_CHANNEL, KEYS_CHANNEL};
use crate::store::KeyEvent;

pub(super) async fn start(
    pool: &PgPool,
    events: broadcast::Sender<KeyEvent>,
    recorded: Arc<Notify>,
) -> Result<JoinHandle<()>, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen_all([KEYS_CHANNEL, EVENTS_CHANNEL]).await?;
    Ok(tokio::spawn(async move {
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) if notification.channel() == EVENTS_CHANNEL => {
                    recorded.notify_one();
                }
                Ok(Some(notification)) => {
                    let _ = events.send(KeyEvent::Freed(notification.payload().to_owned()));
                }
                Ok(None) => {
                    let _ = events.send(KeyEvent::Missed);
                    recorded.notify_one();
                }
                Err(sqlx::Error::PoolClosed) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "lost the notification connection; retrying");
                    let _ = events.send(KeyEvent::Missed);
                    recorded.notify_one();
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }))
}
