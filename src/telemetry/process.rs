//! The standard `process_*` series of the Prometheus client libraries, read
//! from `/proc` at each scrape. Where `/proc` is missing (not Linux) the
//! series are left out rather than reported as zeros.

use super::exposition::{Exposition, Kind};

/// `/proc` counts CPU time and start time in `USER_HZ` ticks, which the
/// kernel fixes at 100 for every architecture's user-visible ABI.
const TICKS_PER_SECOND: f64 = 100.0;

/// What the process uses, at the moment of reading.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessStats {
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub cpu_seconds: f64,
    pub open_fds: u64,
    pub max_fds: Option<u64>,
    pub start_time_seconds: f64,
}

/// The fields of `/proc/self/stat` used here.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stat {
    cpu_ticks: u64,
    start_ticks: u64,
}

/// Parses `/proc/self/stat`. The command name (field 2) is in parentheses
/// and may itself hold spaces or parentheses, so fields are counted from
/// the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let after = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // `fields[0]` is field 3 (state); field n is at n - 3.
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        cpu_ticks: field(14)? + field(15)?,
        start_ticks: field(22)?,
    })
}

/// A `kB` line of `/proc/self/status` (`VmRSS:  1234 kB`), in bytes. Sizes
/// are read here rather than from `stat`, which counts pages of a size that
/// differs between machines.
fn parse_status_kb(text: &str, name: &str) -> Option<u64> {
    let rest = text
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?;
    let kb: u64 = rest.split_whitespace().next()?.parse().ok()?;
    Some(kb * 1024)
}

/// The soft limit on open files from `/proc/self/limits`; `None` when
/// unlimited.
fn parse_max_fds(text: &str) -> Option<u64> {
    let rest = text
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))?;
    rest.split_whitespace().next()?.parse().ok()
}

/// The boot time from `/proc/stat` (`btime 1700000000`), in unix seconds.
fn parse_boot_time(text: &str) -> Option<u64> {
    let rest = text.lines().find_map(|l| l.strip_prefix("btime "))?;
    rest.trim().parse().ok()
}

impl ProcessStats {
    /// Reads this process's figures; `None` where `/proc` cannot be read.
    pub fn read() -> Option<Self> {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let stat = parse_stat(&read("/proc/self/stat")?)?;
        let status = read("/proc/self/status")?;
        let boot = parse_boot_time(&read("/proc/stat")?)?;
        Some(Self {
            resident_bytes: parse_status_kb(&status, "VmRSS")?,
            virtual_bytes: parse_status_kb(&status, "VmSize")?,
            cpu_seconds: stat.cpu_ticks as f64 / TICKS_PER_SECOND,
            open_fds: std::fs::read_dir("/proc/self/fd").ok()?.count() as u64,
            max_fds: read("/proc/self/limits").and_then(|l| parse_max_fds(&l)),
            start_time_seconds: boot as f64 + stat.start_ticks as f64 / TICKS_PER_SECOND,
        })
    }

    pub fn render(&self, out: &mut Exposition) {
        let gauges: [(&str, &str, Kind, f64); 5] = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                Kind::Gauge,
                self.resident_bytes as f64,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                Kind::Gauge,
                self.virtual_bytes as f64,
            ),
            (
                "process_cpu_seconds_total",
                "Total user and system CPU time spent in seconds",
                Kind::Counter,
                self.cpu_seconds,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                Kind::Gauge,
                self.open_fds as f64,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                Kind::Gauge,
                self.start_time_seconds,
            ),
        ];
        for (name, help, kind, value) in gauges {
            out.family(name, kind, help).sample(name, &[], value);
        }
        if let Some(max) = self.max_fds {
            let help = "Maximum number of open file descriptors";
            out.gauge("process_max_fds", help, max);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let text = "4242 (lease (hold) d) S 1 4242 4242 0 -1 4194560 900 0 0 0 \
                    250 130 0 0 20 0 9 0 123456 987654321 2048 18446744073709551615";
        assert_eq!(
            parse_stat(text),
            Some(Stat {
                cpu_ticks: 380,
                start_ticks: 123456
            })
        );
        assert_eq!(parse_stat("4242 (truncated) S 1"), None);
    }

    #[test]
    fn status_sizes_are_read_in_bytes() {
        let text = "Name:\tleasehold\nVmPeak:\t  20000 kB\nVmSize:\t  18000 kB\n\
                    VmRSS:\t   5120 kB\nThreads:\t9\n";
        assert_eq!(parse_status_kb(text, "VmRSS"), Some(5120 * 1024));
        assert_eq!(parse_status_kb(text, "VmSize"), Some(18000 * 1024));
        assert_eq!(parse_status_kb(text, "VmSwap"), None);
    }

    #[test]
    fn the_soft_open_files_limit_is_the_max() {
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max processes             63000                63000                processes \n\
                    Max open files            1024                 524288               files     \n";
        assert_eq!(parse_max_fds(text), Some(1024));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(parse_max_fds(unlimited), None);
    }

    #[test]
    fn boot_time_is_the_btime_line() {
        let text = "cpu  1 2 3 4\nintr 5\nctxt 6\nbtime 1700000000\nprocesses 7\n";
        assert_eq!(parse_boot_time(text), Some(1_700_000_000));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read_and_rendered_on_linux() {
        let stats = ProcessStats::read().expect("/proc/self is readable on Linux");
        let mut out = Exposition::default();
        stats.render(&mut out);
        let out = out.finish();
        assert!(
            out.contains("# TYPE process_cpu_seconds_total counter\n"),
            "{out}"
        );
        assert!(stats.open_fds >= 3, "{stats:?}");
    }
}
