//! `--log-format json`: the lines of tracing-subscriber's JSON format, byte
//! for byte, written with less work. That format reads every span's fields
//! back from their JSON text and writes them again, twice a line (`span`
//! and `spans`), and writes the line in many small pieces; a line per
//! request made it a good part of a request's cost. Here a span's fields
//! are copied as the text they are kept in (a JSON object, keys sorted:
//! what reading and writing it again gives), and the line is built in one
//! buffer. Events bridged from the `log` crate go through the stock format.

use std::cell::RefCell;
use std::fmt;

use tracing::{Event, Subscriber};
use tracing_serde::fields::AsMap;
use tracing_subscriber::fmt::format::{Format, Json, JsonFields, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormattedFields};
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

impl<S> FormatEvent<S, JsonFields> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, JsonFields>,
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
    ctx: &FmtContext<'_, S, JsonFields>,
    event: &Event<'_>,
) -> fmt::Result
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let meta = event.metadata();
    let mut timestamp = String::new();
    SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
    line.extend_from_slice(b"{\"timestamp\":");
    json(line, &timestamp)?;
    line.extend_from_slice(b",\"level\":\"");
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
        .get::<FormattedFields<JsonFields>>()
        .map_or("{}", |f| f.fields.as_str());
    // A JSON object as `JsonFields` writes it: `{}`, or `{…}` with entries.
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

#[cfg(test)]
#[path = "json_log_tests.rs"]
mod tests;
