//! The results table as plain text, with each seed's published figure beside ours.
//!
//! Per scenario: a heading (name, what the workers do, what one op is, the seed's claim),
//! then per config and CPU count one row per variant (harmonic mean of ops/s, coefficient of
//! variation, and for fault scenarios the fraction of the `limit` floor measured in the
//! same rounds at that CPU count)
//! and one row per comparison: B/A in mmtests' style (`1.0712 (  7.12%)*`, `*` when the
//! comparison is marked: only a primary comparison can be, see [`crate::summary`]; an
//! interval that excludes 1.0 without the mark gets a line saying why), the interval, and the
//! seed's figure for the same comparison at the nearest thread count it published
//! (`seed +17.9% @20`). [`Style::Wide`] fits 100 columns (a terminal, a 100x75 framebuffer
//! console, the runner); [`Style::Compact`] fits 80 (an 80x25 screen): it drops min/max and
//! the interval, and abbreviates.
//!
//! Where the runs carry hardware counts, each point is followed by their rows: per variant
//! the mean cycles, instructions and LLC misses per op over the measured rounds, and per
//! comparison the same three as B/A ([`crate::summary::PmuPoint`]). Where no run has any,
//! the table says nothing of its own: the platform's note says why (the kernel's under TCG:
//! "no PMU (TCG): no hardware counters"), once, with the notes.
//!
//! The table opens with one verdict line per seed ([`crate::verdict`]). The run's `note`
//! records follow the table ([`Table::with_notes`]). The benchmark engine
//! prints it at the end of a run in both styles (the platform shows each where it fits); the
//! runner prints the wide form and puts it in `index.html`.

use crate::catalog::{self, Scenario};
use crate::record::Comparison;
use crate::summary::{PmuPoint, Point, Summary};
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

/// The table's width class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// At most 100 columns.
    Wide,
    /// At most 80 columns.
    Compact,
}

impl Style {
    /// The widest line this style prints.
    #[must_use]
    pub const fn columns(self) -> usize {
        match self {
            Style::Wide => 100,
            Style::Compact => 80,
        }
    }
}

/// The table of a [`Summary`], printable with `{}`.
pub struct Table<'a> {
    summary: &'a Summary,
    style: Style,
    notes: &'a [String],
    premises: &'a [crate::record::Premise],
    costs: &'a [crate::cost::Cost],
}

impl<'a> Table<'a> {
    /// The table of `summary` in `style`.
    #[must_use]
    pub fn new(summary: &'a Summary, style: Style) -> Self {
        Table {
            summary,
            style,
            notes: &[],
            premises: &[],
            costs: &[],
        }
    }

    /// The same table with the variants' counted costs ([`crate::cost`]): under each
    /// configuration's first point, per variant the guest instructions and locked RMWs per
    /// operation at one CPU, and per comparison at that point their B/A.
    #[must_use]
    pub fn with_costs(self, costs: &'a [crate::cost::Cost]) -> Self {
        Table { costs, ..self }
    }

    /// The same table with each scenario's premises (the `end` record's) summed up under
    /// its rows: per premise, how many of its verdicts held and the range of its figures.
    #[must_use]
    pub fn with_premises(self, premises: &'a [crate::record::Premise]) -> Self {
        Table { premises, ..self }
    }

    /// The premise lines of scenario `name`: one per (premise, expectation).
    fn premise_lines(&self, name: &str) -> Vec<String> {
        let mut keys: Vec<(&str, &str)> = Vec::new();
        for p in self.premises.iter().filter(|p| p.scenario == name) {
            if !keys.contains(&(p.name.as_str(), p.expect.as_str())) {
                keys.push((&p.name, &p.expect));
            }
        }
        keys.iter()
            .map(|&(n, e)| {
                let of: Vec<_> = self
                    .premises
                    .iter()
                    .filter(|p| p.scenario == name && p.name == n && p.expect == e)
                    .collect();
                let judged: Vec<_> = of.iter().filter(|p| p.applicable).collect();
                let not_applicable = of.len() - judged.len();
                if judged.is_empty() {
                    return alloc::format!(
                        "premise {n} ({e}): not applicable at 1 CPU ({not_applicable} points)"
                    );
                }
                let held = judged.iter().filter(|p| p.held).count();
                let lo = judged
                    .iter()
                    .map(|p| p.figure)
                    .fold(f64::INFINITY, f64::min);
                let hi = judged
                    .iter()
                    .map(|p| p.figure)
                    .fold(f64::NEG_INFINITY, f64::max);
                let mut line = alloc::format!(
                    "premise {n} ({e}): held {held}/{}, figures {lo:.4}..{hi:.4}",
                    judged.len()
                );
                if not_applicable > 0 {
                    line.push_str(&alloc::format!(
                        "; not applicable at 1 CPU: {not_applicable}"
                    ));
                }
                line
            })
            .collect()
    }

    /// The same table with the run's `note` records printed under it.
    #[must_use]
    pub fn with_notes(self, notes: &'a [String]) -> Self {
        Table { notes, ..self }
    }
}

/// A rate in at most 7 characters: `4.740M`, `12.35M`, `123.5k`, `999.0`, `0.123`.
pub struct Rate(pub f64);

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        let (scaled, unit) = match v.abs() {
            a if a >= 999.95e9 => (v / 1e12, "T"),
            a if a >= 999.95e6 => (v / 1e9, "G"),
            a if a >= 999.95e3 => (v / 1e6, "M"),
            a if a >= 999.95 => (v / 1e3, "k"),
            _ => (v, ""),
        };
        let s = match scaled.abs() {
            a if a >= 99.995 => alloc::format!("{scaled:.1}{unit}"),
            a if a >= 9.9995 => alloc::format!("{scaled:.2}{unit}"),
            _ => alloc::format!("{scaled:.3}{unit}"),
        };
        f.pad(&s)
    }
}

/// A ratio in mmtests' compare style: `1.0712 (  7.12%)*` (17 characters up to +/-99.99%; a space instead
/// of the star when not significant).
pub struct Ratio {
    /// The ratio.
    pub ratio: f64,
    /// Whether it is significant.
    pub significant: bool,
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = (self.ratio - 1.0) * 100.0;
        let s = alloc::format!(
            "{:.4} ({:>6.2}%){}",
            self.ratio,
            pct,
            if self.significant { '*' } else { ' ' }
        );
        f.pad(&s)
    }
}

/// A signed percentage with one decimal: `+17.9%`, `-6.4%`.
struct Pct(f64);

impl fmt::Display for Pct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = alloc::format!("{:+.1}%", (self.0 - 1.0) * 100.0);
        f.pad(&s)
    }
}

/// Writes `text` as indented lines of at most `width` columns, breaking at spaces.
fn wrap(f: &mut impl Write, indent: &str, first: &str, text: &str, width: usize) -> fmt::Result {
    let mut line = alloc::string::String::from(indent);
    line.push_str(first);
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !empty && line.len() + 1 + word.len() > width {
            writeln!(f, "{line}")?;
            line.clear();
            line.push_str(indent);
            for _ in 0..first.len() {
                line.push(' ');
            }
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    writeln!(f, "{line}")
}

/// A short label for a comparison: `patch1@+0/base@+0`, or `B/A`.
fn label(c: &Comparison) -> alloc::string::String {
    alloc::format!("{}/{}", c.b, c.a)
}

impl Table<'_> {
    fn heading(&self, f: &mut fmt::Formatter<'_>, name: &str, s: Option<&Scenario>) -> fmt::Result {
        let width = self.style.columns();
        writeln!(f)?;
        match s {
            Some(s) => {
                wrap(f, "", "", &alloc::format!("{name}: {}", s.summary), width)?;
                wrap(f, "  ", "op: ", s.op, width)?;
                match &s.published {
                    Some(p) => wrap(f, "  ", "seed: ", p.text, width)?,
                    None if s.name == catalog::LIMIT => wrap(
                        f,
                        "  ",
                        "",
                        "the floor each fault scenario's `floor` column divides by",
                        width,
                    )?,
                    None => {}
                }
            }
            None if name == crate::summary::LINUX_REFERENCE => wrap(
                f,
                "",
                "",
                &alloc::format!(
                    "{name}: Linux's own fault path, booted in the same QEMU after the \
                     benchmark (mmap / touch every 4 KiB page / munmap per CPU; floor = rate \
                     / the floor over the whole run)"
                ),
                width,
            )?,
            None => writeln!(f, "{name}: (not in the catalog)")?,
        }
        match self.style {
            Style::Wide => writeln!(
                f,
                "  {:<12} {:>4}  {:<24} {:>8} {:>6} {:>8} {:>8} {:>6}  floor 95%",
                "config", "cpus", "variant", "hmean/s", "CV", "min", "max", "floor"
            ),
            Style::Compact => writeln!(
                f,
                "  {:<10} {:>4} {:<24} {:>8} {:>6} {:>6}",
                "config", "cpus", "variant", "hmean/s", "CV", "floor"
            ),
        }
    }

    fn point(
        &self,
        f: &mut fmt::Formatter<'_>,
        p: &Point,
        s: Option<&Scenario>,
        first: bool,
    ) -> fmt::Result {
        let (config, cpus) = if first {
            (p.config.as_str(), alloc::format!("{}", p.cpus))
        } else {
            ("", alloc::format!("{}", p.cpus))
        };
        for (i, v) in p.variants.iter().enumerate() {
            let (config, cpus) = if i == 0 {
                (config, cpus.as_str())
            } else {
                ("", "")
            };
            let floor = match v.floor_fraction {
                Some(x) => alloc::format!("{:.1}%", x * 100.0),
                None => alloc::string::String::new(),
            };
            let floor_ci = match v.floor_ci {
                Some((lo, hi)) => alloc::format!("{:.1}-{:.1}%", lo * 100.0, hi * 100.0),
                None => alloc::string::String::new(),
            };
            let cv = alloc::format!("{:.1}%", v.stats.cv * 100.0);
            match self.style {
                Style::Wide => {
                    let line = alloc::format!(
                        "  {:<12} {:>4}  {:<24} {:>8} {:>6} {:>8} {:>8} {:>6}  {}",
                        clip(config, 12),
                        cpus,
                        clip(&v.variant, 24),
                        Rate(v.stats.hmean),
                        cv,
                        Rate(v.stats.min),
                        Rate(v.stats.max),
                        floor,
                        floor_ci
                    );
                    // No padding after the last column (a variant without a floor).
                    writeln!(f, "{}", line.trim_end())?;
                }
                Style::Compact => writeln!(
                    f,
                    "  {:<10} {:>4} {:<24} {:>8} {:>6} {:>6}",
                    clip(config, 10),
                    cpus,
                    clip(&v.variant, 24),
                    Rate(v.stats.hmean),
                    cv,
                    floor
                )?,
            }
        }
        for c in &p.comparisons {
            let ratio = Ratio {
                ratio: c.ratio,
                significant: c.marked.unwrap_or(c.significant),
            };
            let seed = s
                .and_then(|s| catalog::published_near(s, &c.a, &c.b, &c.config, c.cpus))
                .map(|pt| alloc::format!("seed {} @{}", Pct(pt.ratio), pt.threads))
                .unwrap_or_default();
            match self.style {
                Style::Wide => {
                    let ci = match (c.ci_low, c.ci_high) {
                        (Some(lo), Some(hi)) => alloc::format!("[{lo:.4}, {hi:.4}]"),
                        _ => "[1 round]".into(),
                    };
                    writeln!(
                        f,
                        "  {:<12} {:>4}  {:<24} {} {:<18} {}",
                        "",
                        "",
                        clip(&label(c), 24),
                        ratio,
                        ci,
                        seed
                    )?
                }
                Style::Compact => writeln!(
                    f,
                    "  {:<10} {:>4} {:<24} {} {}",
                    "",
                    "",
                    clip(&label(c), 24),
                    ratio,
                    seed
                )?,
            }
            if let Some(why) = &c.unmarked_why {
                let text = alloc::format!("its interval excludes 1, but {why}: not marked");
                wrap(f, "                     ", "", &text, self.style.columns())?;
            }
        }
        self.pmu_rows(f, p)
    }

    /// The indent of rows printed under the variant column (hardware counts, costs).
    fn under_variants(&self) -> String {
        let indent = match self.style {
            Style::Wide => 21,
            Style::Compact => 18,
        };
        " ".repeat(indent)
    }

    /// The point's hardware-counter rows, when some variant has counts.
    fn pmu_rows(&self, f: &mut fmt::Formatter<'_>, p: &Point) -> fmt::Result {
        if p.variants.iter().all(|v| v.pmu.is_none()) {
            return Ok(());
        }
        let pad = self.under_variants();
        writeln!(
            f,
            "{pad}{:<24} {:>9} {:>9} {:>9}",
            "hw counters per op", "cycles", "instr", "LLC miss"
        )?;
        for v in &p.variants {
            let Some(x) = &v.pmu else {
                writeln!(f, "{pad}{:<24} {:>9}", clip(&v.variant, 24), "-")?;
                continue;
            };
            writeln!(
                f,
                "{pad}{:<24} {:>9} {:>9} {:>9}",
                clip(&v.variant, 24),
                PerOp(Some(x.cycles_per_op)),
                PerOp(Some(x.instructions_per_op)),
                PerOp(x.llc_misses_per_op),
            )?;
        }
        for c in &p.comparisons {
            let (Some(a), Some(b)) = (pmu_of(p, &c.a), pmu_of(p, &c.b)) else {
                continue;
            };
            let r = b.over(a);
            let ratio = |x: Option<f64>| match x {
                Some(x) => alloc::format!("{x:.4}"),
                None => "-".into(),
            };
            writeln!(
                f,
                "{pad}{:<24} {:>9} {:>9} {:>9}",
                clip(&label(c), 24),
                ratio(r.cycles),
                ratio(r.instructions),
                ratio(r.llc_misses),
            )?;
        }
        Ok(())
    }

    /// The counted costs of the point's variants (the first point of its configuration),
    /// when some variant has one.
    fn cost_rows(&self, f: &mut fmt::Formatter<'_>, p: &Point) -> fmt::Result {
        let cost = |v: &str| crate::cost::find(self.costs, &p.scenario, &p.config, v);
        if p.variants.iter().all(|v| cost(&v.variant).is_none()) {
            return Ok(());
        }
        let pad = self.under_variants();
        writeln!(
            f,
            "{pad}{:<24} {:>9} {:>9} {:>9}",
            "counted per op, 1 CPU", "instr", "lock RMW", "unchained"
        )?;
        for v in &p.variants {
            match cost(&v.variant) {
                Some(c) => writeln!(
                    f,
                    "{pad}{:<24} {:>9} {:>9} {:>9}",
                    clip(&v.variant, 24),
                    PerOp(Some(c.instructions_per_op)),
                    PerOp(c.rmws_per_op),
                    PerOp(c.unchained_per_op),
                )?,
                None => writeln!(f, "{pad}{:<24} {:>9}", clip(&v.variant, 24), "-")?,
            }
        }
        for c in &p.comparisons {
            let (Some(a), Some(b)) = (cost(&c.a), cost(&c.b)) else {
                continue;
            };
            let ratio = |x: Option<f64>, y: Option<f64>| match (x, y) {
                (Some(x), Some(y)) if y > 0.0 => alloc::format!("{:.4}", x / y),
                _ => "-".into(),
            };
            writeln!(
                f,
                "{pad}{:<24} {:>9} {:>9} {:>9}",
                clip(&label(c), 24),
                ratio(Some(b.instructions_per_op), Some(a.instructions_per_op)),
                ratio(b.rmws_per_op, a.rmws_per_op),
                ratio(b.unchained_per_op, a.unchained_per_op),
            )?;
            let def = crate::catalog::scenario(&p.scenario)
                .and_then(|s| s.comparisons.iter().find(|d| d.a == c.a && d.b == c.b));
            if let Some(g) =
                def.and_then(|d| crate::cost::placement_gap(self.costs, &p.scenario, &p.config, d))
            {
                writeln!(
                    f,
                    "{pad}! same code, {:+.4} unchained/op in B: placement",
                    g.unchained_b_minus_a
                )?;
            }
        }
        Ok(())
    }
}

fn pmu_of<'p>(p: &'p Point, variant: &str) -> Option<&'p PmuPoint> {
    p.variant(variant)?.pmu.as_ref()
}

/// A per-op count in at most 9 characters: `0.0123`, `123.4`, `1234567.8`, `1.235e8`; `-`
/// when absent.
struct PerOp(Option<f64>);

impl fmt::Display for PerOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self.0 {
            None => alloc::string::String::from("-"),
            Some(x) if x < 10.0 => alloc::format!("{x:.4}"),
            Some(x) if x < 1e7 => alloc::format!("{x:.1}"),
            Some(x) => alloc::format!("{x:.3e}"),
        };
        f.pad(&s)
    }
}

/// With `ci_width=`: how many comparisons reached the target half-width, and the widest.
#[must_use]
pub fn widths_line(summary: &Summary) -> Option<String> {
    let with: alloc::vec::Vec<&Comparison> = summary
        .comparisons()
        .filter(|c| c.ci_target.is_some())
        .collect();
    let target = with.first()?.ci_target?;
    let reached = with
        .iter()
        .filter(|c| c.width_reached == Some(true))
        .count();
    let widest = with
        .iter()
        .filter_map(|c| Some((c.half_width()?, *c)))
        .max_by(|x, y| x.0.total_cmp(&y.0));
    let mut line = alloc::format!(
        "Interval half-widths: {reached} of {} comparisons reached the target +-{:.2}%",
        with.len(),
        target * 100.0
    );
    if let Some((h, c)) = widest {
        line.push_str(&alloc::format!(
            "; the widest +-{:.2}% ({} {} {} @{}, {} rounds)",
            h * 100.0,
            c.scenario,
            c.config,
            label(c),
            c.cpus,
            c.n
        ));
    }
    line.push('.');
    Some(line)
}

/// `s` cut to `n` characters (names are ASCII; a longer one loses its tail).
fn clip(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

impl fmt::Display for Table<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self.style.columns();
        let verdicts = crate::verdict::verdicts(self.summary);
        if !verdicts.is_empty() {
            wrap(
                f,
                "",
                "",
                "Verdicts (per experiment: its primary comparison, the seed's headline at the \
                 most CPUs, against the seed's figure at the nearest thread count):",
                width,
            )?;
            for v in &verdicts {
                wrap(f, "  ", "", &alloc::format!("{v}"), width)?;
            }
            writeln!(f)?;
        }
        if let Some(line) = widths_line(self.summary) {
            wrap(f, "", "", &line, width)?;
            writeln!(f)?;
        }
        wrap(
            f,
            "",
            "",
            "Results: harmonic mean of the measured rounds' ops/s per variant; ratio = B/A \
             (with two or more instances per variant: the geometric mean of the per-instance \
             ratios, its 95% interval with the instances' placement noise in it; with one: \
             paired by round); * = the experiment's primary comparison (the seed's headline \
             at the most CPUs), its interval excluding 1.0 after Holm's correction over the \
             six experiments, with the A/A control (A'/A, a second instance of the baseline) \
             shown within its margin (a quarter of the seed's effect, at least +-5%); every \
             other comparison is exploratory and never marked; \
             floor = rate / the limit floor's at the same CPU count, the larger of the two \
             measured right before and after the run (the geometric mean of the rounds' \
             fractions; floor 95% = their interval, \
             how far the rounds spread); seed = the seed's published \
             B/A at the nearest thread count (@N).",
            width,
        )?;
        if self.summary.has_pmu() {
            wrap(
                f,
                "",
                "",
                "hw counters per op: the mean over the measured rounds of every CPU's count \
                 over the run's ops (cycles = unhalted core cycles, instr = instructions \
                 retired, LLC miss = last-level-cache misses; all rings, the whole run on each \
                 CPU); the B/A rows divide those means.",
                width,
            )?;
        }
        if !self.costs.is_empty() {
            wrap(
                f,
                "",
                "",
                "counted per op, 1 CPU: each variant's guest instructions, locked \
                 read-modify-writes and unchained block transitions (returns, indirect \
                 branches and jumps to another 4 KiB page, which TCG looks up instead of \
                 linking; a few ns each under TCG, nearly free on a real CPU) per operation in \
                 its measured runs at one CPU, counted under QEMU's TCG (deterministic for \
                 this kernel, no timing in them; shown under each configuration's first \
                 point); the B/A rows divide them. The Linux reference is counted the same \
                 way, between marks its /init stores; - where a count was not made. `!` under \
                 a B/A row whose B only moves data: A and B run the same code from two \
                 copies, whose unchained transitions differ by more than 0.1 per op only \
                 where the linker put them, so a time difference of that size is the \
                 build's, not the seed's.",
                width,
            )?;
        }
        if self.summary.points.is_empty() {
            writeln!(f, "\n(no measured runs)")?;
        }
        for (name, s) in self.summary.scenarios() {
            self.heading(f, name, s)?;
            let mut last_config: Option<&str> = None;
            for p in self.summary.scenario_points(name) {
                let first = last_config != Some(p.config.as_str());
                last_config = Some(&p.config);
                self.point(f, p, s, first)?;
                if first {
                    self.cost_rows(f, p)?;
                }
            }
            for line in self.premise_lines(name) {
                wrap(f, "  ", "", &line, width)?;
            }
        }
        if !self.notes.is_empty() {
            writeln!(f, "\nnotes:")?;
            for n in self.notes {
                wrap(f, "  ", "- ", n, width)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Run;
    use alloc::string::{String, ToString};
    use alloc::vec::Vec;

    fn runs() -> Vec<Run> {
        let mut out = Vec::new();
        let mut push = |s: &str, c: &str, v: &str, cpus: u32, ops: u64| {
            for round in 0..=3u32 {
                let ops = ops + u64::from(round) * 7;
                out.push(Run::new(s, c, v, cpus, round, round == 0, ops, 1_000_000_000).unwrap());
            }
        };
        for cpus in [1, 2] {
            for (i, v) in [
                "base@+0",
                "base@+64",
                "patch1@+0",
                "patch1@+64",
                "patch1+2@+0",
                "patch1+2@+64",
            ]
            .into_iter()
            .enumerate()
            {
                push(
                    "seed001-faultfree",
                    "shmem",
                    v,
                    cpus,
                    4_740_000 + 100_000 * i as u64,
                );
                push(
                    "seed001-faultfree",
                    "anon",
                    v,
                    cpus,
                    3_040_000 + 10_000 * i as u64,
                );
            }
            push("limit", "anon", "floor", cpus, 12_000_000);
            push(
                crate::summary::LINUX_REFERENCE,
                "anon",
                "mmap-touch-munmap",
                cpus,
                3_000_000,
            );
            push("seed002-reclaim", "1500", "A", cpus, 12);
            push("seed002-reclaim", "1500", "B", cpus, 114);
        }
        out
    }

    fn render(style: Style) -> String {
        Table::new(&Summary::new(&runs(), &[]), style).to_string()
    }

    #[test]
    fn fits_its_width_and_shows_everything() {
        for style in [Style::Wide, Style::Compact] {
            let t = render(style);
            for line in t.lines() {
                assert!(
                    line.len() <= style.columns(),
                    "{style:?} {}: {line}",
                    line.len()
                );
            }
            assert!(t.contains("seed001-faultfree: every CPU faults"));
            assert!(t.contains("patch1+2@+64/base@+64"));
            assert!(t.contains("seed +17.9% @20"), "{t}");
            assert!(t.contains("seed +850.0% @8"), "{t}");
            assert!(t.contains("floor"));
            assert!(t.contains("linux: Linux's own fault path"), "{t}");
            assert!(t.contains("mmap-touch-munmap"), "{t}");
        }
        let wide = render(Style::Wide);
        // Exploratory (not the primary comparison): never marked.
        assert!(
            wide.contains("1.0422 (  4.22%)  [1.0422, 1.0422]"),
            "{wide}"
        );
        assert!(wide.contains("4.740M"));
    }

    /// A fault scenario's variant paired with the floor of its rounds shows the fraction's
    /// interval beside it (wide only); one without pairing shows none.
    #[test]
    fn paired_floors_show_their_interval() {
        let mut runs = runs();
        for r in runs.iter_mut().filter(|r| {
            r.scenario == "seed001-faultfree"
                && r.config == "anon"
                && r.variant == "base@+0"
                && r.cpus == 1
        }) {
            // Fractions of 1/2, 1/2 x 1.1 and 1/2 / 1.1 over the rounds.
            let spread = [1.0, 1.0, 1.1, 1.0 / 1.1][r.round as usize];
            r.pair_with_floor(r.ops_per_s * 2.0 / spread).unwrap();
        }
        let summary = Summary::new(&runs, &[]);
        let wide = Table::new(&summary, Style::Wide).to_string();
        assert!(wide.contains("floor 95%"), "{wide}");
        let row = wide
            .lines()
            .find(|l| l.contains(" base@+0 ") && l.contains("anon"))
            .expect("the paired row");
        // exp(+-t(0.975, 2) * ln 1.1 / sqrt 3) around 50%: 39.5% to 63.4%.
        assert!(row.ends_with("50.0%  39.5-63.4%"), "{row:?}");
        assert!(row.len() <= Style::Wide.columns(), "{row:?}");
        let other = wide
            .lines()
            .find(|l| l.contains(" base@+64 "))
            .expect("an unpaired row");
        // Its fraction is over the run's floor: no interval, and no padding after it.
        assert!(!other.contains('-'), "{other}");
        assert!(!other.ends_with(' '), "{other:?}");
        assert!(
            wide.lines().any(|l| l.ends_with("floor  floor 95%")),
            "{wide}"
        );
        // The compact table (the kernel's screen) has no room for it.
        let compact = Table::new(&summary, Style::Compact).to_string();
        assert!(compact.contains("50.0%"), "{compact}");
        assert!(!compact.contains("39.5-63.4"), "{compact}");
    }

    #[test]
    fn number_formats() {
        assert_eq!(Rate(4_740_000.0).to_string(), "4.740M");
        assert_eq!(Rate(12_345_678.0).to_string(), "12.35M");
        assert_eq!(Rate(123_456.0).to_string(), "123.5k");
        assert_eq!(Rate(999.0).to_string(), "999.0");
        assert_eq!(Rate(999.96).to_string(), "1.000k");
        assert_eq!(Rate(0.1234).to_string(), "0.123");
        assert_eq!(
            Ratio {
                ratio: 1.0712,
                significant: true
            }
            .to_string(),
            "1.0712 (  7.12%)*"
        );
        assert_eq!(
            Ratio {
                ratio: 0.9362,
                significant: false
            }
            .to_string(),
            "0.9362 ( -6.38%) "
        );
    }

    #[test]
    fn the_widths_line_counts_what_reached_the_target() {
        let runs = runs();
        let mut cmps: Vec<Comparison> = Summary::new(&runs, &[]).comparisons().cloned().collect();
        assert!(
            widths_line(&Summary::new(&runs, &cmps)).is_none(),
            "no target, no line"
        );
        let widths: Vec<f64> = cmps.iter().map(|c| c.half_width().unwrap()).collect();
        let target = widths.iter().copied().fold(f64::INFINITY, f64::min) * 1.0001;
        for c in &mut cmps {
            c.set_target(Some(target));
        }
        let line = widths_line(&Summary::new(&runs, &cmps)).unwrap();
        let narrow = widths.iter().filter(|w| **w <= target).count();
        assert!(narrow >= 1 && narrow < cmps.len());
        let want = alloc::format!(
            "Interval half-widths: {narrow} of {} comparisons reached the target",
            cmps.len()
        );
        assert!(line.starts_with(&want), "{line}");
        assert!(line.contains("; the widest +-"), "{line}");
    }

    #[test]
    fn empty_summary_says_so() {
        let t = Table::new(&Summary::default(), Style::Compact).to_string();
        assert!(t.contains("(no measured runs)"));
    }

    #[test]
    fn premises_are_summed_up_under_their_scenario() {
        let summary = Summary::new(&runs(), &[]);
        let p = |variant: &str, held: bool, figure: f64| crate::record::Premise {
            scenario: "seed002-reclaim".into(),
            config: "1500".into(),
            variant: variant.into(),
            cpus: 2,
            instance: 0,
            name: "activations_per_op".into(),
            held,
            applicable: true,
            across_cpus: false,
            figure,
            expect: "> 0".into(),
        };
        let one_cpu = |name: &str| crate::record::Premise {
            cpus: 1,
            name: name.into(),
            held: false,
            applicable: false,
            across_cpus: true,
            figure: 0.0,
            ..p("A", false, 0.0)
        };
        let premises = [
            p("A", true, 0.25),
            p("B", false, 0.0),
            one_cpu("activations_per_op"),
            one_cpu("handoffs_per_op"),
        ];
        let t = Table::new(&summary, Style::Wide)
            .with_premises(&premises)
            .to_string();
        assert!(
            t.contains("premise handoffs_per_op (> 0): not applicable at 1 CPU (1 points)"),
            "{t}"
        );
        let at = t.find(
            "premise activations_per_op (> 0): held 1/2, figures 0.0000..0.2500; not \
             applicable at 1 CPU: 1",
        );
        assert!(at.is_some(), "{t}");
        // Under its own scenario's rows, after seed002's heading.
        assert!(
            t.find("\nseed002-reclaim:")
                .is_some_and(|h| h < at.unwrap()),
            "{t}"
        );
        let none = Table::new(&summary, Style::Wide).to_string();
        assert!(!none.contains("premise "));
    }

    /// seed002's runs with counts: A at 2000 cycles/op, 1000 instructions/op, 4 LLC
    /// misses/op per round; B at half the cycles, the same instructions, 6 misses/op.
    fn runs_with_pmu() -> Vec<Run> {
        let mut runs = runs();
        for r in &mut runs {
            if r.scenario != "seed002-reclaim" {
                continue;
            }
            let (cycles, misses) = if r.variant == "A" {
                (2000, 4)
            } else {
                (1000, 6)
            };
            let per_cpu = (0..r.cpus)
                .map(|cpu| crate::record::PmuCpu {
                    cpu,
                    cycles: cycles * r.ops / u64::from(r.cpus),
                    instructions: 1000 * r.ops / u64::from(r.cpus),
                    llc_refs: Some(10 * r.ops / u64::from(r.cpus)),
                    llc_misses: Some(misses * r.ops / u64::from(r.cpus)),
                })
                .collect();
            r.pmu = Some(crate::record::RunPmu::new(per_cpu, r.ops));
        }
        runs
    }

    #[test]
    fn hardware_counters_per_variant_and_their_ratio() {
        let summary = Summary::new(&runs_with_pmu(), &[]);
        let row = |name: &str, a: &str, b: &str, c: &str| {
            alloc::format!("{name:<24} {a:>9} {b:>9} {c:>9}")
        };
        for style in [Style::Wide, Style::Compact] {
            let t = Table::new(&summary, style).to_string();
            assert!(t.lines().all(|l| l.len() <= style.columns()), "{t}");
            assert!(
                t.contains("hw counters per op: the mean over the measured rounds"),
                "{t}"
            );
            // Two points (1 and 2 CPUs) of seed002 have counts; seed001's have none.
            let header = row("hw counters per op", "cycles", "instr", "LLC miss");
            assert_eq!(t.matches(&header).count(), 2, "{t}");
            assert!(t.contains(&row("A", "2000.0", "1000.0", "4.0000")), "{t}");
            assert!(t.contains(&row("B", "1000.0", "1000.0", "6.0000")), "{t}");
            assert!(t.contains(&row("B/A", "0.5000", "1.0000", "1.5000")), "{t}");
        }
        let plain = Table::new(&Summary::new(&runs(), &[]), Style::Wide).to_string();
        assert!(!plain.contains("hw counters"), "{plain}");
    }

    #[test]
    fn counted_costs_under_each_configurations_first_point() {
        let summary = Summary::new(&runs(), &[]);
        let cost =
            |v: &str, instructions_per_op: f64, rmws_per_op: Option<f64>| crate::cost::Cost {
                scenario: "seed002-reclaim".into(),
                config: "1500".into(),
                variant: v.into(),
                runs: 1,
                ops: 10,
                instructions_per_op,
                rmws_per_op,
                blocks_per_op: rmws_per_op.map(|_| instructions_per_op / 8.0),
                unchained_per_op: rmws_per_op.map(|_| instructions_per_op / 100.0),
            };
        let costs = [cost("A", 2000.0, Some(8.0)), cost("B", 500.0, Some(8.0))];
        let row = |name: &str, a: &str, b: &str, c: &str| {
            alloc::format!("{name:<24} {a:>9} {b:>9} {c:>9}")
        };
        for style in [Style::Wide, Style::Compact] {
            let t = Table::new(&summary, style).with_costs(&costs).to_string();
            assert!(t.lines().all(|l| l.len() <= style.columns()), "{t}");
            assert!(
                t.contains("counted per op, 1 CPU: each variant's guest"),
                "{t}"
            );
            // seed002 has points at 1 and 2 CPUs: the rows follow the first only.
            let header = row("counted per op, 1 CPU", "instr", "lock RMW", "unchained");
            assert_eq!(t.matches(&header).count(), 1, "{t}");
            let lines: Vec<&str> = t.lines().collect();
            let at = lines.iter().position(|l| l.contains(&header)).unwrap();
            let seed002 = lines.iter().position(|l| l.starts_with("seed002")).unwrap();
            let words = |l: &str| l.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
            let one_cpu = (seed002..lines.len())
                .find(|&i| words(lines[i]) == "1500 1")
                .unwrap();
            let two_cpus = (seed002..lines.len())
                .find(|&i| words(lines[i]) == "2 A")
                .unwrap();
            assert!(one_cpu < at && at < two_cpus, "{t}");
            assert!(t.contains(&row("A", "2000.0", "8.0000", "20.0")), "{t}");
            assert!(t.contains(&row("B", "500.0", "8.0000", "5.0000")), "{t}");
            assert!(t.contains(&row("B/A", "0.2500", "1.0000", "0.2500")), "{t}");
        }
        let plain = Table::new(&summary, Style::Wide).to_string();
        assert!(!plain.contains("counted per op"), "{plain}");
        // A cost without locked RMWs or blocks (a results file from before the Linux
        // reference was counted under the plugin): `-`, and no ratio of them.
        let costs = [cost("A", 2000.0, Some(8.0)), cost("B", 500.0, None)];
        let t = Table::new(&summary, Style::Wide)
            .with_costs(&costs)
            .to_string();
        assert!(t.contains(&row("B", "500.0", "-", "-")), "{t}");
        assert!(t.contains(&row("B/A", "0.2500", "-", "-")), "{t}");
    }

    #[test]
    fn a_layout_comparisons_placement_gap_is_marked_under_its_ratio() {
        let summary = Summary::new(&runs(), &[]);
        let cost = |v: &str, unchained: f64| crate::cost::Cost {
            scenario: "seed001-faultfree".into(),
            config: "anon".into(),
            variant: v.into(),
            runs: 1,
            ops: 10,
            instructions_per_op: 1900.0,
            rmws_per_op: Some(10.0),
            blocks_per_op: Some(300.0),
            unchained_per_op: Some(unchained),
        };
        // patch1 only moves data (a layout comparison), patch1+2 changes the stat path
        // (code): the same gap of 0.68 is a placement only in the first.
        let costs = [
            cost("base@+0", 14.50),
            cost("patch1@+0", 15.18),
            cost("patch1+2@+0", 15.18),
            cost("base@+64", 14.50),
            cost("patch1@+64", 14.55),
        ];
        for style in [Style::Wide, Style::Compact] {
            let t = Table::new(&summary, style).with_costs(&costs).to_string();
            assert!(t.lines().all(|l| l.len() <= style.columns()), "{t}");
            let lines: Vec<&str> = t.lines().collect();
            let marks: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i].trim_start().starts_with("! same code"))
                .collect();
            assert_eq!(marks.len(), 1, "{t}");
            assert!(lines[marks[0]].contains("+0.6800 unchained/op"), "{t}");
            assert!(
                lines[marks[0] - 1]
                    .trim_start()
                    .starts_with("patch1@+0/base@+0"),
                "{t}"
            );
        }
        let even = [cost("base@+0", 14.50), cost("patch1@+0", 14.55)];
        let t = Table::new(&summary, Style::Wide)
            .with_costs(&even)
            .to_string();
        assert!(!t.contains("! same code"), "{t}");
    }

    #[test]
    fn per_op_formats() {
        assert_eq!(PerOp(Some(0.01234)).to_string(), "0.0123");
        assert_eq!(PerOp(Some(1234.56)).to_string(), "1234.6");
        assert_eq!(PerOp(Some(9_999_999.0)).to_string(), "9999999.0");
        assert_eq!(PerOp(Some(123_456_789.0)).to_string(), "1.235e8");
        assert_eq!(PerOp(None).to_string(), "-");
    }

    #[test]
    fn notes_follow_the_table_wrapped() {
        let notes = [
            "linux reference: without a memcg, because /sys/fs/cgroup is not a cgroup2 mount \
             on this host (cgroup v1 controllers are mounted there instead)"
                .to_string(),
            "second".to_string(),
        ];
        let summary = Summary::new(&runs(), &[]);
        let t = Table::new(&summary, Style::Compact)
            .with_notes(&notes)
            .to_string();
        let tail = &t[t.find("\nnotes:\n").expect("a notes section")..];
        assert!(
            tail.contains("  - linux reference: without a memcg,"),
            "{tail}"
        );
        assert!(tail.contains("\n  - second\n"), "{tail}");
        assert!(t.lines().all(|l| l.len() <= 80), "{t}");
        let none = Table::new(&Summary::default(), Style::Wide).to_string();
        assert!(!none.contains("notes:"));
    }
}
