//! When the CLI asks a server again: the pauses between tries, and which
//! failures are worth another try.

use std::time::Duration;

use crate::client::ClientError;

/// The pause before asking again a server that did not answer, doubled up
/// to a few seconds while it stays away.
pub const FIRST_RETRY: Duration = Duration::from_millis(200);
pub const LAST_RETRY: Duration = Duration::from_secs(5);

/// A failure that asking again may cure: no answer, or the server failing.
pub fn transient(e: &ClientError) -> bool {
    match e {
        ClientError::Unreachable { .. } | ClientError::Unexpected(_) => true,
        ClientError::Problem { status, .. } => *status >= 500,
    }
}
