//! `results.csv`: one row per `run` record (warm-ups included, marked), for spreadsheets and
//! scripts. RFC 4180: a header line, comma-separated fields, a field with a comma, quote or
//! line break quoted with its quotes doubled, CRLF-free (`\n` line ends, which every CSV
//! reader takes). Lock statistics and counters stay in `results.json`.

use bench::Run;
use std::fmt::Write;

/// The header line's fields.
pub const HEADER: [&str; 10] = [
    "scenario",
    "config",
    "variant",
    "cpus",
    "round",
    "warmup",
    "ops",
    "ns",
    "ops_per_s",
    "floor_fraction",
];

/// One CSV field.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// The whole file.
#[must_use]
pub fn render(runs: &[Run]) -> String {
    let mut out = HEADER.join(",");
    out.push('\n');
    for r in runs {
        let floor = r
            .floor_fraction
            .map(|f| format!("{f:?}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{:?},{}",
            field(&r.scenario),
            field(&r.config),
            field(&r.variant),
            r.cpus,
            r.round,
            r.warmup,
            r.ops,
            r.ns,
            r.ops_per_s,
            floor
        );
    }
    out
}
