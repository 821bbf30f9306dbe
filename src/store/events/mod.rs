//! The change log, written once for both dialects: every transaction that
//! changes a lease records its events here, in that same transaction, so an
//! event exists exactly when its change was committed. Readers page through
//! it by revision; the reaper prunes its oldest rows in small batches.
//!
//! By job: recording events in a change's transaction (`record`), an
//! event's columns as a statement binds them or JSON carries them
//! (`encode`), the columns statements answer (`columns`), events read back
//! from rows (`decode`), reading the log (`reads`) and pruning it
//! (`prune`). What an event says is built beside the domain type it is
//! about (`domain::events::Holding`, `domain::session::session_event`, …).

mod columns;
mod decode;
mod encode;
mod prune;
mod reads;
mod record;

pub use columns::{ANNOUNCING_LOCK, ENDED_LOCK, ENDED_RESERVATION, EVENT_COLUMNS};
pub use decode::{ended_lock, ended_reservation, event, expired_locks};
pub use reads::{EventBounds, Horizon, Log};
pub use record::{record, record_all, recorded};
