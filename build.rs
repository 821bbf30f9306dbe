//! The PostgreSQL side of the contract suite (`tests/postgres`) is compiled
//! only when `LEASEHOLD_TEST_POSTGRES_URL` names a server to run it on;
//! without it that test binary holds one ignored test saying it was not run.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(leasehold_postgres_tests)");
    println!("cargo::rerun-if-env-changed=LEASEHOLD_TEST_POSTGRES_URL");
    println!("cargo::rerun-if-changed=build.rs");
    let url = std::env::var("LEASEHOLD_TEST_POSTGRES_URL").unwrap_or_default();
    if !url.trim().is_empty() {
        println!("cargo::rustc-cfg=leasehold_postgres_tests");
    }
}
