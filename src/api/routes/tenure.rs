//! How a lease's cap on tenure is shown in every answer that shows the
//! lease: `ends_by` (RFC 3339) and `lifetime_left_ms`, both null without a
//! cap.

use crate::domain::time::Now;
use crate::domain::{At, tenure};

/// `ends_by` and `lifetime_left_ms` of a lease capped at `ends_by`, at `now`.
pub(super) fn shown(ends_by: Option<At>, now: Now) -> (Option<String>, Option<i64>) {
    (
        ends_by.map(|at| now.show(at)),
        tenure::lifetime_left(ends_by, now.at).map(|ms| ms.as_millis()),
    )
}
