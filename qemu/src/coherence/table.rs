//! The coherence counts as a reader wants them: per point and variant, transfers per
//! operation over the measured rounds (with the lowest and highest round), and the lines that
//! moved most with the code that moved them; as a terminal table and as CSV.

use super::results::{CoherenceResults, CoherenceRun, Hot};
use coherence::report::Transactions;
use std::fmt::Write;

/// One variant at one point, over its measured rounds.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantFigures {
    /// Scenario.
    pub scenario: String,
    /// Configuration.
    pub config: String,
    /// CPUs.
    pub cpus: u32,
    /// Variant.
    pub variant: String,
    /// Measured rounds.
    pub rounds: u32,
    /// Operations over them.
    pub ops: u64,
    /// Transfers (read + RFO HITM) per operation, 64-byte lines.
    pub transfers: f64,
    /// The same with 128-byte units (`None`: pairs were off).
    pub transfers_128: Option<f64>,
    /// Lowest and highest round's transfers per operation (64-byte).
    pub range: (f64, f64),
    /// Upgrades per operation (64-byte).
    pub upgrades: f64,
    /// Invalidations per operation (64-byte).
    pub invalidations: f64,
    /// Locked RMWs per operation.
    pub rmws: f64,
    /// Guest instructions per operation, in the measured windows (`0`: not counted).
    pub insns: f64,
    /// Loads and stores per operation.
    pub accesses: f64,
    /// The lowest window overlap of its rounds.
    pub overlap: Option<f64>,
    /// Hot 64-byte lines summed over the rounds, most transactions first.
    pub hot: Vec<Hot>,
}

/// Figures per point and variant, in the order the runs came.
#[must_use]
pub fn figures(c: &CoherenceResults) -> Vec<VariantFigures> {
    let mut keys: Vec<(String, String, u32, String)> = Vec::new();
    for r in c.runs.iter().filter(|r| !r.warmup) {
        let k = (
            r.scenario.clone(),
            r.config.clone(),
            r.cpus,
            r.variant.clone(),
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(scenario, config, cpus, variant)| {
            let runs = c.measured(&scenario, &config, cpus, &variant);
            variant_figures(scenario, config, cpus, variant, &runs)
        })
        .collect()
}

fn variant_figures(
    scenario: String,
    config: String,
    cpus: u32,
    variant: String,
    runs: &[&CoherenceRun],
) -> VariantFigures {
    let ops: u64 = runs.iter().map(|r| r.ops).sum();
    let per = |n: u64| if ops == 0 { 0.0 } else { n as f64 / ops as f64 };
    let sum = |bytes: u64| -> Option<Transactions> {
        let mut t = Transactions::default();
        let mut any = false;
        for r in runs {
            if let Some(m) = r.model(bytes) {
                t.add(&m.total);
                any = true;
            }
        }
        any.then_some(t)
    };
    let t64 = sum(64).unwrap_or_default();
    let rounds: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.model(64).and_then(|m| r.per_op(m.total.transfers())))
        .collect();
    let range = (
        rounds.iter().copied().fold(f64::INFINITY, f64::min),
        rounds.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let mut hot: Vec<Hot> = Vec::new();
    for h in runs.iter().filter_map(|r| r.model(64)).flat_map(|m| &m.hot) {
        match hot.iter_mut().find(|x| x.addr == h.addr) {
            Some(x) => {
                x.counts.add(&h.counts);
                for v in &h.vcpus {
                    if !x.vcpus.contains(v) {
                        x.vcpus.push(*v);
                    }
                }
                for (f, n) in &h.functions {
                    match x.functions.iter_mut().find(|(g, _)| g == f) {
                        Some((_, m)) => *m += n,
                        None => x.functions.push((f.clone(), *n)),
                    }
                }
            }
            None => hot.push(h.clone()),
        }
    }
    let weight = |t: &Transactions| t.transfers() + t.upgrades;
    hot.sort_by_key(|h| std::cmp::Reverse(weight(&h.counts)));
    for h in &mut hot {
        h.functions.sort_by_key(|f| std::cmp::Reverse(f.1));
        h.vcpus.sort_unstable();
    }
    VariantFigures {
        scenario,
        config,
        cpus,
        variant,
        rounds: runs.len() as u32,
        ops,
        transfers: per(t64.transfers()),
        transfers_128: sum(128).map(|t| per(t.transfers())),
        range: if rounds.is_empty() { (0.0, 0.0) } else { range },
        upgrades: per(t64.upgrades),
        invalidations: per(t64.invalidations),
        rmws: per(runs.iter().map(|r| r.accesses.rmws).sum()),
        insns: per(runs.iter().map(|r| r.accesses.insns).sum()),
        accesses: per(runs
            .iter()
            .map(|r| r.accesses.loads + r.accesses.stores)
            .sum()),
        overlap: runs
            .iter()
            .filter_map(|r| r.overlap)
            .fold(None, |m: Option<f64>, o| Some(m.map_or(o, |m| m.min(o)))),
        hot,
    }
}

/// The terminal table: per point, one row per variant, then each variant's three hottest
/// lines with their code.
#[must_use]
pub fn render(c: &CoherenceResults) -> String {
    let mut s = c.verdict_text();
    let _ = writeln!(
        s,
        "Coherence (the plugin's model: {} KiB {}-way private caches per vCPU; per operation, \
         measured rounds; a transfer is a line that moved modified between vCPUs)",
        c.header.cache_kib, c.header.ways
    );
    let _ = writeln!(
        s,
        "{:<28} {:>4} {:<14} {:>10} {:>17} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}",
        "scenario/config",
        "cpus",
        "variant",
        "xfer/op",
        "(rounds min-max)",
        "xfer128",
        "upgr/op",
        "insn/op",
        "rmw/op",
        "acc/op",
        "overlap"
    );
    let figs = figures(c);
    for f in &figs {
        let _ = writeln!(
            s,
            "{:<28} {:>4} {:<14} {:>10.4} {:>17} {:>9} {:>9.4} {:>8.0} {:>8.2} {:>8.0} {:>8}",
            format!("{} {}", f.scenario, f.config),
            f.cpus,
            f.variant,
            f.transfers,
            format!("({:.4}-{:.4})", f.range.0, f.range.1),
            f.transfers_128
                .map_or_else(|| "-".into(), |t| format!("{t:.4}")),
            f.upgrades,
            f.insns,
            f.rmws,
            f.accesses,
            f.overlap.map_or_else(|| "-".into(), |o| format!("{o:.2}")),
        );
    }
    let _ = writeln!(
        s,
        "Hottest lines (64-byte), transfers+upgrades per operation:"
    );
    for f in figs.iter().filter(|f| f.cpus > 1) {
        for h in f.hot.iter().take(3) {
            let w = (h.counts.transfers() + h.counts.upgrades) as f64 / f.ops.max(1) as f64;
            let code: Vec<String> = h
                .functions
                .iter()
                .take(3)
                .map(|(n, c)| format!("{n} ({c})"))
                .collect();
            let _ = writeln!(
                s,
                "  {} {} cpus={} {}: {:#x}{} {:.4}/op vcpus {:?}: {}{}",
                f.scenario,
                f.config,
                f.cpus,
                f.variant,
                h.addr,
                h.symbol
                    .as_ref()
                    .map_or_else(String::new, |n| format!(" ({n})")),
                w,
                h.vcpus,
                code.join(", "),
                h.fields
                    .as_ref()
                    .map_or_else(String::new, |f| format!("\n      on {f}")),
            );
        }
    }
    for p in &c.problems {
        let _ = writeln!(s, "coherence: {p}");
    }
    s
}

/// One CSV row per run and unit size.
#[must_use]
pub fn csv(c: &CoherenceResults) -> String {
    let mut s = String::from(
        "scenario,config,variant,cpus,round,warmup,ops,line_bytes,read_hitm,rfo_hitm,upgrades,\
         invalidations,cross_socket,loads,stores,rmws,insns,overlap,complete\n",
    );
    for r in &c.runs {
        for m in &r.models {
            let t = &m.total;
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                r.scenario,
                r.config,
                r.variant,
                r.cpus,
                r.round,
                r.warmup,
                r.ops,
                m.line_bytes,
                t.read_hitm,
                t.rfo_hitm,
                t.upgrades,
                t.invalidations,
                t.cross_socket,
                r.accesses.loads,
                r.accesses.stores,
                r.accesses.rmws,
                r.accesses.insns,
                r.overlap.map_or_else(String::new, |o| format!("{o:.4}")),
                r.complete
            );
        }
    }
    s
}
