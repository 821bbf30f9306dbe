//! The statement texts of the group and member transactions (`groups`,
//! `members`) that do not differ between dialects; where one needs a
//! dialect's clause (a row lock, the reaper's), a function of its `Texts`.
//! A member row is `m`; its expiry is its session's when bound.

use super::expiry::{self, Text, live_by_session};
use super::texts::Texts;

/// What the end of a member records, as a `DELETE … RETURNING` answers it.
pub const ENDED_MEMBER: &str = "group_name, member, session_id, owner, \
     CAST(CASE WHEN expires_at >= ends_by THEN 1 ELSE 0 END AS bigint) AS lifetime_ended";

/// A member row `m`, its expiry its session's when bound.
pub static MEMBER_COLUMNS: Text = Text::new(|| {
    format!(
        "m.group_name, m.member, m.capabilities, m.session_id, m.joined_at, m.ttl_ms, \
         m.token, m.owner, CASE WHEN m.session_id IS NULL THEN {} ELSE \
         coalesce((SELECT {} FROM sessions s WHERE s.id = m.session_id), m.expires_at) END \
         AS expires_at, \
         coalesce((SELECT s.ends_by FROM sessions s WHERE s.id = m.session_id), m.ends_by) \
         AS ends_by",
        expiry::expires_at("m"),
        expiry::expires_at("s")
    )
});

/// The member row `m` is live at `$n`: by its own expiry and its session's.
fn live(n: u8) -> String {
    format!(
        "{} AND {}",
        expiry::live("m", &format!("${n}")),
        live_by_session("m", n)
    )
}

/// `live` for a statement on `group_members` itself (no alias).
pub fn live_plain(n: u8) -> String {
    format!(
        "{} AND {}",
        expiry::live("group_members", &format!("${n}")),
        live_by_session("group_members", n)
    )
}

/// How many members of `g` are live at `$n`.
fn live_count(n: u8) -> String {
    format!(
        "(SELECT count(*) FROM group_members m WHERE m.group_name = g.name AND {}) AS members",
        live(n)
    )
}

/// The group `$1` with its count of members live at `$2`.
pub static GROUP: Text = Text::new(|| {
    format!(
        "SELECT g.name, g.metadata, g.created_at, {} FROM groups g WHERE g.name = $1",
        live_count(2)
    )
});

/// A page of groups from the prefix `$1` (below `$2` where given), after
/// `$3`, at most `$4`, with their members live at `$5`.
fn list_text(below: bool) -> String {
    let upper = if below { "AND g.name < $2 " } else { "" };
    format!(
        "SELECT g.name, g.metadata, g.created_at, {} FROM groups g \
         WHERE g.name >= $1 {upper}AND g.name > $3 ORDER BY g.name LIMIT $4",
        live_count(5)
    )
}

pub static GROUPS: Text = Text::new(|| list_text(false));
pub static GROUPS_BELOW: Text = Text::new(|| list_text(true));

/// How many groups the owner `$1` created and has not deleted.
pub const GROUPS_OF: &str = "SELECT count(*) AS n FROM groups WHERE owner = $1";

/// A new group `$1` with metadata `$2`, owner `$3`, created at `$4`.
pub const INSERT_GROUP: &str = "INSERT INTO groups (name, metadata, owner, created_at) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING";

/// The group `$1` and its owner, locked until the transaction ends (where
/// writes run side by side): a delete holds it while it counts members.
pub fn group_locked(texts: &Texts) -> String {
    format!(
        "SELECT name, owner FROM groups WHERE name = $1{}",
        texts.lock_pool_row
    )
}

/// The group `$1`, its row shared until the transaction ends: a join holds
/// it, so a delete waits for the join, or the join finds no group.
pub fn group_shared(texts: &Texts) -> String {
    format!("SELECT name FROM groups WHERE name = $1{}", texts.share_row)
}

/// How many members of the group `$1` are live at `$2`.
pub static LIVE_MEMBERS_OF: Text =
    Text::new(|| format!("SELECT {} FROM groups g WHERE g.name = $1", live_count(2)));

/// Every member row of the group `$1`, deleted with it.
pub static DELETE_MEMBERS_OF: Text = Text::new(|| {
    format!("DELETE FROM group_members WHERE group_name = $1 RETURNING {ENDED_MEMBER}")
});

pub const DELETE_GROUP: &str = "DELETE FROM groups WHERE name = $1";

/// Whether the group `$1` exists.
pub const GROUP_EXISTS: &str = "SELECT name FROM groups WHERE name = $1";

/// The member `$2` of the group `$1`, whether live at `$3` or not.
pub static MEMBER_ROW: Text = Text::new(|| {
    format!(
        "SELECT {MEMBER_COLUMNS}, CAST(CASE WHEN {} THEN 1 ELSE 0 END AS bigint) AS live \
         FROM group_members m WHERE m.group_name = $1 AND m.member = $2",
        live(3)
    )
});

/// The live member `$2` of the group `$1` at `$3`.
pub static LIVE_MEMBER: Text = Text::new(|| {
    format!(
        "SELECT {MEMBER_COLUMNS} FROM group_members m \
         WHERE m.group_name = $1 AND m.member = $2 AND {}",
        live(3)
    )
});

/// The live members of `$1` at `$2` after the member `$3`, at most `$4`.
pub static MEMBERS: Text = Text::new(|| {
    format!(
        "SELECT {MEMBER_COLUMNS} FROM group_members m \
         WHERE m.group_name = $1 AND m.member > $3 AND {} ORDER BY m.member LIMIT $4",
        live(2)
    )
});

/// The row of the member `$2` of `$1`, whatever its time: an expired one a
/// join finds is absent, as an expired lease is.
pub static DELETE_MEMBER: Text = Text::new(|| {
    format!(
        "DELETE FROM group_members WHERE group_name = $1 AND member = $2 \
         RETURNING {ENDED_MEMBER}"
    )
});

/// A new member: `$1` group, `$2` member, `$3` capabilities, `$4` its
/// token's digest (none when bound), `$5` session, `$6` owner, `$7` joined
/// at, `$8` expires at (`BOUND` when bound), `$9` TTL, `$10` its cap on
/// tenure (`ends_by`).
pub const INSERT_MEMBER: &str = "INSERT INTO group_members (group_name, member, capabilities, \
     token, session_id, owner, joined_at, expires_at, ttl_ms, ends_by) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

/// The live member `$2` of `$1` gets capabilities `$3`, and, with a TTL of
/// its own, a new expiry `$4` + `$5` (or its own TTL), never past its cap.
pub static UPDATE_MEMBER: Text = Text::new(|| {
    format!(
        "UPDATE group_members SET capabilities = $3, \
         ttl_ms = CASE WHEN session_id IS NULL THEN coalesce($5, ttl_ms) ELSE ttl_ms END, \
         expires_at = CASE WHEN session_id IS NULL THEN {} \
         ELSE expires_at END WHERE group_name = $1 AND member = $2",
        expiry::renewed("$4 + coalesce($5, ttl_ms)")
    )
});

/// The member `$2` of `$1` with a TTL of its own, live at `$3` and proved by
/// its token's digest `$4`, renewed for `$5` (or its own TTL); its
/// capabilities replaced by `$7` when `$6`.
pub static RENEW_MEMBER: Text = Text::new(|| {
    format!(
        "UPDATE group_members SET ttl_ms = coalesce($5, ttl_ms), \
         expires_at = {}, \
         capabilities = CASE WHEN $6 THEN $7 ELSE capabilities END \
         WHERE group_name = $1 AND member = $2 AND session_id IS NULL AND token = $4 AND {}",
        expiry::renewed("$3 + coalesce($5, ttl_ms)"),
        expiry::live("group_members", "$3")
    )
});

/// The live member `$2` of `$1` at `$3` leaves, by its token's digest `$4`.
pub static LEAVE_BY_TOKEN: Text = Text::new(|| {
    format!(
        "DELETE FROM group_members WHERE group_name = $1 AND member = $2 AND {} \
         AND session_id IS NULL AND token = $4 RETURNING {ENDED_MEMBER}",
        expiry::live("group_members", "$3")
    )
});

/// The live member `$2` of `$1` at `$3` leaves, by its session `$4`.
pub static LEAVE_BY_SESSION: Text = Text::new(|| {
    format!(
        "DELETE FROM group_members WHERE group_name = $1 AND member = $2 AND {} \
         AND session_id = $4 RETURNING {ENDED_MEMBER}",
        expiry::live("group_members", "$3")
    )
});

/// The live member `$2` of `$1` at `$3` is removed by an admin.
pub static REMOVE_MEMBER: Text = Text::new(|| {
    format!(
        "DELETE FROM group_members WHERE group_name = $1 AND member = $2 AND {} \
         RETURNING {ENDED_MEMBER}",
        live_plain(3)
    )
});

/// Every member bound to the session `$1`.
pub static END_BOUND: Text = Text::new(|| {
    format!("DELETE FROM group_members WHERE session_id = $1 RETURNING {ENDED_MEMBER}")
});

/// At most `$2` members past their own TTL at `$1` or bound to a session
/// expired then (compare-and-delete), with the dialect's rows of a reaper.
pub fn reap_members(texts: &Texts) -> String {
    let own = expiry::expired("group_members", "$1");
    let by_session = expiry::ended_by_session("group_members", 1);
    format!(
        "DELETE FROM group_members WHERE (group_name, member) IN \
         (SELECT group_name, member FROM group_members WHERE {own} OR {by_session} \
          LIMIT $2{}) AND ({own} OR {by_session}) RETURNING {ENDED_MEMBER}",
        texts.reap_rows
    )
}
