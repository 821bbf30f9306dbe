//! PostgreSQL failover under load, seen from outside: the primary is
//! stopped dead (`pg_ctl stop -m immediate`), its standby promoted, and the
//! address the replicas use (a TCP proxy here; a virtual address or a
//! proxy in production) moved to it, while clients keep taking leases.
//!
//! With synchronous replication nothing acknowledged is lost and fencing
//! tokens never go back. With asynchronous replication the standby may lag:
//! what it had not received when the primary died is gone, though every
//! client was told it was granted, and fencing tokens go back. The README's
//! "Several replicas on PostgreSQL" states both from here.

use std::path::Path;
use std::time::{Duration, Instant};

use futures::future::join_all;
use reqwest::StatusCode;

use super::clusters::{Cluster, Replication};
use super::grants::{Grant, Load, acquire, acquire_as, client, fencing_went_back, held};
use super::proxy::Partition;
use crate::helpers::{STOPS_WITHIN, ServerProcess, wait_until_ready};

async fn a_promoted_synchronous_standby_keeps_every_acknowledged_lease_and_fencing_grows() {
    let primary = Cluster::primary(Replication::Synchronous).await;
    let standby = Cluster::standby_of(&primary, primary.port).await;
    primary.wait_for_standby("sync").await;
    let proxy = Partition::in_front_of(primary.address()).await;
    let url = proxy.url(&primary.url());
    let client = client();
    let a = ServerProcess::start(Path::new(&url), &[]);
    wait_until_ready(&client, &a.address).await;
    let b = ServerProcess::start(Path::new(&url), &[]);
    wait_until_ready(&client, &b.address).await;

    let started = Instant::now();
    let load = Load::start(&client, &[&a.address, &b.address], 16, "fo/");
    load.until(300, started, Duration::from_secs(20)).await;
    // The primary's host drops off the network (its connections go silent:
    // nothing refused, nothing closed) and the primary is gone; the standby
    // is promoted and the address moves to it.
    proxy.cut();
    primary.crash().await;
    standby.promote().await;
    proxy.switch_to(standby.address());
    proxy.heal();
    let switched = Instant::now();
    // A replica stopped now, with calls stuck on the silent connections,
    // stops within its shutdown timeout; the other serves on.
    let stopped_in = a.terminate_within(STOPS_WITHIN).await;
    load.until(300, switched, Duration::from_secs(30)).await;
    let grants = load.stop().await;

    let (held, _) = held(&client, &b.address, "fo/").await;
    for grant in &grants {
        let shown = held.get(&grant.key);
        assert_eq!(
            shown,
            Some(&(format!("holder-of-{}", grant.key), grant.fencing)),
            "acknowledged {grant:?}, now {shown:?}"
        );
    }
    let back = fencing_went_back(&grants);
    assert!(
        back.is_empty(),
        "fencing went back: {:?}",
        &back[..back.len().min(5)]
    );
    eprintln!(
        "{} acknowledged grants kept, {} of them asked for after the switch; \
         a replica stopped {stopped_in:?} after SIGTERM",
        grants.len(),
        grants.iter().filter(|g| g.asked >= switched).count()
    );
    b.terminate_within(STOPS_WITHIN).await;
}

async fn a_promoted_asynchronous_standby_loses_the_grants_it_had_not_received() {
    let primary = Cluster::primary(Replication::Asynchronous).await;
    let link = Partition::in_front_of(primary.address()).await;
    let standby = Cluster::standby_of(&primary, link.port).await;
    primary.wait_for_standby("async").await;
    let proxy = Partition::in_front_of(primary.address()).await;
    let url = proxy.url(&primary.url());
    let client = client();
    let server = ServerProcess::start(Path::new(&url), &[]);
    wait_until_ready(&client, &server.address).await;
    let base = server.address.as_str();
    let take = |prefix: &'static str| {
        let client = client.clone();
        async move {
            let grants = (0..100).map(|i| {
                let client = client.clone();
                async move { acquire(&client, base, &format!("{prefix}{i}")).await }
            });
            let grants: Vec<Grant> = join_all(grants).await.into_iter().flatten().collect();
            assert_eq!(grants.len(), 100, "{prefix}");
            grants
        }
    };

    let received = take("received/").await;
    primary.wait_until_replayed(&standby).await;
    // The standby lags from here: the primary acknowledges, it never hears.
    link.cut();
    let unreceived = take("unreceived/").await;
    let (_, seen_revision) = held(&client, base, "").await;
    primary.crash().await;
    standby.promote().await;
    proxy.switch_to(standby.address());
    wait_until_ready(&client, base).await;

    // What the standby had is there; what it had not is gone, though each
    // of those clients was told it holds its key for a minute.
    let (held, revision) = held(&client, base, "").await;
    for grant in &received {
        assert_eq!(held[&grant.key].1, grant.fencing, "{grant:?}");
    }
    let lost: Vec<&Grant> = unreceived
        .iter()
        .filter(|g| !held.contains_key(&g.key))
        .collect();
    assert_eq!(
        lost.len(),
        unreceived.len(),
        "every unreceived grant is lost"
    );
    // So such a key goes to a second holder while the first believes it
    // holds it, with a fencing token below ones already handed out.
    let first = &unreceived[0];
    let second = acquire_as(&client, base, &first.key, "second-holder")
        .await
        .expect("granted again");
    let highest = unreceived.iter().map(|g| g.fencing).max().unwrap();
    assert!(second.fencing <= highest, "{second:?} after {highest}");
    assert!(second.fencing > received.iter().map(|g| g.fencing).max().unwrap());
    // The change log's revisions went back too: a watcher resuming from
    // one it saw is told it is past the newest.
    assert!(revision < seen_revision, "{revision} after {seen_revision}");
    let resumed = client
        .get(format!("{base}/v1/events?since={seen_revision}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), StatusCode::BAD_REQUEST);
    eprintln!(
        "{} grants received and kept, {} acknowledged and lost; the next grant got \
         fencing token {} after {highest} was handed out; revision {revision} after {seen_revision}",
        received.len(),
        lost.len(),
        second.fencing
    );
    server.terminate_within(STOPS_WITHIN).await;
}

crate::harness::tests! {
    a_promoted_synchronous_standby_keeps_every_acknowledged_lease_and_fencing_grows(4 threads),
    a_promoted_asynchronous_standby_loses_the_grants_it_had_not_received(4 threads),
}
