//! The git commit the binary is built from becomes `LEASEHOLD_COMMIT`
//! (`--version`, `leasehold_build_info`); outside a git checkout, or without
//! git, it is `unknown`: that never fails the build.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo::rustc-env=LEASEHOLD_COMMIT={commit}");
    watch_head();
}

/// The trimmed output of a successful `git` run, if any.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (output.status.success() && !text.is_empty()).then(|| text.to_owned())
}

/// Builds again when HEAD moves (a commit, a checkout), so the commit shown
/// is the one built. Only files that exist are named: cargo would otherwise
/// run this script on every build.
fn watch_head() {
    let mut paths = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        paths.push(git(&["rev-parse", "--git-path", &branch]));
    }
    paths.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    for path in paths.into_iter().flatten() {
        if Path::new(&path).exists() {
            println!("cargo::rerun-if-changed={path}");
        }
    }
}
