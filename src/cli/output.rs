//! Text output for people: aligned tables, relative times and sizes.

use std::fmt::Write;

/// `850ms`, `12s`, `4m 10s`, `2h 5m`, `3d 4h`.
pub fn human_ms(ms: u64) -> String {
    let s = ms / 1_000;
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 => format!("{s}s"),
        60_000..3_600_000 => two_units(s / 60, "m", s % 60, "s"),
        3_600_000..86_400_000 => two_units(s / 3_600, "h", s % 3_600 / 60, "m"),
        _ => two_units(s / 86_400, "d", s % 86_400 / 3_600, "h"),
    }
}

fn two_units(big: u64, big_unit: &str, small: u64, small_unit: &str) -> String {
    if small == 0 {
        format!("{big}{big_unit}")
    } else {
        format!("{big}{big_unit} {small}{small_unit}")
    }
}

/// `512 B`, `4.0 KiB`, `3.2 MiB`, `1.5 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

/// `expires in 12s`, or `expired` once the server says no time is left.
pub fn expires_in(ms: u64) -> String {
    if ms == 0 {
        "expired".into()
    } else {
        format!("expires in {}", human_ms(ms))
    }
}

/// Columns padded to their widest cell; the last column is not padded.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = headers.iter().map(|h| h.to_uppercase()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let last = row.len().saturating_sub(1);
        for (i, cell) in row.iter().enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                let _ = write!(out, "{cell:<width$}  ", width = widths[i]);
            }
        }
        out.push('\n');
    }
    out
}

/// The hint at the end of a list that has more pages.
pub fn more(next_cursor: Option<&str>) -> String {
    next_cursor
        .map(|c| format!("(more: --cursor {c})\n"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_a_person_would_say_them() {
        assert_eq!(human_ms(850), "850ms");
        assert_eq!(human_ms(12_400), "12s");
        assert_eq!(human_ms(250_000), "4m 10s");
        assert_eq!(human_ms(300_000), "5m");
        assert_eq!(human_ms(7_500_000), "2h 5m");
        assert_eq!(human_ms(3 * 86_400_000 + 4 * 3_600_000), "3d 4h");
        assert_eq!(expires_in(0), "expired");
        assert_eq!(expires_in(30_000), "expires in 30s");
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(4096), "4.0 KiB");
        assert_eq!(human_bytes(4_198_400), "4.0 MiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }

    #[test]
    fn tables_line_up() {
        let text = table(
            &["key", "holder"],
            &[
                vec!["a".into(), "me".into()],
                vec!["long-key".into(), "you".into()],
            ],
        );
        assert_eq!(text, "KEY       HOLDER\na         me\nlong-key  you\n");
    }
}
