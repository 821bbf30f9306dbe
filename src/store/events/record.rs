//! Recording events in the transaction of their change, each given the
//! store's next revision, and noting them in the write's `Effects`.

use super::decode::event;
use super::encode::Fields;
use crate::domain::Revision;
use crate::domain::events::Event;
use crate::store::dialect::Effects;
use crate::store::sql::{Columns, Sql, args, one};
use crate::store::{StoreError, StoreResult};

/// Records `event` (its revision is the store's next) in the transaction
/// of its change.
pub async fn record(conn: &mut dyn Sql, fx: &mut Effects, event: &Event) -> StoreResult<()> {
    let f = Fields::of(event);
    let text = conn.texts().insert_event;
    let row = one(
        conn,
        text,
        args![
            f.kind,
            f.at,
            f.key,
            f.pool,
            f.reservation,
            f.subnet,
            f.holder,
            f.fencing_token,
            f.session_id,
            f.owner,
            f.reason,
            f.group_name,
            f.member,
        ],
    )
    .await?;
    recorded(fx, event.clone(), row.revision("revision")?);
    Ok(())
}

/// Notes `event`, recorded with `revision` by a statement of its change
/// (`EventRecording::WithRows`).
pub fn recorded(fx: &mut Effects, event: Event, revision: Revision) {
    fx.events += 1;
    fx.recorded.push(Event { revision, ..event });
}

/// The most events one statement records; more take several.
const EVENTS_PER_STATEMENT: usize = 1_000;

/// Records every event of `events`, in that order: one statement for
/// each `EVENTS_PER_STATEMENT` of them (a reaper's batch, a session's
/// bound leases) rather than one each.
pub async fn record_all(conn: &mut dyn Sql, fx: &mut Effects, events: &[Event]) -> StoreResult<()> {
    if let [event] = events {
        return record(conn, fx, event).await;
    }
    for chunk in events.chunks(EVENTS_PER_STATEMENT) {
        let fields: Vec<Fields<'_>> = chunk.iter().map(Fields::of).collect();
        let given = serde_json::to_string(&fields)
            .map_err(|e| StoreError::Internal(format!("events not written: {e}")))?;
        let rows = conn
            .rows(conn.texts().insert_events, args![given.as_str()])
            .await?;
        let mut recorded = rows.iter().map(event).collect::<Result<Vec<_>, _>>()?;
        if recorded.len() != chunk.len() {
            return Err(StoreError::Internal(format!(
                "{} events recorded of {}",
                recorded.len(),
                chunk.len()
            ))
            .into());
        }
        recorded.sort_unstable_by_key(|e| e.revision);
        fx.events += recorded.len() as u64;
        fx.recorded.extend(recorded);
    }
    Ok(())
}
