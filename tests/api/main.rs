//! Black-box tests: a real server on a random port, a fresh database, real HTTP.
//! The modules here are the contract suite: each of their tests runs on SQLite
//! and on PostgreSQL (`harness.rs`). What only one backend can show is in
//! `sqlite/` and `postgres/`, and runs there alone.

mod auth;
mod backend;
mod batches;
mod bodies;
mod browser_headers;
mod capacities;
mod clock_steps;
mod console;
mod cors;
mod event_filters;
mod event_reads;
mod events;
mod fencing;
mod field_order;
mod foreign_sessions;
mod group_quota;
mod groups;
mod harness;
mod helpers;
mod history_turns;
mod hostile_clients;
mod hosts;
mod idempotency;
mod key_history;
mod list_then_watch;
mod locations;
mod lock_rules;
mod lock_sets;
mod locks;
mod metrics;
mod nested_pools;
mod nested_races;
mod permits;
mod pool_free;
mod pool_maps;
mod pool_rules;
mod postgres;
mod prefixes;
mod queues;
mod quota;
mod quota_precedence;
mod rate_limits;
mod raw;
mod refusals;
mod request_ids;
mod restarts;
mod scopes;
mod session_binding;
mod session_ends;
mod session_leases;
mod session_lists;
mod session_owners;
mod session_reservations;
mod sessions;
mod spec_answers;
mod sqlite;
mod status;
mod strict_requests;
mod subnets;
mod tenant_limits;
mod tenant_metrics;
mod tenants;
mod tenure;
mod tenure_kinds;
mod unknown_reservations;
mod waiting;

fn main() {
    let contract = [
        auth::tests(),
        batches::tests(),
        bodies::tests(),
        browser_headers::tests(),
        capacities::tests(),
        clock_steps::tests(),
        console::tests(),
        cors::tests(),
        event_filters::tests(),
        event_reads::tests(),
        events::tests(),
        fencing::tests(),
        field_order::tests(),
        foreign_sessions::tests(),
        group_quota::tests(),
        groups::tests(),
        history_turns::tests(),
        hostile_clients::tests(),
        hosts::tests(),
        idempotency::tests(),
        key_history::tests(),
        list_then_watch::tests(),
        locations::tests(),
        lock_rules::tests(),
        lock_sets::tests(),
        locks::tests(),
        metrics::tests(),
        nested_pools::tests(),
        nested_races::tests(),
        permits::tests(),
        pool_free::tests(),
        pool_maps::tests(),
        pool_rules::tests(),
        prefixes::tests(),
        queues::tests(),
        quota::tests(),
        quota_precedence::tests(),
        rate_limits::tests(),
        request_ids::tests(),
        restarts::tests(),
        scopes::tests(),
        spec_answers::tests(),
        session_binding::tests(),
        session_ends::tests(),
        session_leases::tests(),
        session_lists::tests(),
        session_owners::tests(),
        session_reservations::tests(),
        sessions::tests(),
        status::tests(),
        strict_requests::tests(),
        subnets::tests(),
        tenant_limits::tests(),
        tenant_metrics::tests(),
        tenants::tests(),
        tenure::tests(),
        tenure_kinds::tests(),
        unknown_reservations::tests(),
        waiting::tests(),
    ];
    harness::main(contract.concat(), sqlite::tests(), postgres::tests())
}
