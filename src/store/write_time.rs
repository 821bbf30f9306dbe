//! The lease clock as a grant's transaction reads it: once it holds its key
//! (or pool, or group), not when the request arrived. Where writes run side
//! by side a grant may wait for its key behind others; read before that
//! wait, its time could fall before the end of the lease it follows, and the
//! change log's times would go back. Read after it, every time on a key
//! follows the order of the grants, on both dialects.

use std::sync::Arc;

use crate::domain::At;

/// The lease clock, as the service reads it.
pub type LeaseClock = Arc<dyn Fn() -> At + Send + Sync>;

/// When a write was asked for, and the clock to read once it may decide.
#[derive(Clone)]
pub struct WriteTime {
    asked: At,
    clock: LeaseClock,
}

impl WriteTime {
    pub fn new(asked: At, clock: LeaseClock) -> Self {
        Self { asked, clock }
    }

    /// The lease clock now, never before the time the write was asked for.
    pub fn read(&self) -> At {
        (self.clock)().max(self.asked)
    }
}
