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

fn run(args: &[&str]) -> String {
    let output = std::process::Command::new(leasehold_binary())
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        text(&output.stderr)
    );
    assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
    text(&output.stdout)
}

#[test]
fn completions_for_bash_zsh_and_fish_know_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let script = run(&["completions", shell]);

        assert!(script.contains("leasehold"), "{shell}");
        for subcommand in ["serve", "lock", "subnet", "completions"] {
            assert!(script.contains(subcommand), "{shell} lacks {subcommand}");
        }
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let output = std::process::Command::new(leasehold_binary())
        .args(["completions", "cmd.exe"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
}

#[test]
fn the_manual_page_is_roff_naming_the_subcommands() {
    let page = run(&["man"]);

    assert!(page.contains(".TH leasehold 1"), "{page}");
    assert!(page.contains(".SH NAME"));
    for subcommand in ["serve", "lock", "pool", "subnet"] {
        assert!(page.contains(subcommand), "lacks {subcommand}");
    }
}
