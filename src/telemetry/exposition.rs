//! The Prometheus text format (version 0.0.4), written one family at a time:
//! each series of `/metrics` renders itself through this, so the syntax of a
//! line (its braces, quotes and escapes) is spelled once.

use std::fmt::{Display, Write};

use super::histogram::Histogram;

/// A family's `# TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// A label: its name, and its value unquoted (escaped when written).
pub type Label<'a> = (&'a str, &'a str);

/// The text of an exposition, being written.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// The `# HELP` and `# TYPE` lines that open a family; its samples follow.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) -> &mut Self {
        let kind = kind.as_str();
        // Writing to a `String` cannot fail.
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
        self
    }

    /// One sample of the family opened last: `name{labels} value`.
    pub fn sample(&mut self, name: &str, labels: &[Label<'_>], value: impl Display) -> &mut Self {
        self.text.push_str(name);
        if let [first, rest @ ..] = labels {
            self.label('{', first);
            for label in rest {
                self.label(',', label);
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
        self
    }

    /// A counter family of one unlabelled sample.
    pub fn counter(&mut self, name: &str, help: &str, value: impl Display) -> &mut Self {
        self.family(name, Kind::Counter, help)
            .sample(name, &[], value)
    }

    /// A gauge family of one unlabelled sample.
    pub fn gauge(&mut self, name: &str, help: &str, value: impl Display) -> &mut Self {
        self.family(name, Kind::Gauge, help)
            .sample(name, &[], value)
    }

    /// The `_bucket`, `_sum` and `_count` samples of one histogram of the
    /// family `name` opened last, each with `labels` (and `le` on buckets).
    pub fn histogram(
        &mut self,
        name: &str,
        labels: &[Label<'_>],
        histogram: &Histogram,
    ) -> &mut Self {
        let bucket = format!("{name}_bucket");
        for (le, count) in histogram.cumulative() {
            let le = le.map_or_else(|| "+Inf".to_owned(), |bound| bound.to_string());
            let mut with_le = labels.to_vec();
            with_le.push(("le", &le));
            self.sample(&bucket, &with_le, count);
        }
        self.sample(&format!("{name}_sum"), labels, histogram.sum())
            .sample(&format!("{name}_count"), labels, histogram.count())
    }

    /// The text written.
    pub fn finish(self) -> String {
        self.text
    }

    fn label(&mut self, before: char, (name, value): &Label<'_>) {
        let _ = write!(self.text, "{before}{name}=\"{}\"", escape(value));
    }
}

/// A label value as the text format quotes it.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_then_its_samples_with_labels_quoted_and_escaped() {
        let mut out = Exposition::default();
        out.family("x_total", Kind::Counter, "Things done")
            .sample("x_total", &[], 1)
            .sample("x_total", &[("route", "/a\"b\\"), ("code", "200")], 2.5);
        assert_eq!(
            out.finish(),
            "# HELP x_total Things done\n# TYPE x_total counter\nx_total 1\n\
             x_total{route=\"/a\\\"b\\\\\",code=\"200\"} 2.5\n"
        );
    }
}
