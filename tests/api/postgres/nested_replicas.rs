//! Nested pools on two replicas of one PostgreSQL: reserves into a child
//! and its parent at once, spread over both, never overlap.

use crate::nested_races::race_a_child_and_its_parent;
use crate::postgres::replicas::two_replicas;

async fn two_replicas_reserving_in_a_child_and_its_parent_never_overlap() {
    let (_dir, a, b, client) = two_replicas().await;
    race_a_child_and_its_parent(&client, [&a.address, &b.address]).await;
}

crate::harness::tests! {
    two_replicas_reserving_in_a_child_and_its_parent_never_overlap,
}
