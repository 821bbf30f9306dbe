//! `--log-format json`: the lines of tracing-subscriber's JSON format, byte
//! for byte, written with less work. That format reads every span's fields
//! back from their JSON text and writes them again, twice a line (`span`
//! and `spans`), and writes the line in many small pieces; a line per
//! request made it a good part of a request's cost. Here a span's fields
//! are copied as the text they are kept in (a JSON object, keys sorted:
//! what reading and writing it again gives), and the line is built in one
//! buffer. Events bridged from the `log` crate go through the stock format.
//!
//! A span's fields are written as the stock `JsonFields` writes them (an
//! object, keys sorted) by `SpanFields`, without building a map of JSON
//! values first; the time is the stock `SystemTime`'s text, its date and
//! second formatted once a second.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::ops::Range;

use tracing::field::{Field, Visit};
use tracing::span::Record;
use tracing::{Event, Subscriber};
use tracing_serde::fields::AsMap;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::{Format, Json, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::{LookupSpan, SpanRef};

/// The event format of `--log-format json`.
pub struct JsonLines {
    /// For what this one does not write itself.
    stock: Format<Json, SystemTime>,
}

impl JsonLines {
    pub fn new() -> Self {
        Self {
            stock: tracing_subscriber::fmt::format().json(),
        }
    }
}

impl Default for JsonLines {
    fn default() -> Self {
        Self::new()
    }
}

thread_local! {
    /// The line being built, kept between lines so its room is reused.
    static LINE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A bridged `log` record: its level and target are in its fields, and the
/// stock format reads them from there.
fn bridged(event: &Event<'_>) -> bool {
    event.metadata().fields().field("log.target").is_some()
}

impl<S> FormatEvent<S, SpanFields> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, SpanFields>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        if bridged(event) {
            return self.stock.format_event(ctx, writer, event);
        }
        LINE.with(|line| {
            let Ok(mut line) = line.try_borrow_mut() else {
                // Logging while a line is built (from a `Debug` field, say).
                return self.stock.format_event(ctx, writer.by_ref(), event);
            };
            line.clear();
            build(&mut line, ctx, event)?;
            let text = std::str::from_utf8(&line).map_err(|_| fmt::Error)?;
            writer.write_str(text)
        })
    }
}

/// The keys and their order are the stock format's: `timestamp`, `level`,
/// `fields`, `target`, and where the event is in a span, `span` (the
/// event's span) and `spans` (the current spans, root first).
fn build<S>(
    line: &mut Vec<u8>,
    ctx: &FmtContext<'_, S, SpanFields>,
    event: &Event<'_>,
) -> fmt::Result
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let meta = event.metadata();
    line.extend_from_slice(b"{\"timestamp\":\"");
    timestamp(line, std::time::SystemTime::now())?;
    line.extend_from_slice(b"\",\"level\":\"");
    line.extend_from_slice(meta.level().as_str().as_bytes());
    line.extend_from_slice(b"\",\"fields\":");
    json(line, &event.field_map())?;
    line.extend_from_slice(b",\"target\":");
    json(line, meta.target())?;
    let current = event
        .parent()
        .and_then(|id| ctx.span(id))
        .or_else(|| ctx.lookup_current());
    if let Some(span) = &current {
        line.extend_from_slice(b",\"span\":");
        span_object(line, span)?;
        line.extend_from_slice(b",\"spans\":[");
        if let Some(leaf) = ctx.lookup_current() {
            for (i, span) in leaf.scope().from_root().enumerate() {
                if i > 0 {
                    line.push(b',');
                }
                span_object(line, &span)?;
            }
        }
        line.push(b']');
    }
    line.extend_from_slice(b"}\n");
    Ok(())
}

fn json(line: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) -> fmt::Result {
    serde_json::to_writer(&mut *line, value).map_err(|_| fmt::Error)
}

/// A span's fields with its `name` last, as the stock format writes them.
fn span_object<S>(line: &mut Vec<u8>, span: &SpanRef<'_, S>) -> fmt::Result
where
    S: for<'a> LookupSpan<'a>,
{
    let extensions = span.extensions();
    let fields = extensions
        .get::<FormattedFields<SpanFields>>()
        .map_or("{}", |f| f.fields.as_str());
    // A JSON object as `SpanFields` writes it: `{}`, or `{…}` with entries.
    let entries = fields
        .strip_prefix('{')
        .and_then(|f| f.strip_suffix('}'))
        .ok_or(fmt::Error)?;
    line.push(b'{');
    line.extend_from_slice(entries.as_bytes());
    if !entries.is_empty() {
        line.push(b',');
    }
    line.extend_from_slice(b"\"name\":");
    json(line, span.metadata().name())?;
    line.push(b'}');
    Ok(())
}

/// The date and second of a time as `SystemTime` writes them
/// (`2026-12-02T05:01:02`), kept for the second they name.
struct Second {
    unix: u64,
    text: String,
}

thread_local! {
    static SECOND: RefCell<Second> = const {
        RefCell::new(Second { unix: u64::MAX, text: String::new() })
    };
}

/// Writes `now` as `SystemTime` does: `2026-12-02T05:01:02.534831Z`.
fn timestamp(line: &mut Vec<u8>, now: std::time::SystemTime) -> fmt::Result {
    let since = now.duration_since(std::time::UNIX_EPOCH).ok();
    // Before 1970 or after 9999, years the stock text writes otherwise.
    let Some(since) = since.filter(|d| d.as_secs() < LAST_SECOND_OF_9999) else {
        let mut text = String::new();
        SystemTime.format_time(&mut Writer::new(&mut text))?;
        line.extend_from_slice(text.as_bytes());
        return Ok(());
    };
    SECOND.with(|second| {
        let mut second = second.borrow_mut();
        if second.unix != since.as_secs() {
            second.unix = since.as_secs();
            second.text.clear();
            write_second(&mut second.text, since.as_secs())?;
        }
        line.extend_from_slice(second.text.as_bytes());
        Ok::<_, fmt::Error>(())
    })?;
    std::io::Write::write_fmt(line, format_args!(".{:06}Z", since.subsec_micros()))
        .map_err(|_| fmt::Error)
}

/// 10000-01-01T00:00:00Z, in seconds since 1970.
const LAST_SECOND_OF_9999: u64 = 253_402_300_800;

/// The civil date and time of `unix` seconds since 1970 (UTC), to the second.
fn write_second(out: &mut String, unix: u64) -> fmt::Result {
    let days = (unix / 86_400) as i64;
    let in_day = unix % 86_400;
    // Days to a proleptic Gregorian date, in eras of 400 years from 0000-03-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let of_era = z.rem_euclid(146_097);
    let year_of_era = (of_era - of_era / 1_460 + of_era / 36_524 - of_era / 146_096) / 365;
    let day_of_year = of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        in_day / 3_600,
        in_day / 60 % 60,
        in_day % 60
    )
}

/// The field formatter of `--log-format json`: a span's fields as the
/// stock `JsonFields` writes them, an object with its keys sorted, each
/// value as `serde_json` writes it (a `Debug` or `Display` value as its
/// text). A field recorded again replaces the earlier value.
#[derive(Debug, Default, Clone, Copy)]
pub struct SpanFields;

impl<'w> FormatFields<'w> for SpanFields {
    fn format_fields<R: RecordFields>(&self, mut writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut entries = Entries::default();
        fields.record(&mut entries);
        entries.write(&mut writer)
    }

    fn add_fields(
        &self,
        current: &'w mut FormattedFields<Self>,
        fields: &Record<'_>,
    ) -> fmt::Result {
        let mut entries = Entries::default();
        if !current.fields.is_empty() {
            // Rare (a span's field given after it was made): read back the
            // object written before, as the stock formatter does.
            let before: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&current.fields).map_err(|_| fmt::Error)?;
            for (name, value) in &before {
                entries.push_with(name.clone(), |text| json(text, value))?;
            }
        }
        fields.record(&mut entries);
        current.fields.clear();
        entries.write(&mut current.as_writer())
    }
}

/// A span's fields as they are recorded: each name, and its value written
/// as JSON into one shared buffer.
#[derive(Default)]
struct Entries {
    values: Vec<u8>,
    entries: Vec<(Cow<'static, str>, Range<usize>)>,
    failed: bool,
}

impl Entries {
    fn push_with(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        write: impl FnOnce(&mut Vec<u8>) -> fmt::Result,
    ) -> fmt::Result {
        let start = self.values.len();
        write(&mut self.values)?;
        self.entries.push((name.into(), start..self.values.len()));
        Ok(())
    }

    fn push(&mut self, name: &'static str, value: &(impl serde::Serialize + ?Sized)) {
        if self.push_with(name, |text| json(text, value)).is_err() {
            self.failed = true;
        }
    }

    /// `{"name":value,…}`, names in order, the last value of a name kept.
    fn write(mut self, writer: &mut Writer<'_>) -> fmt::Result {
        if self.failed {
            return Err(fmt::Error);
        }
        // Stable: of a name recorded twice, the later entry comes last.
        self.entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut object = Vec::with_capacity(self.values.len() + 16 * self.entries.len());
        object.push(b'{');
        for (i, (name, range)) in self.entries.iter().enumerate() {
            if self.entries.get(i + 1).is_some_and(|next| next.0 == *name) {
                continue;
            }
            if object.len() > 1 {
                object.push(b',');
            }
            json(&mut object, name.as_ref())?;
            object.push(b':');
            object.extend_from_slice(&self.values[range.clone()]);
        }
        object.push(b'}');
        writer.write_str(std::str::from_utf8(&object).map_err(|_| fmt::Error)?)
    }
}

impl Visit for Entries {
    fn record_f64(&mut self, field: &Field, value: f64) {
        // As a JSON value: a number, or `null` where there is none.
        match serde_json::Number::from_f64(value) {
            Some(number) => self.push(field.name(), &number),
            None => self.push(field.name(), &()),
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.push(field.name(), &value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.push(field.name(), &value);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.push(field.name(), &value);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.push(field.name(), value);
    }

    fn record_bytes(&mut self, field: &Field, value: &[u8]) {
        self.push(field.name(), value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let name = field.name();
        // Bridged `log` records' own metadata, written elsewhere.
        if name.starts_with("log.") {
            return;
        }
        let name = name.strip_prefix("r#").unwrap_or(name);
        self.push(name, &format!("{value:?}"));
    }
}

#[cfg(test)]
#[path = "json_log_tests.rs"]
mod tests;
