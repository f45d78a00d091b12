//! `results.csv`: one row per `run` record (warm-ups included, marked), for spreadsheets and
//! scripts. RFC 4180: a header line, comma-separated fields, a field with a comma, quote or
//! line break quoted with its quotes doubled, CRLF-free (`\n` line ends, which every CSV
//! reader takes). Lock statistics and counters stay in `results.json`.
//!
//! `costs.csv`, in the same dialect: one row per variant with a counted cost
//! ([`bench::cost`]), beside the runs' rates; `rmw-sites.csv`: one row per variant and
//! instruction taking its locked RMWs ([`super::rmw_sites`]).

use bench::{Cost, Run};
use std::fmt::Write;

/// The header line's fields.
pub const HEADER: [&str; 13] = [
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
    "floor_ops_per_s",
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
        let number = |x: Option<f64>| x.map(|f| format!("{f:?}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{:?},{},{},{},{}",
            field(&r.scenario),
            field(&r.config),
            field(&r.variant),
            r.cpus,
            r.round,
            r.warmup,
            r.ops,
            r.ns,
            r.ops_per_s,
            number(r.floor_fraction),
            r.order,
            r.instance,
            number(r.floor_ops_per_s)
        );
    }
    out
}

/// `costs.csv`'s header line's fields.
pub const COST_HEADER: [&str; 9] = [
    "scenario",
    "config",
    "variant",
    "runs",
    "ops",
    "instructions_per_op",
    "rmws_per_op",
    "blocks_per_op",
    "unchained_per_op",
];

/// The whole of `costs.csv`.
#[must_use]
pub fn render_costs(costs: &[Cost]) -> String {
    let mut out = COST_HEADER.join(",");
    out.push('\n');
    for c in costs {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{:?},{},{},{}",
            field(&c.scenario),
            field(&c.config),
            field(&c.variant),
            c.runs,
            c.ops,
            c.instructions_per_op,
            // Empty where the counter tells no locked RMWs or blocks (the Linux reference).
            optional(c.rmws_per_op),
            optional(c.blocks_per_op),
            optional(c.unchained_per_op),
        );
    }
    out
}

/// `rmw-sites.csv`'s header line's fields.
pub const RMW_SITE_HEADER: [&str; 7] = [
    "scenario",
    "config",
    "variant",
    "function",
    "offset",
    "pc",
    "rmws_per_op",
];

/// The whole of `rmw-sites.csv`: per variant, its sites most first (`function` empty
/// where no symbol covers the instruction; `offset` and `pc` in hexadecimal).
#[must_use]
pub fn render_rmw_sites(variants: &[super::rmw_sites::VariantRmwSites]) -> String {
    let mut out = RMW_SITE_HEADER.join(",");
    out.push('\n');
    for v in variants {
        for s in &v.sites {
            let _ = writeln!(
                out,
                "{},{},{},{},{:#x},{:#x},{:?}",
                field(&v.scenario),
                field(&v.config),
                field(&v.variant),
                field(s.function.as_deref().unwrap_or("")),
                s.offset,
                s.pc,
                s.per_op
            );
        }
    }
    out
}

/// A count that may be absent: its shortest exact form, or an empty field.
fn optional(x: Option<f64>) -> String {
    x.map_or(String::new(), |x| format!("{x:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_round_trip_through_a_csv_reader() {
        let cost = Cost {
            scenario: "seed001-faultfree".into(),
            config: "anon".into(),
            variant: "base@+0'".into(),
            runs: 1,
            ops: 1280,
            instructions_per_op: 2753.25,
            rmws_per_op: Some(12.5),
            blocks_per_op: Some(301.5),
            unchained_per_op: Some(22.375),
        };
        let linux = Cost {
            scenario: "linux".into(),
            variant: "mmap-touch-munmap".into(),
            rmws_per_op: None,
            blocks_per_op: None,
            unchained_per_op: None,
            ..cost.clone()
        };
        let text = render_costs(&[cost, linux]);
        let mut rd = ::csv::Reader::from_reader(text.as_bytes());
        assert_eq!(
            rd.headers().unwrap().iter().collect::<Vec<_>>(),
            COST_HEADER
        );
        let rows: Vec<_> = rd.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(&rows[0][2], "base@+0'");
        assert_eq!(rows[0][5].parse::<f64>().unwrap(), 2753.25);
        assert_eq!(rows[0][6].parse::<f64>().unwrap(), 12.5);
        assert_eq!(rows[0][7].parse::<f64>().unwrap(), 301.5);
        assert_eq!(rows[0][8].parse::<f64>().unwrap(), 22.375);
        assert_eq!(&rows[1][6], "", "no locked RMWs counted: an empty field");
        assert_eq!((&rows[1][7], &rows[1][8]), ("", ""));
    }

    #[test]
    fn rmw_sites_round_trip_through_a_csv_reader() {
        use super::super::rmw_sites::{RmwSite, VariantRmwSites};
        let v = VariantRmwSites {
            scenario: "linux".into(),
            config: "linux".into(),
            variant: "mmap-touch-munmap".into(),
            ops: 512,
            sites: vec![
                RmwSite {
                    pc: 0xffff_ffff_8100_0104,
                    function: Some("release_pages".into()),
                    offset: 0x55,
                    per_op: 2.0,
                },
                RmwSite {
                    pc: 0x10,
                    function: None,
                    offset: 0,
                    per_op: 0.125,
                },
            ],
        };
        let text = render_rmw_sites(&[v]);
        let mut rd = ::csv::Reader::from_reader(text.as_bytes());
        assert_eq!(
            rd.headers().unwrap().iter().collect::<Vec<_>>(),
            RMW_SITE_HEADER
        );
        let rows: Vec<_> = rd.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (&rows[0][3], &rows[0][4], &rows[0][5]),
            ("release_pages", "0x55", "0xffffffff81000104")
        );
        assert_eq!(rows[0][6].parse::<f64>().unwrap(), 2.0);
        assert_eq!(&rows[1][3], "", "no symbol: an empty field");
    }

    #[test]
    fn quoting_round_trips_through_a_csv_reader() {
        let mut r = Run::new("s", "a,\"b\"\nc", "v", 2, 0, true, 10, 1000).unwrap();
        r.pair_with_floor(4e7).unwrap();
        let plain = Run::new("limit", "anon", "floor", 1, 1, false, 3, 7).unwrap();
        let text = render(&[r, plain]);
        let mut rd = ::csv::Reader::from_reader(text.as_bytes());
        assert_eq!(rd.headers().unwrap().iter().collect::<Vec<_>>(), HEADER);
        let rows: Vec<_> = rd.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(&rows[0][1], "a,\"b\"\nc");
        assert_eq!((&rows[0][5], &rows[0][9]), ("true", "0.25"));
        assert_eq!(&rows[0][12], "40000000.0");
        assert_eq!(rows[1][8].parse::<f64>().unwrap(), 3e9 / 7.0);
        assert_eq!((&rows[1][9], &rows[1][12]), ("", ""));
    }
}
