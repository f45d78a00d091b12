//! The plugin's runs paired with the benchmark's `run` records, per operation, with the code
//! that moved each hot line named: what `results.json` keeps under `coherence`.

use super::symbols::Symbols;
use bench::Run;
use coherence::report::{Header, RunReport, Transactions, VcpuAccesses};
use serde::{Deserialize, Serialize};

/// Everything the plugin counted in one boot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoherenceResults {
    /// How the model was set up.
    pub header: Header,
    /// One per `run` record, in order.
    pub runs: Vec<CoherenceRun>,
    /// What did not fit (runs missing on either side, runs cut short).
    pub problems: Vec<String>,
    /// The mechanism verdicts, one line each (also printed first in the table); filled by
    /// [`super::judge`].
    #[serde(default)]
    pub verdicts: Vec<String>,
    /// The counts projected onto the seeds' machines: a model, not a measurement
    /// (`None` in files written before it existed).
    #[serde(default)]
    pub projection: Option<super::projection::Projection>,
}

/// One run's counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoherenceRun {
    /// The run record's scenario.
    pub scenario: String,
    /// Its configuration.
    pub config: String,
    /// Its variant.
    pub variant: String,
    /// CPUs.
    pub cpus: u32,
    /// Round (0: warm-up).
    pub round: u32,
    /// A warm-up run.
    pub warmup: bool,
    /// Operations the run record counted.
    pub ops: u64,
    /// Whether the plugin saw the run's end mark.
    pub complete: bool,
    /// How much the CPUs' windows overlapped (1: all open together).
    pub overlap: Option<f64>,
    /// Every window's accesses added up.
    pub accesses: VcpuAccesses,
    /// vCPUs that opened a window.
    pub windows: u32,
    /// Per coherence unit size (64, 128).
    pub models: Vec<ModelRun>,
}

/// One unit size's counts in one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelRun {
    /// 64 or 128.
    pub line_bytes: u64,
    /// Every vCPU's transactions added up.
    pub total: Transactions,
    /// The lines with the most transactions.
    pub hot: Vec<Hot>,
}

/// A hot line with its code.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hot {
    /// Physical address of the unit.
    pub addr: u64,
    /// Its transactions.
    pub counts: Transactions,
    /// vCPUs involved.
    pub vcpus: Vec<u32>,
    /// The kernel static the unit starts in, with the offset (`None`: heap or page
    /// frames).
    pub symbol: Option<String>,
    /// The functions whose accesses made the transactions, most first, with their count.
    pub functions: Vec<(String, u64)>,
    /// The objects and fields on the unit, from the scenario's `KOBJECT` lines, e.g.
    /// `mem_cgroup_per_node (memcg 0, node 0): lru_lock, lists` (`None`: none named).
    #[serde(default)]
    pub fields: Option<String>,
    /// The names of the fields on the unit, of every object named there.
    #[serde(default)]
    pub on: Vec<String>,
}

/// An object a scenario instance named (`KOBJECT`).
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    /// The instance: scenario, config, variant, CPUs, and which instance of the variant
    /// (from 0; each is built afresh).
    pub instance: (String, String, String, u32, u32),
    /// Physical address.
    pub addr: u64,
    /// Size in bytes.
    pub size: u64,
    /// What it is.
    pub label: String,
    /// Its fields: name, offset, size.
    pub fields: Vec<(String, u64, u64)>,
}

/// The `KOBJECT` lines of a serial log (malformed ones are left out: they name nothing).
#[must_use]
pub fn objects(serial: &str) -> Vec<Object> {
    serial
        .lines()
        .filter_map(|l| l.trim_end().strip_prefix("KOBJECT "))
        .filter_map(|rest| {
            let (head, fields) = rest.split_once('|')?;
            let mut w = head.splitn(8, ' ');
            let (scenario, config, variant) = (w.next()?, w.next()?, w.next()?);
            let cpus = w.next()?.parse().ok()?;
            let number = w.next()?.parse().ok()?;
            let addr = u64::from_str_radix(w.next()?.trim_start_matches("0x"), 16).ok()?;
            let size = w.next()?.parse().ok()?;
            let label = w.next()?.to_owned();
            let fields = fields
                .split(';')
                .filter_map(|f| {
                    let mut p = f.split(':');
                    let name = p.next()?.to_owned();
                    let _group = p.next()?;
                    Some((name, p.next()?.parse().ok()?, p.next()?.parse().ok()?))
                })
                .collect();
            Some(Object {
                instance: (scenario.into(), config.into(), variant.into(), cpus, number),
                addr,
                size,
                label,
                fields,
            })
        })
        .collect()
}

/// The names of the fields of `objects` on the unit `[addr, addr + bytes)`.
#[must_use]
pub fn fields_on(objects: &[&Object], addr: u64, bytes: u64) -> Vec<String> {
    let end = addr + bytes;
    let mut names: Vec<String> = Vec::new();
    for o in objects {
        for (n, off, size) in &o.fields {
            let (a, b) = (o.addr + off, o.addr + off + size.max(&1));
            if a < end && addr < b && !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    names
}

/// What of `objects` lies on the unit `[addr, addr + bytes)`: each object's label with the
/// fields on it, `; `-separated.
#[must_use]
pub fn name_unit(objects: &[&Object], addr: u64, bytes: u64) -> Option<String> {
    let end = addr + bytes;
    let parts: Vec<String> = objects
        .iter()
        .filter(|o| o.addr < end && addr < o.addr + o.size)
        .map(|o| {
            let mut names: Vec<&str> = Vec::new();
            for (n, off, size) in &o.fields {
                let (a, b) = (o.addr + off, o.addr + off + size.max(&1));
                if a < end && addr < b && !names.contains(&n.as_str()) {
                    names.push(n);
                }
            }
            if names.is_empty() {
                format!("{} (padding)", o.label)
            } else {
                format!("{}: {}", o.label, names.join(", "))
            }
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

impl CoherenceResults {
    /// The mechanism verdict lines under their heading.
    #[must_use]
    pub fn verdict_text(&self) -> String {
        let mut s = String::from(
            "Mechanism (transfers per operation on the seed's fields, mean of measured rounds):\n",
        );
        for l in &self.verdicts {
            s.push_str("  ");
            s.push_str(l);
            s.push('\n');
        }
        s
    }

    /// The measured (not warm-up) runs of `variant` at one point.
    #[must_use]
    pub fn measured(
        &self,
        scenario: &str,
        config: &str,
        cpus: u32,
        variant: &str,
    ) -> Vec<&CoherenceRun> {
        self.runs
            .iter()
            .filter(|r| {
                !r.warmup
                    && r.scenario == scenario
                    && r.config == config
                    && r.cpus == cpus
                    && r.variant == variant
            })
            .collect()
    }
}

impl CoherenceRun {
    /// The counts of the `line_bytes` model.
    #[must_use]
    pub fn model(&self, line_bytes: u64) -> Option<&ModelRun> {
        self.models.iter().find(|m| m.line_bytes == line_bytes)
    }

    /// `n` per operation of this run (`None` without operations).
    #[must_use]
    pub fn per_op(&self, n: u64) -> Option<f64> {
        (self.ops > 0).then(|| n as f64 / self.ops as f64)
    }
}

/// Pairs the plugin's `reports` with the `runs` records of the same boot, in order.
#[must_use]
pub fn attach(
    header: Header,
    reports: Vec<RunReport>,
    runs: &[Run],
    symbols: &Symbols,
    objects: &[Object],
) -> CoherenceResults {
    let mut problems = Vec::new();
    if reports.len() != runs.len() {
        problems.push(format!(
            "the plugin reported {} runs and the kernel {}: runs past the shorter list are \
             left out",
            reports.len(),
            runs.len()
        ));
    }
    let mut out = Vec::new();
    for (rep, run) in reports.into_iter().zip(runs) {
        if !rep.complete {
            problems.push(format!(
                "run {} ({} {} {} cpus={} round={}): the plugin saw no end mark",
                rep.run, run.scenario, run.config, run.variant, run.cpus, run.round
            ));
        }
        if rep.vcpus.len() != run.cpus as usize {
            problems.push(format!(
                "run {} ({} {} cpus={}): {} vCPUs opened a window",
                rep.run,
                run.scenario,
                run.variant,
                run.cpus,
                rep.vcpus.len()
            ));
        }
        let mine: Vec<&Object> = objects
            .iter()
            .filter(|o| {
                o.instance
                    == (
                        run.scenario.clone(),
                        run.config.clone(),
                        run.variant.clone(),
                        run.cpus,
                        run.instance,
                    )
            })
            .collect();
        let mut accesses = VcpuAccesses::default();
        for v in &rep.vcpus {
            accesses.loads += v.loads;
            accesses.stores += v.stores;
            accesses.rmws += v.rmws;
            accesses.insns += v.insns;
            accesses.blocks += v.blocks;
            accesses.unchained += v.unchained;
        }
        out.push(CoherenceRun {
            scenario: run.scenario.clone(),
            config: run.config.clone(),
            variant: run.variant.clone(),
            cpus: run.cpus,
            round: run.round,
            warmup: run.warmup,
            ops: run.ops,
            complete: rep.complete,
            overlap: rep.overlap,
            accesses,
            windows: rep.vcpus.len() as u32,
            models: rep
                .models
                .iter()
                .map(|m| ModelRun {
                    line_bytes: m.line_bytes,
                    total: m.total(),
                    hot: m
                        .hot
                        .iter()
                        .map(|h| Hot {
                            addr: h.addr,
                            counts: h.counts.clone(),
                            vcpus: h.vcpus.clone(),
                            symbol: symbols
                                .object(h.addr)
                                .map(|(n, off)| format!("{n}+{off:#x}")),
                            functions: functions(symbols, &h.pcs),
                            fields: name_unit(&mine, h.addr, m.line_bytes),
                            on: fields_on(&mine, h.addr, m.line_bytes),
                        })
                        .collect(),
                })
                .collect(),
        });
    }
    CoherenceResults {
        header,
        runs: out,
        problems,
        verdicts: Vec::new(),
        projection: None,
    }
}

/// The instructions' counts summed per function (unknown addresses as hex).
fn functions(symbols: &Symbols, pcs: &[coherence::report::PcCount]) -> Vec<(String, u64)> {
    let mut by: Vec<(String, u64)> = Vec::new();
    for p in pcs {
        let name = symbols
            .function(p.pc)
            .map_or_else(|| format!("{:#x}", p.pc), short_name);
        match by.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += p.transactions,
            None => by.push((name, p.transactions)),
        }
    }
    by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    by
}

/// A demangled Rust path without its generic arguments' noise: the last two segments
/// (`Lruvec::lock`, `memcg::charge::try_charge` -> `charge::try_charge`).
fn short_name(full: &str) -> String {
    // A `<` after an identifier opens generic arguments (dropped with their contents); any
    // other `<` opens a qualified path (`<T as Trait>::f`, `<T>::f`): only the brackets go.
    let mut stack: Vec<bool> = Vec::new();
    let mut plain = String::new();
    for ch in full.chars() {
        let skipping = stack.iter().any(|&generic| generic);
        match ch {
            '<' => {
                let generic = plain
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_');
                stack.push(generic);
            }
            '>' => {
                stack.pop();
            }
            _ if !skipping => plain.push(ch),
            _ => {}
        }
    }
    let last = |s: &str| s.rsplit("::").next().unwrap_or(s).to_owned();
    if let Some((ty, tr)) = plain.split_once(" as ") {
        return format!("{}::{}", last(ty), last(tr));
    }
    let parts: Vec<&str> = plain.split("::").filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [] => full.to_owned(),
        [one] => (*one).to_owned(),
        [.., a, b] => format!("{a}::{b}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kobject_lines_name_the_fields_on_a_line() {
        let log = "boot\nKOBJECT seed001-faultfree anon base@+0 2 1 0x1000 256 pn (memcg 0)|\
                   lru_lock:lruvec:0:4;lists:lruvec:8:80;stats:stats:128:64\nKOBJECT bad\n";
        let o = objects(log);
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].addr, 0x1000);
        assert_eq!(o[0].instance.4, 1);
        let all: Vec<&Object> = o.iter().collect();
        assert_eq!(
            name_unit(&all, 0x1040, 64).as_deref(),
            Some("pn (memcg 0): lists")
        );
        assert_eq!(
            name_unit(&all, 0x1000, 128).as_deref(),
            Some("pn (memcg 0): lru_lock, lists")
        );
        assert_eq!(name_unit(&all, 0x2000, 64), None);
    }

    #[test]
    fn short_names_keep_the_last_two_segments_without_generics() {
        assert_eq!(short_name("lru::lruvec::Lruvec::lock"), "Lruvec::lock");
        assert_eq!(
            short_name("<memcg::tree::MemcgTree<F>>::charge"),
            "MemcgTree::charge"
        );
        assert_eq!(short_name("main"), "main");
        assert_eq!(
            short_name("<lru::Lruvec<F> as core::ops::Drop>::drop"),
            "Lruvec::drop"
        );
    }
}
