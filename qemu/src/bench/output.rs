//! Writing a results directory: `results.json`, `results.csv`, one `<scenario>.svg` and one
//! `<scenario>-forest.svg` per scenario and `index.html` (opening with the verdicts, the
//! lock statistics as a table), the same for `kx bench` and `kx import`.

use super::csv;
use super::forest;
use super::html::Page;
use super::plot;
use super::results_file::ResultsFile;
use crate::RunError;
use bench::{Run, Style, Summary, Table};
use std::path::{Path, PathBuf};

/// The files a results directory holds, as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// The directory.
    pub dir: PathBuf,
    /// Every file written, in order.
    pub files: Vec<PathBuf>,
}

/// A fresh directory under `parent` named `stamp` (`stamp-2`, ... if taken).
pub fn fresh_dir(parent: &Path, stamp: &str) -> Result<PathBuf, RunError> {
    std::fs::create_dir_all(parent).map_err(|e| RunError::io(parent, e))?;
    for n in 1.. {
        let name = if n == 1 {
            stamp.to_owned()
        } else {
            format!("{stamp}-{n}")
        };
        let dir = parent.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(RunError::io(&dir, e)),
        }
    }
    unreachable!("1.. does not end")
}

/// The machine and host rows of a page.
#[must_use]
pub fn info_rows(r: &ResultsFile) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    let mut row = |k: &str, v: String| rows.push((k.to_owned(), v));
    if let Some(m) = &r.machine {
        row("CPU", m.cpu_model.clone());
        row(
            "machine",
            format!(
                "{} CPUs, {} MiB, {} node(s), {}{}",
                m.vcpus,
                m.memory_mib,
                m.nodes,
                m.platform.name(),
                if m.hypervisor.is_empty() {
                    String::new()
                } else {
                    format!(" (hypervisor {})", m.hypervisor)
                }
            ),
        );
        row("TSC", format!("{:.3} GHz", m.tsc_hz as f64 / 1e9));
        row("boot", format!("{}: {}", m.boot_protocol, m.cmdline));
    } else {
        row("machine", "no machine record".into());
    }
    if let Some(p) = &r.plan {
        row(
            "plan",
            format!(
                "{} scenario(s), CPUs {:?}, {} round(s) + {} warm-up, {} runs{}",
                p.scenarios.len(),
                p.cpus,
                p.rounds,
                p.warmup_rounds,
                p.total_runs,
                p.seconds
                    .map(|s| format!(", {s} s each"))
                    .unwrap_or_default()
            ),
        );
    }
    let h = &r.host;
    row("tool", h.command_line.clone());
    row(
        "revision",
        format!(
            "{}{}",
            h.git_revision,
            if h.git_dirty == Some(true) {
                " (uncommitted changes)"
            } else {
                ""
            }
        ),
    );
    row("host", format!("{} ({} cores)", h.host_cpu, h.host_cores));
    if let Some(k) = &h.host_kernel {
        row("host kernel", k.clone());
    }
    if let Some(q) = &h.qemu_version {
        row("QEMU", q.clone());
    }
    if let Some(l) = &h.log {
        row("log", l.clone());
    }
    if let Some(o) = &h.outcome {
        row("outcome", o.clone());
    }
    row("when", h.timestamp.clone());
    rows
}

/// The verdict table's columns: per experiment its primary comparison with the interval,
/// the verdict word, the seed's figure it was held to, the A/A control's result and why.
pub const VERDICT_HEADER: [&str; 7] = [
    "scenario",
    "verdict",
    "primary comparison (ours)",
    "seed",
    "seed threads",
    "A/A control",
    "why",
];

/// One row per experiment ([`bench::verdict`]).
#[must_use]
pub fn verdict_rows(summary: &Summary) -> Vec<Vec<String>> {
    bench::verdict::verdicts(summary)
        .iter()
        .map(|v| {
            vec![
                v.scenario.to_owned(),
                v.outcome.name().to_owned(),
                v.ours_text(),
                format!("{:+.1}%", (v.seed_at.ratio - 1.0) * 100.0),
                v.seed_at.threads.to_string(),
                v.control_text(),
                v.why().unwrap_or_default(),
            ]
        })
        .collect()
}

/// The lock table's columns.
pub const LOCK_HEADER: [&str; 9] = [
    "scenario",
    "config",
    "cpus",
    "variant",
    "lock class",
    "acquisitions",
    "contended",
    "mean wait when contended (cycles)",
    "max wait (cycles)",
];

/// The lock statistics of the measured runs, summed per scenario, config, CPU count,
/// variant and lock class, in run order.
#[must_use]
pub fn lock_rows(runs: &[Run]) -> Vec<Vec<String>> {
    type Key = (String, String, u32, String, String);
    let mut sums: Vec<(Key, [u64; 4])> = Vec::new();
    for r in runs.iter().filter(|r| r.measured()) {
        for (class, l) in &r.locks {
            let key = (
                r.scenario.clone(),
                r.config.clone(),
                r.cpus,
                r.variant.clone(),
                class.clone(),
            );
            let i = match sums.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    sums.push((key, [0; 4]));
                    sums.len() - 1
                }
            };
            let s = &mut sums[i].1;
            s[0] += l.acquisitions;
            s[1] += l.contended;
            s[2] += l.wait_total_cycles;
            s[3] = s[3].max(l.wait_max_cycles);
        }
    }
    sums.into_iter()
        .map(|((s, c, cpus, v, class), [acq, cont, wait, max])| {
            vec![
                s,
                c,
                cpus.to_string(),
                v,
                class,
                acq.to_string(),
                format!("{:.2}%", cont as f64 * 100.0 / acq.max(1) as f64),
                format!("{:.0}", wait as f64 / cont.max(1) as f64),
                max.to_string(),
            ]
        })
        .collect()
}

/// Scenario `name`'s plot `svg` written as `<name><suffix>.svg` and shown on the page (under
/// a heading named for the scenario when `heading`); nothing when there is nothing to plot.
fn add_svg(
    put: &mut impl FnMut(&str, &str) -> Result<(), RunError>,
    page: &mut Page,
    dir: &Path,
    name: &str,
    suffix: &str,
    svg: Result<Option<String>, String>,
    heading: bool,
) -> Result<(), RunError> {
    let svg = svg.map_err(|why| RunError::BadInput {
        path: dir.join(format!("{name}{suffix}.svg")),
        why: format!("plotting failed: {why}"),
    })?;
    if let Some(svg) = svg {
        let file = format!("{}{suffix}.svg", file_name(name));
        put(&file, &svg)?;
        if heading {
            page.heading(name);
        }
        page.svg(&svg);
        page.file_link(&file);
    }
    Ok(())
}

/// Writes every file of `results` into `dir` (which exists).
pub fn write_dir(dir: &Path, results: &ResultsFile) -> Result<Written, RunError> {
    let summary: Summary = results.summary();
    let mut written = Written {
        dir: dir.to_owned(),
        files: Vec::new(),
    };
    let mut put = |name: &str, text: &str| -> Result<(), RunError> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| RunError::io(&path, e))?;
        written.files.push(path);
        Ok(())
    };
    put("results.json", &results.to_json())?;
    put("results.csv", &csv::render(&results.runs))?;
    if !results.costs.is_empty() {
        put("costs.csv", &csv::render_costs(&results.costs))?;
    }
    if !results.rmw_sites.is_empty() {
        put("rmw-sites.csv", &csv::render_rmw_sites(&results.rmw_sites))?;
    }
    if let Some(c) = &results.coherence {
        put("coherence.csv", &crate::coherence::table::csv(c))?;
    }
    let mut page = Page::new("memcg-lru benchmark results");
    page.heading("Verdicts");
    page.table("verdicts", &VERDICT_HEADER, &verdict_rows(&summary));
    if let Some(c) = &results.coherence {
        page.pre(&c.verdict_text());
    }
    page.info(&info_rows(results));
    if !results.problems.is_empty() {
        page.heading("Problems");
        page.problems(&results.problems);
    }
    page.heading("Results");
    page.pre(
        &Table::new(&summary, Style::Wide)
            .with_costs(&results.costs)
            .with_notes(&results.notes)
            .with_premises(results.end.as_ref().map_or(&[][..], |e| &e.premises))
            .to_string(),
    );
    if let Some(c) = &results.coherence {
        page.heading("Coherence");
        page.pre(&crate::coherence::table::render(c));
        page.file_link("coherence.csv");
        let mut names: Vec<&str> = Vec::new();
        for r in &c.runs {
            if !names.contains(&r.scenario.as_str()) {
                names.push(&r.scenario);
            }
        }
        for name in names {
            let svg = crate::coherence::chart::svg(c, name);
            add_svg(&mut put, &mut page, dir, name, "-coherence", svg, false)?;
        }
        if let Some(p) = &c.projection {
            page.heading("Projection (a model, not a measurement)");
            page.pre(&p.text());
        }
    }
    for (name, _) in summary.scenarios() {
        let plot = plot::svg(&summary, name);
        add_svg(&mut put, &mut page, dir, name, "", plot, true)?;
        let forest = forest::svg(&summary, name);
        add_svg(&mut put, &mut page, dir, name, "-forest", forest, false)?;
    }
    let locks = lock_rows(&results.runs);
    if !locks.is_empty() {
        page.heading("Lock statistics");
        page.paragraph(
            "Per scenario, config, CPU count, variant and lock class, over the measured rounds: \
             acquisitions, the share that had to wait, and the mean and longest wait in cycles.",
        );
        if !results.plan.as_ref().is_some_and(|p| p.lock_stat_all) {
            page.paragraph(
                "Only the classes the scenarios' premises read recorded (lock_stat=premises); \
                 kx bench --lock-stat all lists every lock taken.",
            );
        }
        page.table("locks", &LOCK_HEADER, &locks);
    }
    put("index.html", &page.finish())?;
    Ok(written)
}

/// `name` as a safe file name (scenario names are; anything else is replaced by `_`).
#[must_use]
pub fn file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '@') {
                c
            } else {
                '_'
            }
        })
        .collect()
}
