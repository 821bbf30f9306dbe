//! LISTEN for the keys other replicas (and this one) free, and pass them on to
//! the waiters. Notifications sent while the connection was down are lost, so
//! a reconnection is passed on as `KeyEvent::Missed`: every waiter retries.

use std::time::Duration;

use sqlx::postgres::{PgListener, PgPool};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use super::KEYS_CHANNEL;
use crate::store::KeyEvent;

pub(super) async fn start(
    pool: &PgPool,
    events: broadcast::Sender<KeyEvent>,
) -> Result<JoinHandle<()>, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(KEYS_CHANNEL).await?;
    Ok(tokio::spawn(async move {
        loop {
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    let _ = events.send(KeyEvent::Freed(notification.payload().to_owned()));
                }
                Ok(None) => {
                    let _ = events.send(KeyEvent::Missed);
                }
                Err(sqlx::Error::PoolClosed) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "lost the notification connection; retrying");
                    let _ = events.send(KeyEvent::Missed);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }))
}
