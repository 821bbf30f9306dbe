//! `leasehold serve` where it must refuse to start: its exit code and the one
//! line that says why.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// Runs `leasehold serve --db db args…` with `env`, expects exit code 1 and
/// returns its one `leasehold: …` line. A server that starts instead fails
/// the test (it is killed after 30 s).
pub async fn serve_refused(db: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .arg("serve")
        .arg("--db")
        .arg(db)
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("leasehold runs");
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("leasehold serve {args:?} started instead of refusing"))
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let reasons: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("leasehold: "))
        .collect();
    assert_eq!(reasons.len(), 1, "one line says why: {stderr}");
    reasons[0].to_owned()
}

/// Starts the real binary with `args` and `env` on a fresh folder; asserts
/// the refusal names every one of `words`, and that no database was made.
pub async fn refused_at_start(args: &[&str], env: &[(&str, &str)], words: &[&str]) {
    let dir = tempfile::TempDir::new().unwrap();
    let db = dir.path().join("leasehold.db");
    let mut all = vec!["--listen", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let line = serve_refused(&db, &all, env).await;
    for word in words {
        assert!(line.contains(word), "{word:?} missing from {line:?}");
    }
    assert!(!db.exists(), "a refused start creates no database");
}
