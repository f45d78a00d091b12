//! `kx compare DIR DIR...`: result directories side by side, in the style of mmtests'
//! compare-kernels.
//!
//! Per scenario, config, variant and CPU count: the harmonic mean of ops/s in each directory,
//! and for every directory after the first its ratio to the first with the percentage:
//! `1.0712 (  7.12%)`. Each directory is one boot, and a boot is one unit: its rounds share
//! the boot's placement of every structure, the emulator's state and the host's load, so
//! round `r` of one boot is no pair for round `r` of another, and the rounds of one boot are
//! not independent samples of the boot-to-boot variation. With one boot per side there is
//! one unit per side, so the ratio of the boot means has no interval and no mark, and the
//! output says so (issue 32: pairing rounds across boots made intervals that left the
//! boot-to-boot variation out). A second table puts
//! each directory's own B/A comparisons side by side: those are measured within one boot,
//! so they compare across platforms (a TCG run, a host run, a real machine) where absolute
//! rates do not. A third table, where the directories have them, puts each variant's counted
//! cost per operation side by side (instructions and locked RMWs at one CPU, `costs` of
//! `results.json`, [`super::cost`]): counts, not timings, so unlike the rates they compare
//! across boots, and their ratio to the first directory's says what a change to the code
//! did to the work a variant executes. A missing point is `-`.

use super::html::Page;
use super::output::info_rows;
use super::plot;
use super::results_file::ResultsFile;
use bench::stats;
use bench::summary::Summary;
use bench::table::{Rate, Ratio};
use std::fmt::Write;
use std::path::PathBuf;

/// One directory being compared.
pub struct Side {
    /// Where it is.
    pub dir: PathBuf,
    /// Its `results.json`.
    pub results: ResultsFile,
    /// Its runs grouped.
    pub summary: Summary,
}

impl Side {
    /// Reads `dir`.
    pub fn read(dir: PathBuf) -> Result<Side, crate::RunError> {
        let results = ResultsFile::read(&dir)?;
        let summary = results.summary();
        Ok(Side {
            dir,
            results,
            summary,
        })
    }

    fn describe(&self) -> String {
        let m = self.results.machine.as_ref();
        let rev = &self.results.host.git_revision;
        format!(
            "{}  ({}, {} CPUs, {}, rev {})",
            self.dir.display(),
            m.map_or("?", |m| m.platform.name()),
            m.map_or(0, |m| m.vcpus),
            m.map_or("no machine record", |m| m.cpu_model.as_str()),
            &rev[..rev.len().min(12)]
        )
    }
}

type Key = (String, String, String, u32); // scenario, config, variant, cpus
type CmpKey = (String, String, String, String, u32); // scenario, config, a, b, cpus

fn keys(sides: &[Side]) -> Vec<Key> {
    let mut out: Vec<Key> = Vec::new();
    for s in sides {
        for p in &s.summary.points {
            for v in &p.variants {
                let k = (
                    p.scenario.clone(),
                    p.config.clone(),
                    v.variant.clone(),
                    p.cpus,
                );
                if !out.contains(&k) {
                    out.push(k);
                }
            }
        }
    }
    // Points a later directory adds join their scenario's group (a stable sort).
    let scenarios: Vec<String> = out.iter().map(|k| k.0.clone()).collect();
    out.sort_by_key(|k| scenarios.iter().position(|s| *s == k.0));
    out
}

fn rates<'a>(s: &'a Side, k: &Key) -> Option<&'a [f64]> {
    variant(s, k).map(|v| v.rates.as_slice())
}

fn variant<'a>(s: &'a Side, k: &Key) -> Option<&'a bench::summary::VariantPoint> {
    s.summary
        .points
        .iter()
        .find(|p| p.scenario == k.0 && p.config == k.1 && p.cpus == k.3)?
        .variant(&k.2)
}

/// The ratio of `other`'s boot mean to `base`'s: (hmean of `other`, ratio). Each side is
/// one boot, one unit (module doc): there is no interval.
pub fn cross_ratio(
    base: &bench::summary::VariantPoint,
    other: &bench::summary::VariantPoint,
) -> Option<(f64, f64)> {
    let hmean = stats::hmean(&other.rates).ok()?;
    let base = stats::hmean(&base.rates).ok()?;
    Some((hmean, hmean / base))
}

const COL: usize = 26;

/// The comparison as text (one table per scenario, then the B/A table).
#[must_use]
pub fn text(sides: &[Side]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "hmean ops/s per scenario, config, variant and CPU count; after [1]: hmean, ratio to [1]\n\
         and its percentage. Each directory is one boot, and a boot is one unit: the ratio is\n\
         of the boot means, unpaired, without an interval (one boot per side cannot measure\n\
         the boot-to-boot variation), so no ratio across directories is marked"
    );
    for (i, s) in sides.iter().enumerate() {
        let _ = writeln!(t, "  [{}] {}", i + 1, s.describe());
    }
    if sides.iter().any(|s| {
        s.results
            .machine
            .as_ref()
            .is_some_and(|m| m.platform == bench::Platform::QemuTcg)
    }) && sides.len() > 1
    {
        let _ = writeln!(
            t,
            "  note: TCG rates are emulation timings; across boots compare the B/A table below"
        );
    }
    let header = |t: &mut String, first: &str| {
        let _ = write!(t, "  {first:<40} {:>4}  {:>8}", "cpus", "[1]");
        for i in 2..=sides.len() {
            let _ = write!(t, "  {:<COL$}", format!("[{i}]"));
        }
        t.push('\n');
    };
    let mut scenario = String::new();
    for k in keys(sides) {
        if k.0 != scenario {
            scenario = k.0.clone();
            let _ = writeln!(t, "\n{scenario}");
            header(&mut t, "config / variant");
        }
        let base = rates(&sides[0], &k);
        let hmean = |r: Option<&[f64]>| r.and_then(|r| stats::hmean(r).ok());
        let _ = write!(
            t,
            "  {:<40} {:>4}  {:>8}",
            format!("{} {}", k.1, k.2),
            k.3,
            hmean(base).map_or("-".into(), |h| Rate(h).to_string())
        );
        for s in &sides[1..] {
            let cell = match (variant(&sides[0], &k), variant(s, &k)) {
                (Some(b), Some(o)) => match cross_ratio(b, o) {
                    Some((h, ratio)) => format!(
                        "{:>8} {}",
                        Rate(h).to_string(),
                        Ratio {
                            ratio,
                            significant: false
                        }
                    ),
                    None => "-".into(),
                },
                (None, Some(o)) => hmean(Some(&o.rates))
                    .map_or("-".into(), |h| format!("{:>8}", Rate(h).to_string())),
                _ => "-".into(),
            };
            let _ = write!(t, "  {cell:<COL$}");
        }
        t.push('\n');
    }
    let mut cmp_keys: Vec<CmpKey> = Vec::new();
    for s in sides {
        for c in s.summary.comparisons() {
            let k = (
                c.scenario.clone(),
                c.config.clone(),
                c.a.clone(),
                c.b.clone(),
                c.cpus,
            );
            if !cmp_keys.contains(&k) {
                cmp_keys.push(k);
            }
        }
    }
    if !cmp_keys.is_empty() {
        let _ = writeln!(t, "\nB/A within each directory (each measured in one boot)");
        let _ = write!(t, "  {:<40} {:>4}", "scenario config b/a", "cpus");
        for i in 1..=sides.len() {
            let _ = write!(t, "  {:<17}", format!("[{i}]"));
        }
        t.push('\n');
        for k in &cmp_keys {
            let _ = write!(
                t,
                "  {:<40} {:>4}",
                format!("{} {} {}/{}", k.0, k.1, k.3, k.2),
                k.4
            );
            for s in sides {
                let c = s.summary.comparisons().find(|c| {
                    c.scenario == k.0
                        && c.config == k.1
                        && c.a == k.2
                        && c.b == k.3
                        && c.cpus == k.4
                });
                let cell = c.map_or("-".into(), |c| {
                    Ratio {
                        ratio: c.ratio,
                        significant: c.marked.unwrap_or(c.significant),
                    }
                    .to_string()
                });
                let _ = write!(t, "  {cell:<17}");
            }
            t.push('\n');
        }
    }
    cost_table(&mut t, sides);
    t
}

/// Width of a cell of [`cost_table`]: `2100.0 / 10.75 / 22.40 (0.7500)` and a margin.
const COST_COL: usize = 33;

/// The counted costs side by side, when some directory has them: per variant, each
/// directory's instructions, locked RMWs and unchained transitions per operation, and after
/// the first directory the ratio of the instructions to the first's.
fn cost_table(t: &mut String, sides: &[Side]) {
    let mut keys: Vec<(&str, &str, &str)> = Vec::new();
    for s in sides {
        for c in &s.results.costs {
            let k = (c.scenario.as_str(), c.config.as_str(), c.variant.as_str());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    if keys.is_empty() {
        return;
    }
    let _ = writeln!(
        t,
        "\ncounted per op at one CPU: guest instructions / locked RMWs / unchained block\n\
         transitions; after [1]: the instructions' ratio to [1] (counts, not timings:\n\
         comparable across boots)"
    );
    let _ = write!(t, "  {:<40}", "scenario config variant");
    for i in 1..=sides.len() {
        let _ = write!(t, "  {:<COST_COL$}", format!("[{i}]"));
    }
    t.push('\n');
    let find = |s: &Side, k: &(&str, &str, &str)| {
        bench::cost::find(&s.results.costs, k.0, k.1, k.2).cloned()
    };
    let two = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.2}"));
    // The counts after the instructions: locked RMWs / unchained transitions.
    let rest = |c: &bench::Cost| format!("{} / {}", two(c.rmws_per_op), two(c.unchained_per_op));
    for k in &keys {
        let _ = write!(t, "  {:<40}", format!("{} {} {}", k.0, k.1, k.2));
        let base = find(&sides[0], k);
        for (i, s) in sides.iter().enumerate() {
            let cell = match (find(s, k), &base) {
                (None, _) => "-".to_owned(),
                (Some(c), Some(b)) if i > 0 && b.instructions_per_op > 0.0 => format!(
                    "{:.1} / {} ({:.4})",
                    c.instructions_per_op,
                    rest(&c),
                    c.instructions_per_op / b.instructions_per_op
                ),
                (Some(c), _) => format!("{:.1} / {}", c.instructions_per_op, rest(&c)),
            };
            let _ = write!(t, "  {cell:<COST_COL$}");
        }
        t.push('\n');
    }
}

/// The combined HTML page: each directory's information, the tables, and every scenario's
/// plots side by side.
#[must_use]
pub fn html(sides: &[Side], table: &str) -> String {
    let mut page = Page::new("memcg-lru benchmark comparison");
    for (i, s) in sides.iter().enumerate() {
        page.heading(&format!("[{}] {}", i + 1, s.dir.display()));
        page.info(&info_rows(&s.results));
        page.problems(&s.results.problems);
    }
    page.heading("Comparison");
    page.pre(table);
    let mut scenarios: Vec<String> = Vec::new();
    for s in sides {
        for (name, _) in s.summary.scenarios() {
            if !scenarios.iter().any(|x| x == name) {
                scenarios.push(name.to_owned());
            }
        }
    }
    for name in &scenarios {
        for (i, s) in sides.iter().enumerate() {
            if let Ok(Some(svg)) = plot::svg(&s.summary, name) {
                page.heading(&format!("{name} [{}]", i + 1));
                page.svg(&svg);
            }
        }
    }
    page.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(costs: Vec<bench::Cost>) -> Side {
        let mut results = ResultsFile::new(
            crate::bench::host::HostInfo::default(),
            &crate::bench::collect::Collected::default(),
        );
        results.costs = costs;
        let summary = results.summary();
        Side {
            dir: PathBuf::from("d"),
            results,
            summary,
        }
    }

    fn cost(variant: &str, instructions_per_op: f64, rmws_per_op: Option<f64>) -> bench::Cost {
        bench::Cost {
            scenario: "seed001-faultfree".into(),
            config: "anon".into(),
            variant: variant.into(),
            runs: 1,
            ops: 1000,
            instructions_per_op,
            rmws_per_op,
            blocks_per_op: rmws_per_op.map(|r| r * 25.0),
            unchained_per_op: rmws_per_op.map(|r| r * 2.0),
        }
    }

    #[test]
    fn counted_costs_side_by_side_with_the_ratio_to_the_first() {
        let sides = [
            side(vec![cost("base@+0", 2800.0, Some(12.75))]),
            side(vec![
                cost("base@+0", 2100.0, Some(10.75)),
                cost("patch1@+0", 2200.0, Some(10.75)),
            ]),
        ];
        let t = text(&sides);
        assert!(t.contains("counted per op at one CPU"), "{t}");
        let row = |l: &str| t.lines().find(|x| x.contains(l)).unwrap().to_owned();
        let base = row("seed001-faultfree anon base@+0");
        assert!(base.contains("2800.0 / 12.75 / 25.50"), "{base}");
        assert!(base.contains("2100.0 / 10.75 / 21.50 (0.7500)"), "{base}");
        let patch = row("seed001-faultfree anon patch1@+0");
        assert!(
            patch.contains("  -  ") && patch.contains("2200.0 / 10.75 / 21.50"),
            "{patch}"
        );
        assert!(!patch.contains('('), "no ratio without [1]'s: {patch}");
        // Without costs, no table.
        assert!(!text(&[side(Vec::new())]).contains("counted per op"));
    }
}
