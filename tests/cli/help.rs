//! `--help` of every client command ends with examples, and every example
//! line that runs the binary is one it accepts: against a port where nothing
//! listens it gets as far as the network (exit 5), never a usage error (2).

use std::process::Command;

use super::{leasehold_binary, text};

const COMMANDS: [&[&str]; 24] = [
    &["lock"],
    &["lock", "run"],
    &["lock", "acquire"],
    &["lock", "renew"],
    &["lock", "release"],
    &["lock", "check"],
    &["lock", "show"],
    &["lock", "history"],
    &["lock", "list"],
    &["lock", "capacity"],
    &["elect"],
    &["watch"],
    &["pool"],
    &["pool", "put"],
    &["pool", "show"],
    &["pool", "list"],
    &["pool", "delete"],
    &["subnet"],
    &["subnet", "reserve"],
    &["subnet", "renew"],
    &["subnet", "confirm"],
    &["subnet", "release"],
    &["subnet", "show"],
    &["status"],
];

/// The example lines under `Examples:` in the help of `command`.
fn examples(command: &[&str], flag: &str) -> Vec<String> {
    let output = Command::new(leasehold_binary())
        .args(command)
        .arg(flag)
        .output()
        .unwrap();
    assert!(output.status.success(), "{command:?} {flag}");
    let help = text(&output.stdout);
    let (_, examples) = help
        .split_once("\nExamples:\n")
        .unwrap_or_else(|| panic!("{command:?} {flag} has examples:\n{help}"));
    examples.lines().map(|l| l.trim().to_owned()).collect()
}

#[test]
fn every_client_command_shows_examples_of_itself_in_its_help() {
    for command in COMMANDS {
        for flag in ["--help", "-h"] {
            let lines = examples(command, flag);
            let own = format!("leasehold {}", command.join(" "));
            assert!(
                lines.iter().any(|l| l.contains(&own)),
                "{own} {flag} shows itself in use: {lines:?}"
            );
        }
    }
}

#[test]
fn every_example_in_the_help_is_accepted_by_the_binary() {
    let binary = leasehold_binary();
    let mut tried = 0;
    for command in COMMANDS {
        for line in examples(command, "--help") {
            // Lines that capture an answer ($(…)) need a server; the rest run
            // the binary directly.
            let Some(rest) = line.strip_prefix("leasehold ") else {
                continue;
            };
            let status = Command::new("sh")
                .arg("-c")
                .arg(format!("exec \"$LEASEHOLD_BIN_UNDER_TEST\" {rest}"))
                .env("LEASEHOLD_BIN_UNDER_TEST", &binary)
                .env("LEASEHOLD_URL", "http://127.0.0.1:1")
                .env_remove("LEASEHOLD_TOKEN")
                .env("LEASE_TOKEN", "9f86d081884c7d659a2feaa0c55ad015")
                .env("API_TOKEN", "lh_0123")
                .env("id", "r_000000000000002a")
                .env("NEXT_CURSOR", "c")
                .output()
                .unwrap();
            assert_eq!(
                status.status.code(),
                Some(5),
                "{line}: {}",
                text(&status.stderr)
            );
            tried += 1;
        }
    }
    assert!(tried >= 20, "only {tried} examples ran");
}
