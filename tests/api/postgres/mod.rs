//! What only PostgreSQL can show: several replicas on one database, the
//! database's own constraints, and a database that goes away.

mod database_down;
mod postgres_store;
mod replicas;
mod session_replicas;

pub fn tests() -> Vec<crate::harness::Test> {
    [
        database_down::tests(),
        postgres_store::tests(),
        replicas::tests(),
        session_replicas::tests(),
    ]
    .concat()
}
