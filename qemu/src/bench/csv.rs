//! `results.csv`: one row per `run` record (warm-ups included, marked), for spreadsheets and
//! scripts. RFC 4180: a header line, comma-separated fields, a field with a comma, quote or
//! line break quoted with its quotes doubled, CRLF-free (`\n` line ends, which every CSV
//! reader takes). Lock statistics and counters stay in `results.json`.

use bench::Run;
use std::fmt::Write;

/// The header line's fields.
pub const HEADER: [&str; 12] = [
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
    "order",
    "instance",
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
            "{},{},{},{},{},{},{},{},{:?},{},{},{}",
            field(&r.scenario),
            field(&r.config),
            field(&r.variant),
            r.cpus,
            r.round,
            r.warmup,
            r.ops,
            r.ns,
            r.ops_per_s,
            floor,
            r.order,
            r.instance
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_round_trips_through_a_csv_reader() {
        let mut r = Run::new("s", "a,\"b\"\nc", "v", 2, 0, true, 10, 1000).unwrap();
        r.floor_fraction = Some(0.25);
        let plain = Run::new("limit", "anon", "floor", 1, 1, false, 3, 7).unwrap();
        let text = render(&[r, plain]);
        let mut rd = ::csv::Reader::from_reader(text.as_bytes());
        assert_eq!(rd.headers().unwrap().iter().collect::<Vec<_>>(), HEADER);
        let rows: Vec<_> = rd.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(&rows[0][1], "a,\"b\"\nc");
        assert_eq!((&rows[0][5], &rows[0][9]), ("true", "0.25"));
        assert_eq!(rows[1][8].parse::<f64>().unwrap(), 3e9 / 7.0);
        assert_eq!(&rows[1][9], "");
    }
}
