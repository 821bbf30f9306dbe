//! The statement texts of the rate limits' transactions (`limits`): one
//! text for both dialects, but the forgetting of full buckets, which takes
//! only rows no other write holds where writes run side by side.

use super::texts::Texts;

/// The columns a limit is read from (`limits::limit`).
macro_rules! limit_columns {
    () => {
        "name, owner, rate, period_ms, burst, tat_ms, tat_part, bucket_of"
    };
}

/// The row of the name `$1`: a limit, or a family's bucket.
pub const LIMIT_ROW: &str = concat!(
    "SELECT ",
    limit_columns!(),
    " FROM rate_limits WHERE name = $1"
);

/// The family defined by the name `$1`.
pub const FAMILY: &str = concat!(
    "SELECT ",
    limit_columns!(),
    " FROM rate_limits WHERE name = $1 AND family = 1 AND bucket_of IS NULL"
);

/// Writes a limit or a bucket whole: `$1` name, `$2` owner, `$3` rate, `$4`
/// period, `$5` burst, `$6` and `$7` its time, `$8` whether it defines a
/// family, `$9` the family it is a bucket of, `$10` now. A row already
/// there keeps its owner and its creation. A bucket is written so even
/// when it was read: it may have been forgotten since (it was full then).
pub const WRITE_LIMIT: &str = "INSERT INTO rate_limits (name, owner, rate, period_ms, burst, \
     tat_ms, tat_part, family, bucket_of, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
     ON CONFLICT (name) DO UPDATE SET owner = coalesce(rate_limits.owner, excluded.owner), \
     rate = excluded.rate, period_ms = excluded.period_ms, burst = excluded.burst, \
     tat_ms = excluded.tat_ms, tat_part = excluded.tat_part, family = excluded.family, \
     bucket_of = excluded.bucket_of";

pub const DELETE_LIMIT: &str = "DELETE FROM rate_limits WHERE name = $1";

/// How many buckets of the family `$1` are stored.
pub const BUCKETS_OF: &str = "SELECT count(*) AS n FROM rate_limits WHERE bucket_of = $1";

/// Every bucket of the family `$1`, deleted with it.
pub const DELETE_BUCKETS_OF: &str = "DELETE FROM rate_limits WHERE bucket_of = $1";

/// A page of limits defined by name from the prefix `$1` (below `$2` where
/// given), after `$3`, at most `$4`.
pub const LIMITS: &str = concat!(
    "SELECT ",
    limit_columns!(),
    " FROM rate_limits WHERE bucket_of IS NULL AND name >= $1 AND name > $3 \
     ORDER BY name LIMIT $4"
);
pub const LIMITS_BELOW: &str = concat!(
    "SELECT ",
    limit_columns!(),
    " FROM rate_limits WHERE bucket_of IS NULL AND name >= $1 AND name < $2 AND name > $3 \
     ORDER BY name LIMIT $4"
);

/// Forgets at most `$3` buckets of the family `$1` that are full at `$2`
/// (their time before it), skipping those another write holds.
pub fn forget_full_buckets(texts: &Texts) -> String {
    format!(
        "DELETE FROM rate_limits WHERE name IN \
         (SELECT name FROM rate_limits WHERE bucket_of = $1 AND tat_ms < $2 \
          LIMIT $3{}) AND bucket_of = $1 AND tat_ms < $2",
        texts.reap_rows
    )
}
