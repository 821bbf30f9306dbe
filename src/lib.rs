//! leasehold: a durable lease service for keyed locks and subnet reservations.
//!
//! The library holds everything; `src/main.rs` is a thin command line over it.
//! `domain` is pure rules, `store` is all SQL, `leases` runs the operations over a
//! store (and keeps the waiters), `api` is the HTTP surface.
//! `ARCHITECTURE.md` maps the rest and says which module may import which.
#![forbid(unsafe_code)]

pub mod api;
pub mod auth;
pub mod cli;
pub mod client;
pub mod clock;
pub mod config;
pub mod domain;
pub mod leases;
pub mod reaper;
pub mod serve;
pub mod startup;
pub mod store;
pub mod telemetry;
pub mod token;
