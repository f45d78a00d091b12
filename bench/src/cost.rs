//! A variant's cost per operation as counts, not time: the guest instructions, the locked
//! read-modify-writes and the block transitions the emulator cannot chain of its measured
//! runs at one CPU, divided by their operations.
//!
//! Timings under an emulator carry the emulator's noise and say nothing about how much
//! work a variant does; counts do. The runner gets them from a short boot of its own (`kx
//! bench`'s cost boot: one vCPU under QEMU's TCG with the coherence plugin counting, see
//! `qemu/src/bench/cost.rs`) or from a `--coherence` run, and the table shows them under
//! each configuration's first point ([`crate::Table::with_costs`]). At one CPU they are
//! deterministic for one kernel build: the cost boot runs under QEMU's instruction counter,
//! so a run's length in guest time is a fixed number of instructions and every boot counts
//! the same runs. At more CPUs a lock's spinning would add to them, so they are counted at
//! one.
//!
//! The Linux reference has a cost too, counted the same way: the runner boots it once
//! more at one vCPU under the instruction counter and the plugin, and the reference's
//! `/init` marks its runs and its thread's window in a page of RAM taken out of Linux's
//! memory, so its instructions, locked RMWs, blocks and unchained transitions per page
//! are the plugin's, as the kernel's are.
//!
//! The unchained transitions are the third part of an emulated operation's time that does
//! not depend on the host: under QEMU's TCG each block-to-block transition that QEMU cannot
//! link straight to its successor's code (a return, an indirect branch, a jump to another
//! 4 KiB page than the jumping block's) is a lookup of a few nanoseconds, which a real
//! CPU's branch predictors make nearly free. Where the linker places a loop or a call moves
//! them by a few per operation in either direction, so two variants with the same
//! instructions can differ in time by them (`coherence::block` has the rule).
//!
//! What the counts include: everything the CPU executes inside its measured window (the
//! window a PMU counts, `kernel/src/bench/window.rs`), interrupts included; the untimed work
//! a scenario does with its clock paused (pft's unmap) is left out.

use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

/// One variant's counts per operation at one CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Scenario.
    pub scenario: String,
    /// Configuration.
    pub config: String,
    /// Variant.
    pub variant: String,
    /// Measured runs counted.
    pub runs: u32,
    /// Their operations.
    pub ops: u64,
    /// Guest instructions per operation.
    pub instructions_per_op: f64,
    /// Locked read-modify-writes (`lock`-prefixed instructions, `xchg` with memory) per
    /// operation; `None` where they were not counted (the Linux reference's row in
    /// results written before its counted boot ran under the plugin, when `-icount`
    /// gave only its instructions).
    #[serde(default)]
    pub rmws_per_op: Option<f64>,
    /// Translated blocks executed per operation; `None` where they were not counted (as
    /// `rmws_per_op`).
    #[serde(default)]
    pub blocks_per_op: Option<f64>,
    /// Block-to-block transitions QEMU's TCG cannot chain, per operation; `None` where
    /// they were not counted (as `rmws_per_op`).
    #[serde(default)]
    pub unchained_per_op: Option<f64>,
}

/// What one measured run counted: its operations, instructions, locked RMWs, blocks and
/// unchained transitions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counted {
    /// Operations (the run record's).
    pub ops: u64,
    /// Guest instructions inside the windows.
    pub instructions: u64,
    /// Locked RMWs inside the windows.
    pub rmws: u64,
    /// Translated blocks started inside the windows.
    pub blocks: u64,
    /// Transitions between those blocks that TCG cannot chain.
    pub unchained: u64,
}

/// Adds up `runs` (scenario, config, variant, counts) per variant, in first-seen order; a
/// variant whose runs did no operation has no cost (nothing to divide by) and is left out.
#[must_use]
pub fn per_variant<'a>(
    runs: impl IntoIterator<Item = (&'a str, &'a str, &'a str, Counted)>,
) -> Vec<Cost> {
    let mut acc: Vec<(&str, &str, &str, u32, Counted)> = Vec::new();
    for (s, c, v, n) in runs {
        match acc.iter_mut().find(|a| (a.0, a.1, a.2) == (s, c, v)) {
            Some(a) => {
                a.3 += 1;
                a.4.ops += n.ops;
                a.4.instructions += n.instructions;
                a.4.rmws += n.rmws;
                a.4.blocks += n.blocks;
                a.4.unchained += n.unchained;
            }
            None => acc.push((s, c, v, 1, n)),
        }
    }
    acc.into_iter()
        .filter(|a| a.4.ops > 0)
        .map(|(s, c, v, runs, n)| Cost {
            scenario: s.into(),
            config: c.into(),
            variant: v.into(),
            runs,
            ops: n.ops,
            instructions_per_op: n.instructions as f64 / n.ops as f64,
            rmws_per_op: Some(n.rmws as f64 / n.ops as f64),
            blocks_per_op: Some(n.blocks as f64 / n.ops as f64),
            unchained_per_op: Some(n.unchained as f64 / n.ops as f64),
        })
        .collect()
}

/// The cost of `variant` of `scenario`'s `config` in `costs`.
#[must_use]
pub fn find<'c>(
    costs: &'c [Cost],
    scenario: &str,
    config: &str,
    variant: &str,
) -> Option<&'c Cost> {
    costs
        .iter()
        .find(|c| c.scenario == scenario && c.config == config && c.variant == variant)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(ops: u64, instructions: u64, rmws: u64) -> Counted {
        Counted {
            ops,
            instructions,
            rmws,
            blocks: instructions / 10,
            unchained: rmws * 2,
        }
    }

    #[test]
    fn runs_of_a_variant_are_added_before_dividing() {
        let costs = per_variant([
            ("s", "c", "A", n(100, 100_000, 1_000)),
            ("s", "c", "B", n(10, 5_000, 10)),
            ("s", "c", "A", n(300, 100_000, 1_000)),
            ("s", "d", "A", n(0, 7, 7)),
        ]);
        assert_eq!(costs.len(), 2, "the variant without operations has no cost");
        let a = find(&costs, "s", "c", "A").unwrap();
        assert_eq!((a.runs, a.ops), (2, 400));
        // The total over the total (500), not the mean of the runs' figures (666.7).
        assert_eq!(a.instructions_per_op, 500.0);
        assert_eq!(a.rmws_per_op, Some(5.0));
        assert_eq!(
            (a.blocks_per_op, a.unchained_per_op),
            (Some(50.0), Some(10.0))
        );
        let b = find(&costs, "s", "c", "B").unwrap();
        assert_eq!((b.instructions_per_op, b.rmws_per_op), (500.0, Some(1.0)));
        assert!(find(&costs, "s", "d", "A").is_none());
    }
}
