//! What a measurement prints: one `result key=value ...` line per figure
//! set, percentiles, and the process's peak resident set size.
//!
//! Owns the output format `cargo xtask bench` parses. Never decides what to
//! measure.

use std::fmt::Write as _;
use std::time::Duration;

/// One line of results: ordered `key=value` pairs (values have no spaces).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    fields: Vec<(String, String)>,
}

impl Record {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `key=value`; spaces in the value become `_`.
    pub fn field(mut self, key: &str, value: impl ToString) -> Self {
        self.fields
            .push((key.to_owned(), value.to_string().replace(' ', "_")));
        self
    }

    /// Adds a duration in microseconds with three decimals.
    pub fn micros(self, key: &str, duration: Duration) -> Self {
        self.field(key, format!("{:.3}", duration.as_secs_f64() * 1e6))
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The line: `result k=v k=v ...`.
    pub fn line(&self) -> String {
        let mut line = String::from("result");
        for (key, value) in &self.fields {
            let _ = write!(line, " {key}={value}");
        }
        line
    }

    /// Parses a line printed by [`Self::line`]; `None` for any other line.
    pub fn parse(line: &str) -> Option<Self> {
        let rest = line.strip_prefix("result ")?;
        let fields = rest
            .split_whitespace()
            .map(|pair| {
                let (key, value) = pair.split_once('=')?;
                Some((key.to_owned(), value.to_owned()))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Self { fields })
    }
}

/// The `q`-quantile (0.0..=1.0) of `samples` (nearest rank); zero when empty.
pub fn quantile(samples: &[Duration], q: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The median of `samples`.
pub fn median(samples: &[Duration]) -> Duration {
    quantile(samples, 0.5)
}

/// A field of `/proc/self/status` in KiB (`VmHWM` is the peak RSS,
/// `VmRSS` the current one); `None` where the file does not exist.
pub fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

#[cfg(test)]
mod tests;
