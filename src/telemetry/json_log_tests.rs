use std::io;
use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::MakeWriter;

use super::{JsonLines, SpanFields, timestamp, write_second};

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
        Some(format) => tracing::subscriber::with_default(
            builder.fmt_fields(SpanFields).event_format(format).finish(),
            log_everything,
        ),
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

#[test]
fn dates_and_seconds_are_those_of_the_calendar() {
    let cases = [
        (0, "1970-01-01T00:00:00"),
        (951_782_400, "2000-02-29T00:00:00"),
        (951_868_799, "2000-02-29T23:59:59"),
        (1_709_251_199, "2024-02-29T23:59:59"),
        (1_796_186_462, "2026-12-02T04:41:02"),
        (4_107_542_400, "2100-03-01T00:00:00"),
        (253_402_300_799, "9999-12-31T23:59:59"),
    ];
    for (unix, text) in cases {
        let mut out = String::new();
        write_second(&mut out, unix).unwrap();
        assert_eq!(out, text, "{unix}");
    }
}

#[test]
fn timestamps_are_those_of_the_stock_format() {
    use tracing_subscriber::fmt::format::Writer;
    use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
    // Each written both ways at the same moment, to the microsecond.
    let at = std::time::SystemTime::now();
    for offset in [0u64, 1, 59_999_999, 86_399_999_999, 3_155_760_000_000_000] {
        let moment = at + std::time::Duration::from_micros(offset);
        let mut ours = Vec::new();
        timestamp(&mut ours, moment).unwrap();
        let ours = String::from_utf8(ours).unwrap();
        // The stock format writes only the present: compare the present.
        if offset == 0 {
            let mut stock = String::new();
            SystemTime
                .format_time(&mut Writer::new(&mut stock))
                .unwrap();
            // Same second (or the next one, at a second's edge).
            assert_eq!(ours.len(), stock.len(), "{ours} {stock}");
            assert_eq!(ours[..16], stock[..16], "{ours} {stock}");
            assert!(ours.ends_with('Z') && ours.as_bytes()[19] == b'.', "{ours}");
        }
        let micros = moment
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_micros();
        assert!(ours.ends_with(&format!(".{micros:06}Z")), "{ours}");
    }
}
