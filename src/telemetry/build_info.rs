//! What this binary is: its version and the git commit it was built from
//! (`build.rs`; `unknown` when built outside a git checkout).

use super::exposition::{Exposition, Kind};

/// The crate version, as `Cargo.toml` says.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The short hash of the commit built, or `unknown`.
pub const COMMIT: &str = env!("LEASEHOLD_COMMIT");

/// `0.1.0 (commit 1a2b3c4)`, for `leasehold --version`.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("LEASEHOLD_COMMIT"),
    ")"
);

/// The `leasehold_build_info` gauge: always 1, the facts in its labels, so
/// a dashboard can join them onto any other series.
pub fn render(out: &mut Exposition) {
    const NAME: &str = "leasehold_build_info";
    let help = "The version and git commit of the running binary";
    out.family(NAME, Kind::Gauge, help).sample(
        NAME,
        &[("version", VERSION), ("commit", COMMIT)],
        1,
    );
}
