//! What the plugin writes: one JSON object per line, a [`Header`] first, then one
//! [`RunReport`] per run in the order the runs began. The runner reads it back with
//! [`read`].

use serde::{Deserialize, Serialize};

/// One line of the plugin's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Line {
    /// The first line.
    Header(Header),
    /// A run.
    Run(RunReport),
}

/// How the model was set up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The plugin API QEMU offered: minimum and current version.
    pub api: (i32, i32),
    /// vCPUs QEMU started with.
    pub vcpus: u32,
    /// Each vCPU's socket.
    pub sockets: Vec<u32>,
    /// Private cache per vCPU, KiB.
    pub cache_kib: u64,
    /// Ways per set.
    pub ways: usize,
    /// The coherence units modelled side by side (64, and 128 with pairs on); empty with
    /// `model=off`, where the plugin sees stores only and every run's `loads` are 0.
    pub line_bytes: Vec<u64>,
}

/// One run: what each vCPU did inside its measured window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// 0 for the first run of the boot.
    pub run: u64,
    /// Whether the run's end mark arrived (false: cut short by the next run or QEMU's exit).
    pub complete: bool,
    /// Per vCPU that opened a window: its accesses.
    pub vcpus: Vec<VcpuAccesses>,
    /// Each window, host time since the run began.
    pub windows: Vec<Window>,
    /// How much the windows overlapped: the time all of them were open over the time any
    /// was (1: all open together; 0: one after another), `None` without windows.
    pub overlap: Option<f64>,
    /// Per coherence unit size.
    pub models: Vec<ModelReport>,
}

/// One vCPU's accesses inside its window.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VcpuAccesses {
    /// The vCPU (QEMU's index).
    pub vcpu: u32,
    /// Loads.
    pub loads: u64,
    /// Stores.
    pub stores: u64,
    /// Locked read-modify-writes (each also counted as a load and a store).
    pub rmws: u64,
    /// Guest instructions executed in the window, counted per translation block as it
    /// starts (a block left early, by a fault, counts whole; the blocks holding the window's
    /// two marks count by whether the window was open as they started). `0` in reports
    /// from before the count existed.
    #[serde(default)]
    pub insns: u64,
    /// Translated blocks started in the window (counted as `insns` is). `0` in reports from
    /// before the count existed.
    #[serde(default)]
    pub blocks: u64,
    /// Transitions between two of those blocks that QEMU cannot chain
    /// ([`crate::block::Block::unchained_to`]). `0` in reports from before the count
    /// existed.
    #[serde(default)]
    pub unchained: u64,
    /// Its locked RMWs by instruction, most first (every instruction that made one; their
    /// counts add up to `rmws`). Empty in reports from before they were kept.
    #[serde(default)]
    pub rmw_sites: Vec<RmwSite>,
}

/// The locked RMWs one instruction made inside a window.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RmwSite {
    /// The instruction's guest virtual address.
    pub pc: u64,
    /// Locked RMWs it made.
    pub count: u64,
}

/// One vCPU's measured window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// The vCPU.
    pub vcpu: u32,
    /// Opened, ns after the run began.
    pub begin_ns: u64,
    /// Closed (`None`: never closed).
    pub end_ns: Option<u64>,
}

/// Transactions counted with one coherence unit size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelReport {
    /// Bytes per unit: 64, or 128 (adjacent-line pairs).
    pub line_bytes: u64,
    /// Per vCPU that opened a window.
    pub per_vcpu: Vec<Transactions>,
    /// The units with the most transactions, most first.
    pub hot: Vec<HotLine>,
}

impl ModelReport {
    /// Every vCPU's transactions added up.
    #[must_use]
    pub fn total(&self) -> Transactions {
        let mut t = Transactions::default();
        for v in &self.per_vcpu {
            t.add(v);
        }
        t
    }
}

/// Transactions made by one vCPU's accesses (or a sum).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transactions {
    /// The vCPU (0 in sums).
    pub vcpu: u32,
    /// Loads of a line another vCPU held modified.
    pub read_hitm: u64,
    /// Stores and locked RMWs to a line another vCPU held modified.
    pub rfo_hitm: u64,
    /// Stores to a line others held clean.
    pub upgrades: u64,
    /// Copies invalidated in other caches.
    pub invalidations: u64,
    /// HITMs whose supplier sat on another socket.
    pub cross_socket: u64,
}

impl Transactions {
    /// Lines that moved modified from one cache to another: read and RFO HITMs.
    #[must_use]
    pub fn transfers(&self) -> u64 {
        self.read_hitm + self.rfo_hitm
    }

    /// Adds `o`'s counts.
    pub fn add(&mut self, o: &Transactions) {
        self.read_hitm += o.read_hitm;
        self.rfo_hitm += o.rfo_hitm;
        self.upgrades += o.upgrades;
        self.invalidations += o.invalidations;
        self.cross_socket += o.cross_socket;
    }
}

/// One unit with transactions, and the code that made them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HotLine {
    /// Physical address of the unit's first byte.
    pub addr: u64,
    /// Its transactions (vcpu 0).
    pub counts: Transactions,
    /// vCPUs whose accesses made them, and the vCPUs they took the line from or
    /// invalidated.
    pub vcpus: Vec<u32>,
    /// The instructions whose accesses made them, most first (at most eight).
    pub pcs: Vec<PcCount>,
}

/// Transactions made by the accesses of one instruction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PcCount {
    /// The instruction's guest virtual address.
    pub pc: u64,
    /// HITMs and upgrades it made.
    pub transactions: u64,
}

/// Reads the plugin's output: the header and the runs.
pub fn read(text: &str) -> Result<(Header, Vec<RunReport>), String> {
    let mut header = None;
    let mut runs = Vec::new();
    for (i, l) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        match serde_json::from_str::<Line>(l) {
            Ok(Line::Header(h)) if header.is_none() && i == 0 => header = Some(h),
            Ok(Line::Header(_)) => return Err(format!("line {}: a second header", i + 1)),
            Ok(Line::Run(r)) => {
                if r.run != runs.len() as u64 {
                    return Err(format!(
                        "line {}: run {} where run {} was due",
                        i + 1,
                        r.run,
                        runs.len()
                    ));
                }
                runs.push(r);
            }
            Err(e) => return Err(format!("line {}: {e}", i + 1)),
        }
    }
    Ok((header.ok_or("no header line")?, runs))
}
