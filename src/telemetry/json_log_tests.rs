use std::io;
use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::MakeWriter;

use super::JsonLines;

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Capture {
    type Writer = Capture;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[derive(Debug)]
struct Failure;

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("disk \"full\"\n")
    }
}

impl std::error::Error for Failure {}

/// Spans and events of every kind of field the server logs, and some it
/// does not yet.
fn log_everything() {
    tracing::info!(listen = "127.0.0.1:1", reaper_batch = 100u32, "starting");
    tracing::warn!(
        ratio = 0.1f64,
        huge = u64::MAX,
        negative = -3i64,
        flag = true,
        wait = ?std::time::Duration::from_millis(1500),
        error = &Failure as &dyn std::error::Error,
        "odd \"quotes\", é, \u{1}\ttabs"
    );
    let outer = tracing::info_span!(
        "request",
        http.method = "POST",
        http.route = "/v1/locks/{key}/acquire",
        auth.token = tracing::field::Empty,
        request.id = tracing::field::Empty,
    );
    let _outer = outer.enter();
    outer.record("request.id", "abc \"1\"");
    tracing::info!(http.status = 201u16, latency_ms = 2.8f64, "request served");
    let inner = tracing::info_span!("store", lock.key = "a/b", n = 3, share = 0.5f64);
    inner.record("auth.token", "never here");
    let _inner = inner.enter();
    outer.record("auth.token", "ops");
    tracing::error!("inside both");
    let empty = tracing::info_span!("empty");
    tracing::info!(parent: &empty, "with an explicit parent");
    tracing::info!(parent: None, "with no parent");
}

fn lines(format: Option<JsonLines>) -> Vec<String> {
    let capture = Capture::default();
    let builder = tracing_subscriber::fmt()
        .with_writer(capture.clone())
        .with_max_level(tracing::Level::TRACE)
        .json();
    match format {
        Some(format) => {
            tracing::subscriber::with_default(builder.event_format(format).finish(), log_everything)
        }
        None => tracing::subscriber::with_default(builder.finish(), log_everything),
    }
    let text = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    // The same but for the time each was written.
    text.lines()
        .map(|l| {
            let rest = l.split_once(",\"level\"").expect("a level").1;
            assert!(l.starts_with("{\"timestamp\":\""), "{l}");
            rest.to_owned()
        })
        .collect()
}

#[test]
fn lines_are_those_of_the_stock_json_format() {
    let stock = lines(None);
    let ours = lines(Some(JsonLines::new()));
    assert_eq!(stock.len(), 6);
    assert_eq!(ours, stock);
}
