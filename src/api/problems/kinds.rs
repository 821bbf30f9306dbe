//! The catalogue of every problem `type` the server answers: its status,
//! what it means, whether it comes with `Retry-After`, and its extension
//! fields. The server builds its problems in `problem`, `lease_errors`,
//! `refused` and `middleware::auth`; `openapi::problem_schemas` describes each
//! entry here in the OpenAPI document, and the contract tests hold the
//! server's answers to those descriptions.

/// The type of an extension field.
#[derive(Clone, Copy)]
pub(in crate::api) enum Ty {
    Text,
    Int,
    Bool,
    Texts,
    /// Text that takes one of these values.
    OneOf(&'static [&'static str]),
    /// An object of text labels.
    Labels,
    /// A schema of the document, by name.
    Named(&'static str),
    /// An array of a schema of the document, by name.
    ListOf(&'static str),
}

pub(in crate::api) struct Field {
    pub name: &'static str,
    pub ty: Ty,
    /// Present in every problem of the type.
    pub required: bool,
    pub nullable: bool,
    pub doc: &'static str,
}

/// One problem `type`: `/problems/{name}`.
pub struct Kind {
    pub name: &'static str,
    pub status: u16,
    /// The `title` of every problem of the type.
    pub title: &'static str,
    /// What it means, in the description of the responses that carry it.
    pub summary: &'static str,
    /// Answered with `Retry-After` (always, or when the refusal clears by itself).
    pub retry_after: bool,
    pub(in crate::api) fields: &'static [Field],
}

const fn field(
    name: &'static str,
    ty: Ty,
    required: bool,
    nullable: bool,
    doc: &'static str,
) -> Field {
    Field {
        name,
        ty,
        required,
        nullable,
        doc,
    }
}

const fn req(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    field(name, ty, true, false, doc)
}

/// Always present, and null where there is nothing to name.
const fn null(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    field(name, ty, true, true, doc)
}

const fn opt(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    field(name, ty, false, false, doc)
}

const fn kind(
    name: &'static str,
    status: u16,
    title: &'static str,
    summary: &'static str,
    fields: &'static [Field],
) -> Kind {
    Kind {
        name,
        status,
        title,
        summary,
        retry_after: false,
        fields,
    }
}

/// `kind`, answered with `Retry-After`: its refusal may clear by itself.
const fn clears(kind: Kind) -> Kind {
    Kind {
        retry_after: true,
        ..kind
    }
}

const POOL: Field = req("pool", Ty::Text, "The pool named by the request.");
const KEY: Field = req("key", Ty::Text, "The lock key named by the request.");
const SHED: &[&str] = &[
    "in_flight",
    "waiters",
    "client_in_flight",
    "connections",
    "watchers",
    "client_waiters",
    "client_watchers",
    "history_reads",
    "client_history_reads",
];
const ACCESS: &[&str] = &["read-only", "read-write"];

// One entry a few lines long reads better than rustfmt's one argument a line.
#[rustfmt::skip]
pub const INVALID_REQUEST: Kind = kind("invalid-request", 400, "The request is invalid",
    "the request breaks a rule (`field` names the field, header, \
        path or query parameter; `hint` suggests a correction where there is one)", &[
        req("field", Ty::Text, "The field, header, path or query parameter at fault, such as \
            `ttl_ms`, `key` or `body`."),
        opt("hint", Ty::Text, "A corrected value, such as the aligned subnet of one with host \
            bits set."),
    ]);
#[rustfmt::skip]
pub const MALFORMED_JSON: Kind = kind("malformed-json", 400, "The body is not valid JSON",
    "the body is not valid JSON", &[]);
#[rustfmt::skip]
pub const UNAUTHORIZED: Kind = kind("unauthorized", 401, "A valid API token is required",
    "no token, or one the server does not know", &[]);
#[rustfmt::skip]
pub const FORBIDDEN: Kind = kind("forbidden", 403, "The token may not do this",
    "the key, group or pool is outside the token's scope, the token is \
        read-only, the operation needs an admin token, or `/metrics` a metrics token", &[
        req("token", Ty::Text, "The name of the token."),
        opt("lock", Ty::Text, "The lock key that was refused."),
        opt("pool", Ty::Text, "The pool that was refused."),
        opt("group", Ty::Text, "The group that was refused."),
        opt("limit", Ty::Text, "The rate limit that was refused."),
        req("lock_prefixes", Ty::Texts, "The key prefixes the token may use."),
        req("pools", Ty::Texts, "The pools the token may use (`*`: every pool)."),
        req("access", Ty::OneOf(ACCESS), "What the token may do."),
        req("admin", Ty::Bool, "Whether the token may force releases and delete pools."),
        opt("metrics", Ty::Bool, "Whether the token may read `/metrics` (on its refusal: false)."),
    ]);
#[rustfmt::skip]
pub const SESSION_OUT_OF_SCOPE: Kind = kind("session-out-of-scope", 403, "A lease of the session lies outside a token's scope",
    "a session carries only leases its own API token could hold: the \
        session named is a token's whose scope does not hold the key, pool or group a \
        grant binds to it (nothing was bound); or it holds a lease outside the scope of \
        the admin forcing it closed (nothing was ended)", &[
        req("session", Ty::Text, "The session id."),
        null("owner", Ty::Text, "The API token that opened the session; null: none did."),
    ]);
#[rustfmt::skip]
pub const NOT_FOUND: Kind = kind("not-found", 404, "Not found",
    "no such route", &[]);
#[rustfmt::skip]
pub const LOCK_NOT_FOUND: Kind = kind("lock-not-found", 404, "The lock is not held",
    "the key is not held", &[]);
#[rustfmt::skip]
pub const POOL_NOT_FOUND: Kind = kind("pool-not-found", 404, "No such pool",
    "no such pool (`field: parent` when it is the parent a new pool names)", &[
        POOL,
        opt("field", Ty::Text, "`parent` when the pool missing is the parent the body names."),
    ]);
#[rustfmt::skip]
pub const RESERVATION_NOT_FOUND: Kind = kind("reservation-not-found", 404, "No such reservation",
    "the pool has no such live reservation", &[
        POOL,
        null("id", Ty::Text, "The reservation id."),
    ]);
#[rustfmt::skip]
pub const GROUP_NOT_FOUND: Kind = kind("group-not-found", 404, "No such group",
    "no such group", &[]);
#[rustfmt::skip]
pub const LIMIT_NOT_FOUND: Kind = kind("limit-not-found", 404, "No such rate limit",
    "no rate limit of the name, nor a family (a limit whose name ends in `/`) above it", &[
        req("name", Ty::Text, "The rate limit named by the request."),
    ]);
#[rustfmt::skip]
pub const CAPACITY_NOT_FOUND: Kind = kind("capacity-not-found", 404, "No capacity is stored for the key",
    "no capacity is stored for the key", &[KEY]);
#[rustfmt::skip]
pub const MEMBER_NOT_FOUND: Kind = kind("member-not-found", 404, "No such member",
    "the group has no such live member", &[]);
#[rustfmt::skip]
pub const SESSION_NOT_FOUND: Kind = kind("session-not-found", 404, "No such session",
    "no live session with this id", &[req(
    "id",
        Ty::Text,
    "The session id asked for.",
    )]);
#[rustfmt::skip]
pub const METHOD_NOT_ALLOWED: Kind = kind("method-not-allowed", 405, "Method not allowed",
    "the route does not take this method", &[]);
#[rustfmt::skip]
pub const MISDIRECTED_REQUEST: Kind = kind("misdirected-request", 421, "The request names another host",
    "the request's `Host` is not a name of this server: without an auth file it answers \
        only loopback names and addresses and the hosts of `--allowed-hosts` (the defence \
        against DNS rebinding)", &[
        null("host", Ty::Text, "The `Host` the request named (at most 255 bytes of it); null \
            when it named none."),
    ]);
#[rustfmt::skip]
pub const REQUEST_TIMEOUT: Kind = kind("request-timeout", 408, "The body was not received in time",
    "the body did not arrive within the body timeout", &[]);
#[rustfmt::skip]
pub const LEASE_LOST: Kind = kind("lease-lost", 409, "The lease is lost",
    "the token names no live lease: it expired, was released, or was \
        taken over", &[]);
#[rustfmt::skip]
pub const GROUP_NOT_EMPTY: Kind = kind("group-not-empty", 409, "The group has members",
    "members are live in the group; they leave (or are removed) \
        first", &[req("members", Ty::Int, "How many members are live in it.")]);
#[rustfmt::skip]
pub const CAPACITY_IN_USE: Kind = kind("capacity-in-use", 409, "The capacity is held",
    "live leases hold permits of the key's capacity; it is deleted only when nothing is \
        held (they are released, or expire, first)", &[
        KEY,
        req("held", Ty::Int, "The permits the live leases hold."),
        req("holders", Ty::Int, "How many live leases hold them."),
    ]);
#[rustfmt::skip]
pub const MEMBER_EXISTS: Kind = kind("member-exists", 409, "The member id is taken",
    "another session or holder has the member id in the group", &[]);
#[rustfmt::skip]
pub const SESSION_LOST: Kind = kind("session-lost", 409, "The session is not live",
    "the session a grant names is not live (or is another token's: \
        the same answer), or its token is wrong; nothing was bound", &[req("field", Ty::Text, "`session.id` or `session.token`.")]);
#[rustfmt::skip]
pub const SESSION_FULL: Kind = kind("session-full", 409, "The session holds its limit of leases",
    "the session holds its limit of bound leases", &[
        req("field", Ty::Text, "`session`."),
        req("limit", Ty::Int, "How many leases one session may hold."),
    ]);
#[rustfmt::skip]
pub const LOCK_HELD: Kind = clears(kind("lock-held", 409, "The lock is held",
    "the key is held, or kept by its lock delay (`available_at` says \
        until when)", &[
        KEY,
        null("holder", Ty::Text, "The holder of the oldest live lease; null while a lock delay \
            keeps the key."),
        null("expires_at", Ty::Text, "When the oldest live lease expires; null while a lock \
            delay keeps the key."),
        req("available_at", Ty::Text, "When the key may next be granted, if nothing renews it."),
        opt("holders", Ty::ListOf("ProblemHolder"), "Every live lease on the key."),
        opt("reason", Ty::OneOf(&["lock-delay"]), "Present when a lock delay keeps the key."),
    ]));
#[rustfmt::skip]
pub const LIMIT_MISMATCH: Kind = clears(kind("limit-mismatch", 409, "The key is held with another max_holders",
    "the key is held with another `max_holders`", &[
        KEY,
        null("max_holders", Ty::Int, "The limit the key is held with; null: a plain lock."),
    ]));
#[rustfmt::skip]
pub const POOL_EXHAUSTED: Kind = clears(kind("pool-exhausted", 409, "The pool is exhausted",
    "no free block that large outside the excludes \
        (`largest_free` is the largest there is)", &[
        POOL,
        null("largest_free", Ty::Text, "The largest free aligned block, or null."),
    ]));
#[rustfmt::skip]
pub const SUBNET_UNAVAILABLE: Kind = clears(kind("subnet-unavailable", 409, "The subnet is unavailable",
    "the subnet overlaps live reservations (`conflicts`), \
        child pools (`children`) or an excluded network", &[
        POOL,
        req("conflicts", Ty::ListOf("ProblemConflict"), "The live reservations it overlaps."),
        opt("more_conflicts", Ty::Bool, "More reservations overlap than `conflicts` lists."),
        opt("excluded", Ty::Texts, "The excluded networks it overlaps."),
        opt("children", Ty::ListOf("ProblemChild"), "The child pools it overlaps."),
    ]));
#[rustfmt::skip]
pub const POOL_CONFLICT: Kind = kind("pool-conflict", 409, "The pool exists with another definition",
    "the pool exists with another cidr or labels (`differs` names \
        them)", &[
        POOL,
        req("differs", Ty::Texts, "What differs: `cidr`, `parent`, `labels`."),
        req("cidr", Ty::Text, "The existing pool's cidr."),
        null("parent", Ty::Text, "The existing pool's parent, or null."),
        req("labels", Ty::Labels, "The existing pool's labels."),
    ]);
#[rustfmt::skip]
pub const POOL_IN_USE: Kind = clears(kind("pool-in-use", 409, "The pool has live reservations",
    "the pool has live reservations or child pools", &[
        POOL,
        req("reserved_count", Ty::Int, "Live reservations not yet confirmed."),
        req("allocated_count", Ty::Int, "Confirmed reservations."),
        req("children_count", Ty::Int, "Pools cut from it."),
    ]));
#[rustfmt::skip]
pub const HISTORY_COMPACTED: Kind = kind("history-compacted", 410, "The history is compacted",
    "the events after the revision asked for are pruned \
        (`oldest_revision` is the oldest the server keeps)", &[
        req("oldest_revision", Ty::Int, "The oldest revision the server still keeps: start \
            again from a fresh read of what you watch."),
    ]);
#[rustfmt::skip]
pub const PAYLOAD_TOO_LARGE: Kind = kind("payload-too-large", 413, "The body is too large",
    "the body exceeds 64 KiB", &[]);
#[rustfmt::skip]
pub const UNSUPPORTED_MEDIA_TYPE: Kind = kind("unsupported-media-type", 415, "The body must be JSON",
    "the body must be JSON", &[]);
#[rustfmt::skip]
pub const IDEMPOTENCY_KEY_REUSED: Kind = kind("idempotency-key-reused", 422, "The Idempotency-Key belongs to another request",
    "the Idempotency-Key holds another request's lease", &[
        opt("key", Ty::Text, "The other key on which the Idempotency-Key holds a live lease."),
    ]);
#[rustfmt::skip]
pub const COST_EXCEEDS_BURST: Kind = kind("cost-exceeds-burst", 422, "The cost exceeds the limit's burst",
    "the cost is more than the limit ever holds at once: it can never be taken", &[
        req("field", Ty::Text, "`cost`."),
        req("name", Ty::Text, "The rate limit."),
        req("cost", Ty::Int, "The cost asked for."),
        req("burst", Ty::Int, "The most the limit holds at once."),
    ]);
#[rustfmt::skip]
pub const PERMITS_EXCEED_CAPACITY: Kind = kind("permits-exceed-capacity", 422, "The permits exceed the key's capacity",
    "the lease asks for more permits than the key's capacity ever holds: it can never be \
        granted while the capacity stands", &[
        req("field", Ty::Text, "`permits`."),
        KEY,
        req("permits", Ty::Int, "The permits asked for."),
        req("capacity", Ty::Int, "The key's capacity: stored, else `max_holders`, else 1 for \
            an exclusive lock."),
    ]);
#[rustfmt::skip]
pub const RULE_CONFLICT: Kind = kind("rule-conflict", 422, "A rule widens the parent's",
    "a child pool's rule would widen its parent's (`rule` names it); a child may only \
        narrow its parent's rules", &[
        POOL,
        req("rule", Ty::Text, "The rule: `min_prefix_len`, `max_prefix_len`, \
            `default_prefix_len` or `allowed`."),
    ]);
#[rustfmt::skip]
pub const RULE_VIOLATED: Kind = kind("rule-violated", 422, "The reserve breaks a rule of the pool",
    "the reserve breaks a rule of the pool (`rule` names it)", &[
        POOL,
        req("rule", Ty::Text, "The rule: `min_prefix_len`, `max_prefix_len`, `allowed`, \
            `disallowed` or `required_labels`."),
    ]);
#[rustfmt::skip]
pub const QUOTA_EXCEEDED: Kind = kind("quota-exceeded", 429, "The token holds its quota",
    "the token holds its quota of live leases, of sessions or of \
        groups (`quota` names it)", &[
        req("limit", Ty::Int, "How many live leases (sessions, groups) the token may hold."),
        req("current", Ty::Int, "How many it holds."),
        opt("needed", Ty::Int, "How many leases the refused request needed at once (a lock \
            set needs one per key); on a quota of leases."),
        req("quota", Ty::OneOf(&["leases", "sessions", "groups"]), "The quota that refused: \
            `max_live_leases`, `max_live_sessions` or `max_groups`."),
    ]);
#[rustfmt::skip]
pub const RATE_LIMITED: Kind = clears(kind("rate-limited", 429, "The request goes faster than a rate allows",
    "the token sent writes faster than its `max_writes_per_second` \
        (`limit`), or a rate limit holds fewer tokens than a take asked for (`name`, \
        `retry_after_ms`): nothing was taken", &[
        opt("limit", Ty::Int, "How many writes per second the token may send; on a token's rate."),
        opt("name", Ty::Text, "The rate limit that refused the take."),
        opt("retry_after_ms", Ty::Int, "Milliseconds until the cost can be taken, if nothing \
            else is taken meanwhile; on a take."),
        opt("available", Ty::Int, "Whole tokens the limit holds now; on a take."),
    ]));

#[rustfmt::skip]
pub const REQUEST_HEADER_FIELDS_TOO_LARGE: Kind = kind("request-header-fields-too-large", 431, "The request head is too large",
    "the request line and headers are too large", &[
        req("limit", Ty::Int, "The bound, in bytes."),
    ]);
#[rustfmt::skip]
pub const INTERNAL: Kind = kind("internal", 500, "Internal server error",
    "the server failed; it logged why", &[]);
#[rustfmt::skip]
pub const STORAGE_UNAVAILABLE: Kind = clears(kind("storage-unavailable", 503, "Storage is unavailable",
    "the database cannot be used now", &[]));
#[rustfmt::skip]
pub const OVERLOADED: Kind = clears(kind("overloaded", 503, "The server is overloaded",
    "the server is at one of its load bounds (`reason` names it)", &[
        req("reason", Ty::OneOf(SHED), "The bound: requests in flight, waiting acquires, the \
            caller's share of requests in flight, connections, open event streams, or the \
            caller's share of waiting acquires or of event streams; reads of the change log's \
            history, or the caller's share of them."),
    ]));

/// Every problem type, in the order the document lists them.
pub const KINDS: &[Kind] = &[
    INVALID_REQUEST,
    MALFORMED_JSON,
    UNAUTHORIZED,
    FORBIDDEN,
    SESSION_OUT_OF_SCOPE,
    NOT_FOUND,
    LOCK_NOT_FOUND,
    POOL_NOT_FOUND,
    RESERVATION_NOT_FOUND,
    GROUP_NOT_FOUND,
    LIMIT_NOT_FOUND,
    CAPACITY_NOT_FOUND,
    MEMBER_NOT_FOUND,
    SESSION_NOT_FOUND,
    METHOD_NOT_ALLOWED,
    REQUEST_TIMEOUT,
    MISDIRECTED_REQUEST,
    LEASE_LOST,
    GROUP_NOT_EMPTY,
    CAPACITY_IN_USE,
    MEMBER_EXISTS,
    SESSION_LOST,
    SESSION_FULL,
    LOCK_HELD,
    LIMIT_MISMATCH,
    POOL_EXHAUSTED,
    SUBNET_UNAVAILABLE,
    POOL_CONFLICT,
    POOL_IN_USE,
    HISTORY_COMPACTED,
    PAYLOAD_TOO_LARGE,
    UNSUPPORTED_MEDIA_TYPE,
    IDEMPOTENCY_KEY_REUSED,
    COST_EXCEEDS_BURST,
    PERMITS_EXCEED_CAPACITY,
    RULE_CONFLICT,
    RULE_VIOLATED,
    QUOTA_EXCEEDED,
    RATE_LIMITED,
    REQUEST_HEADER_FIELDS_TOO_LARGE,
    INTERNAL,
    STORAGE_UNAVAILABLE,
    OVERLOADED,
];

/// The objects that extension fields list, by schema name.
#[rustfmt::skip]
pub(in crate::api) const NESTED: &[(&str, &str, &[Field])] = &[
    ("ProblemHolder", "A live lease on a key that refused a grant.", &[
        req("holder", Ty::Text, "Free text naming the client."),
        req("fencing_token", Ty::Int, "Its fencing token."),
        null("expires_at", Ty::Text, "When it expires."),
        null("expires_in_ms", Ty::Int, "How long it has left."),
        req("permits", Ty::Int, "The permits of the key's capacity it holds."),
    ]),
    ("ProblemConflict", "A live reservation that overlaps the requested subnet.", &[
        req("id", Ty::Text, "The reservation id."),
        req("subnet", Ty::Text, "Its subnet."),
        req("holder", Ty::Text, "Free text naming the client."),
        req("state", Ty::Named("ReservationState"), "`reserved`, or `allocated` once confirmed."),
        null("expires_at", Ty::Text, "When it expires; null once allocated."),
    ]),
    ("ProblemChild", "A child pool that overlaps the requested subnet.", &[
        req("name", Ty::Text, "The child pool's name."),
        req("cidr", Ty::Text, "The block it occupies."),
    ]),
];

impl Kind {
    /// The `type` the server answers.
    pub fn uri(&self) -> String {
        format!("/problems/{}", self.name)
    }

    /// The name of its schema: `lock-held` → `LockHeldProblem`.
    pub fn schema_name(&self) -> String {
        let words = self.name.split('-');
        let mut name: String = words
            .map(|word| word[..1].to_ascii_uppercase() + &word[1..])
            .collect();
        name.push_str("Problem");
        name
    }

    /// The entry of `name`; every name the code passes is in the catalogue.
    pub fn named(name: &str) -> &'static Kind {
        KINDS
            .iter()
            .find(|k| k.name == name)
            .unwrap_or_else(|| panic!("no problem type {name} in the catalogue"))
    }
}
