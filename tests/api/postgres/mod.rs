//! What only PostgreSQL can show: several replicas on one database, the
//! database's own constraints, a database that goes away, and one that
//! fails over to its standby.

mod clusters;
mod database_down;
mod event_order;
mod failover;
mod grants;
mod nested_replicas;
mod one_holder;
mod postgres_store;
mod proxy;
mod rate_limit_replicas;
mod replica_queues;
pub(crate) mod replicas;
mod session_replicas;
mod silent_network;

pub fn tests() -> Vec<crate::harness::Test> {
    [
        database_down::tests(),
        event_order::tests(),
        failover::tests(),
        nested_replicas::tests(),
        one_holder::tests(),
        postgres_store::tests(),
        rate_limit_replicas::tests(),
        replica_queues::tests(),
        replicas::tests(),
        session_replicas::tests(),
        silent_network::tests(),
    ]
    .concat()
}
