//! The change log of [`Client`]: `GET /v1/events` read as JSON long-poll
//! pages, which a client resumes after any failure by asking again from the
//! last revision it has.

use std::time::Duration;

use reqwest::Method;
use reqwest::header::ACCEPT;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Client, ClientError, millis};
use crate::domain::Revision;
use crate::domain::fencing::FencingToken;

/// One change: a lease or a session begun or ended. Read from
/// the server's `EventBody`, unknown fields kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventJson {
    pub revision: Revision,
    /// `lock.acquired`, `lock.released`, `reservation.reserved`, …
    #[serde(rename = "type")]
    pub kind: String,
    pub at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fencing_token: Option<FencingToken>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Why it ended: `released`, `expired`, `force_released`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One page of the change log, read from the server's `EventPage`.
#[derive(Debug, Clone, Deserialize)]
pub struct EventPageJson {
    pub items: Vec<EventJson>,
    /// What to pass as `since` next.
    pub next_revision: Revision,
}

/// A key's newest events, newest first, read from the server's
/// `KeyHistoryBody`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoryJson {
    pub items: Vec<EventJson>,
    /// The change-log revision the items reflect.
    pub revision: Revision,
}

/// Which events, and from where.
#[derive(Debug, Clone, Default)]
pub struct EventQuery {
    /// Lock events of keys that start with this.
    pub prefix: Option<String>,
    /// Reservation events of this pool.
    pub pool: Option<String>,
    /// The events after this revision; `None`: from now on.
    pub since: Option<Revision>,
}

impl Client {
    /// The events `query` names, waiting up to `wait` for the first one.
    pub async fn events_page(
        &self,
        query: &EventQuery,
        wait: Duration,
    ) -> Result<EventPageJson, ClientError> {
        let mut params = vec![("wait_ms", millis(wait).to_string())];
        if let Some(prefix) = &query.prefix {
            params.push(("prefix", prefix.clone()));
        }
        if let Some(pool) = &query.pool {
            params.push(("pool", pool.clone()));
        }
        if let Some(since) = query.since {
            params.push(("since", since.to_string()));
        }
        let request = self
            .request(Method::GET, "/v1/events")
            .header(ACCEPT, "application/json")
            .query(&params)
            .timeout(wait + Duration::from_secs(30));
        self.call(request).await
    }
}
