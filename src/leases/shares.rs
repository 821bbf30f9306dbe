//! Each client's share of the in-flight bound: one client (an API token, or a
//! peer address when the server runs without tokens) may hold at most so many
//! in-flight slots, so a single stalled or flooding client cannot take them all
//! and lock everyone else out. Entries exist only while a client has requests
//! in flight, so the map follows the clients active now, not every client seen.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

/// Who a request counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClientId {
    /// The name of the API token the request presented.
    Token(Arc<str>),
    /// The peer address of a server without an auth file.
    Address(IpAddr),
}

/// Slots held per client, bounded by `max_per_client`.
pub struct ClientShares {
    held: Mutex<HashMap<ClientId, usize>>,
    max_per_client: usize,
}

/// One slot of one client; dropping it gives the slot back.
pub struct ClientSlot {
    shares: Arc<ClientShares>,
    client: ClientId,
}

impl ClientShares {
    pub fn new(max_per_client: usize) -> Self {
        Self {
            held: Mutex::new(HashMap::new()),
            max_per_client: max_per_client.max(1),
        }
    }

    fn held(&self) -> MutexGuard<'_, HashMap<ClientId, usize>> {
        // Counts are only ever incremented or decremented whole: a panic
        // elsewhere cannot leave one half-written.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for `client`, or `None` when it holds its whole share already.
    pub fn take(self: &Arc<Self>, client: &ClientId) -> Option<ClientSlot> {
        let mut held = self.held();
        let count = held.entry(client.clone()).or_insert(0);
        if *count >= self.max_per_client {
            return None;
        }
        *count += 1;
        Some(ClientSlot {
            shares: self.clone(),
            client: client.clone(),
        })
    }

    /// Clients with at least one slot now (the entries of the map).
    pub fn clients(&self) -> usize {
        self.held().len()
    }

    pub fn max_per_client(&self) -> usize {
        self.max_per_client
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut held = self.shares.held();
        if let Some(count) = held.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_holds_at_most_its_share_and_is_forgotten_at_zero() {
        let shares = Arc::new(ClientShares::new(2));
        let a = ClientId::Token("a".into());
        let b = ClientId::Address([10, 0, 0, 1].into());
        let first = shares.take(&a).expect("a first slot");
        let second = shares.take(&a).expect("a second slot");
        assert!(shares.take(&a).is_none(), "a third slot is refused");
        let other = shares.take(&b).expect("another client is served");
        assert_eq!(shares.clients(), 2);
        drop((first, second, other));
        assert_eq!(shares.clients(), 0, "no entry outlives its last slot");
        // A refusal leaves no entry behind either.
        let full = Arc::new(ClientShares::new(1));
        let only = full.take(&a).unwrap();
        assert!(full.take(&a).is_none());
        drop(only);
        assert_eq!(full.clients(), 0);
    }
}
