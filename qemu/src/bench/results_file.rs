//! `results.json`: every record of a run and where it came from, in one file.
//!
//! ```text
//! { "format": 1, "host": {tool, command_line, git_revision, git_dirty, host_cpu, host_cores,
//!                         qemu_version, timestamp, log, outcome},
//!   "machine": {...} | null, "plan": {...} | null, "runs": [...], "comparisons": [...],
//!   "recomputed_comparisons": [...], "notes": ["...", ...], "end": {...} | null,
//!   "verdicts": ["...", ...],
//!   "complete": bool, "problems": ["...", ...], "coherence": {...} (with --coherence),
//!   "costs": [...] (when counted), "rmw_sites": [...] (when counted) }
//! ```
//!
//! `machine`, `plan`, `runs`, `comparisons` and `end` are the `KRESULT` records as printed
//! (their keys are `bench::record`'s, without `type`), the comparisons with what only the
//! whole run decides filled in by [`bench::Summary`]: `p_adjusted` (Holm over the run's
//! comparisons), `marked` and `unmarked_why`; every comparison says whether it is `paired`
//! by round, its `n`, `p` and interval, and whether it is the A/A `control`;
//! `recomputed_comparisons` are the ones the runner computed from the runs because the log
//! lacked them; `notes` are the
//! `note` records' sentences (absent in files written before notes existed); `problems` are
//! the [`super::collect::Problem`]s in words; `coherence` is what the coherence plugin
//! counted per run ([`crate::coherence::results`]); `costs` each variant's instructions
//! and locked RMWs per operation at one CPU ([`bench::cost`]), `rmw_sites` the
//! instructions those locked RMWs came from ([`super::rmw_sites`]). `kx compare` reads
//! this file back.

use super::collect::Collected;
use super::host::HostInfo;
use crate::RunError;
use bench::{Comparison, End, Machine, Plan, Run, Summary};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The version of this layout.
pub const FORMAT: u32 = 1;

/// The contents of `results.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultsFile {
    /// [`FORMAT`].
    pub format: u32,
    /// Where it came from.
    pub host: HostInfo,
    /// The kernel's `machine` record.
    pub machine: Option<Machine>,
    /// The `plan` record.
    pub plan: Option<Plan>,
    /// Every `run` record, warm-ups included.
    pub runs: Vec<Run>,
    /// Every `comparison` record.
    pub comparisons: Vec<Comparison>,
    /// Comparisons computed by the runner where the log had none.
    pub recomputed_comparisons: Vec<Comparison>,
    /// The `note` records' text.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The `end` record.
    pub end: Option<End>,
    /// One verdict line per seed ([`bench::verdict`]), as the table opens with them.
    #[serde(default)]
    pub verdicts: Vec<String>,
    /// Whether the records were complete and consistent.
    pub complete: bool,
    /// What was wrong, in words.
    pub problems: Vec<String>,
    /// What the coherence plugin counted per run (`kx bench --coherence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coherence: Option<crate::coherence::results::CoherenceResults>,
    /// Each variant's counted cost per operation at one CPU ([`super::cost`]; absent when
    /// none was counted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub costs: Vec<bench::Cost>,
    /// Per variant with a counted cost, the instructions its locked RMWs came from
    /// (absent when none were counted, and in files written before they were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rmw_sites: Vec<super::rmw_sites::VariantRmwSites>,
}

impl ResultsFile {
    /// The file for `collected`, made on `host`.
    #[must_use]
    pub fn new(host: HostInfo, c: &Collected) -> ResultsFile {
        // The summary's copies: the run's Holm-adjusted p and the marks filled in.
        let same = |x: &Comparison, y: &Comparison| {
            (&x.scenario, &x.config, x.cpus, &x.a, &x.b)
                == (&y.scenario, &y.config, y.cpus, &y.a, &y.b)
        };
        let (recomputed, printed): (Vec<Comparison>, Vec<Comparison>) = c
            .summary
            .comparisons()
            .cloned()
            .partition(|x| c.summary.recomputed.iter().any(|y| same(x, y)));
        ResultsFile {
            format: FORMAT,
            host,
            machine: c.machine.clone(),
            plan: c.plan.clone(),
            runs: c.runs.clone(),
            comparisons: printed,
            recomputed_comparisons: recomputed,
            notes: c.notes.clone(),
            end: c.end.clone(),
            verdicts: bench::verdict::verdicts(&c.summary)
                .iter()
                .map(ToString::to_string)
                .collect(),
            complete: c.complete(),
            problems: c.problems.iter().map(ToString::to_string).collect(),
            coherence: c.coherence.clone(),
            costs: c.costs.clone(),
            rmw_sites: c.rmw_sites.clone(),
        }
    }

    /// The runs grouped (comparisons: the printed ones, then the recomputed ones).
    #[must_use]
    pub fn summary(&self) -> Summary {
        let mut all = self.comparisons.clone();
        all.extend(self.recomputed_comparisons.iter().cloned());
        Summary::new(&self.runs, &all)
    }

    /// Reads `dir/results.json`.
    pub fn read(dir: &Path) -> Result<ResultsFile, RunError> {
        let path = dir.join("results.json");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                RunError::NotFound(path.clone())
            } else {
                RunError::io(&path, e)
            }
        })?;
        serde_json::from_str(&text).map_err(|e| RunError::BadInput {
            path,
            why: e.to_string(),
        })
    }

    /// The file's text (pretty-printed JSON).
    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("results serialize (finite numbers, string keys)")
    }
}
