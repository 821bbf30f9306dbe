//! What the binary says about itself: its version and commit, shell
//! completions, a manual page.

use super::{leasehold_binary, text};

#[test]
fn version_names_the_release_and_the_commit_it_was_built_from() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or("unknown".to_owned(), |o| text(&o.stdout).trim().to_owned());

    for flag in ["--version", "-V"] {
        let output = std::process::Command::new(leasehold_binary())
            .arg(flag)
            .output()
            .unwrap();

        assert!(output.status.success());
        assert_eq!(
            text(&output.stdout).trim(),
            format!("leasehold {} (commit {commit})", env!("CARGO_PKG_VERSION"))
        );
    }
}
