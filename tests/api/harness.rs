//! Runs the suite (`harness = false`): each test of a backend-agnostic module
//! once per backend, named `sqlite::…` and `postgres::…`, and each test of
//! `sqlite/` or `postgres/` on its own backend only. The backend is chosen at
//! run time: PostgreSQL is the server `LEASEHOLD_TEST_POSTGRES_URL` names;
//! without it every PostgreSQL test is reported ignored, with the reason,
//! never as passed. Filters and flags are those of `cargo test`.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

use crate::backend::{self, Backend};

/// An async test, boxed so that tests of every module share one type.
pub type AsyncBody = fn() -> Pin<Box<dyn Future<Output = ()>>>;

#[derive(Clone, Copy)]
pub enum Body {
    /// Runs on its own tokio runtime: current-thread, or with that many workers.
    Async(AsyncBody, usize),
    Sync(fn()),
}

#[derive(Clone)]
pub struct Test {
    /// The module path below the crate and the function: `locks::renew_…`.
    pub path: String,
    pub body: Body,
}

impl Test {
    pub fn new(module: &str, name: &str, body: Body) -> Self {
        let module = module.split_once("::").map_or("", |(_, rest)| rest);
        Self {
            path: format!("{module}::{name}"),
            body,
        }
    }

    /// This test as a trial on `backend`, or reported ignored without one.
    fn trial(self, name: String, backend: Option<Backend>) -> Trial {
        Trial::ignorable_test(name, move || match backend {
            Some(backend) => self.run(backend).map(|()| Completion::Completed),
            None => Ok(Completion::ignored_with(
                "LEASEHOLD_TEST_POSTGRES_URL is not set: the PostgreSQL side was NOT run",
            )),
        })
    }

    fn run(self, backend: Backend) -> Result<(), Failed> {
        // Dropped last, after the test's runtime, whether the test passed or panicked.
        let _tidy = Tidy(backend.clone());
        backend::set(backend.clone());
        match self.body {
            Body::Sync(body) => body(),
            Body::Async(body, workers) => {
                let mut builder = if workers == 0 {
                    tokio::runtime::Builder::new_current_thread()
                } else {
                    let mut builder = tokio::runtime::Builder::new_multi_thread();
                    builder.worker_threads(workers);
                    builder
                };
                // Tasks the test spawns run on other threads: they see its backend too.
                builder
                    .enable_all()
                    .on_thread_start(move || backend::set(backend.clone()))
                    .build()
                    .expect("a tokio runtime")
                    .block_on(body());
            }
        }
        Ok(())
    }
}

/// Tidies the backend after a test, and leaves its thread on SQLite.
struct Tidy(Backend);

impl Drop for Tidy {
    fn drop(&mut self) {
        backend::set(Backend::Sqlite);
        self.0.tidy();
    }
}

/// Lists a module's tests for the runner: `name`, `name(4 threads)` for a
/// multi-threaded runtime, and in `[sync: …]` the plain functions.
macro_rules! tests {
    ($($name:ident $(($threads:literal threads))?),* $(,)? $([sync: $($sync:ident),+ $(,)?] $(,)?)?) => {
        pub fn tests() -> Vec<$crate::harness::Test> {
            vec![
                $($crate::harness::Test::new(
                    module_path!(),
                    stringify!($name),
                    $crate::harness::Body::Async(|| Box::pin($name()), 0 $(+ $threads)?),
                ),)*
                $($($crate::harness::Test::new(
                    module_path!(),
                    stringify!($sync),
                    $crate::harness::Body::Sync($sync),
                ),)+)?
            ]
        }
    };
}
pub(crate) use tests;

/// Runs `contract` on every backend, `sqlite` and `postgres` on theirs, and
/// exits with the outcome.
pub fn main(contract: Vec<Test>, sqlite: Vec<Test>, postgres: Vec<Test>) -> ! {
    let server = backend::postgres_server();
    if server.is_none() {
        eprintln!(
            "LEASEHOLD_TEST_POSTGRES_URL is not set: the PostgreSQL side of the suite is NOT run"
        );
    }
    let on_postgres = || server.clone().map(Backend::postgres);
    let mut trials = Vec::new();
    for test in contract {
        let path = test.path.clone();
        trials.push(
            test.clone()
                .trial(format!("sqlite::{path}"), Some(Backend::Sqlite)),
        );
        trials.push(test.trial(format!("postgres::{path}"), on_postgres()));
    }
    for test in sqlite {
        trials.push(test.clone().trial(test.path, Some(Backend::Sqlite)));
    }
    for test in postgres {
        trials.push(test.clone().trial(test.path, on_postgres()));
    }
    trials.push(Trial::test(
        "harness::every_test_here_is_listed_for_the_runner",
        || unlisted(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/api"))),
    ));
    let args = arguments(&mut trials);
    libtest_mimic::run(&args, trials).exit()
}

/// The command line, as libtest reads it: libtest-mimic takes one filter,
/// so with several (`cargo test -- locks waiting`) the trials are kept here
/// that match any of them.
fn arguments(trials: &mut Vec<Trial>) -> Arguments {
    const WITH_VALUE: [&str; 6] = [
        "--test-threads",
        "--logfile",
        "--skip",
        "--color",
        "--format",
        "-Z",
    ];
    let mut rest = Vec::new();
    let mut filters = Vec::new();
    let mut args = std::env::args();
    rest.extend(args.next());
    while let Some(arg) = args.next() {
        if WITH_VALUE.contains(&arg.as_str()) {
            rest.push(arg);
            rest.extend(args.next());
        } else if arg.starts_with('-') {
            rest.push(arg);
        } else {
            filters.push(arg);
        }
    }
    let mut parsed = Arguments::from_iter(rest);
    if let [filter] = filters.as_slice() {
        parsed.filter = Some(filter.clone());
    } else if !filters.is_empty() {
        let matches = |name: &str, filter: &String| {
            if parsed.exact {
                name == filter
            } else {
                name.contains(filter.as_str())
            }
        };
        trials.retain(|trial| filters.iter().any(|filter| matches(trial.name(), filter)));
    }
    parsed
}

/// Without libtest in this binary a `#[test]` or `#[tokio::test]` function
/// would be compiled out and never run, silently: such a function must be
/// listed in its module's `tests!` instead.
fn unlisted(dir: &Path) -> Result<(), Failed> {
    let mut found = Vec::new();
    test_attributes(dir, &mut found);
    if found.is_empty() {
        return Ok(());
    }
    Err(format!(
        "these test attributes would never run: remove them and list the function \
         in its module's tests! {{ … }}: {}",
        found.join(", ")
    )
    .into())
}

/// Where a line of a `.rs` file under `dir` opens with a test attribute.
fn test_attributes(dir: &Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("the suite's folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            test_attributes(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let text = std::fs::read_to_string(&path).expect("a test file");
            for (n, line) in text.lines().enumerate() {
                let line = line.trim_start();
                if line.starts_with("#[test]") || line.starts_with("#[tokio::test") {
                    found.push(format!("{}:{}", path.display(), n + 1));
                }
            }
        }
    }
}
