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
//! Where a comparison's B only moves data ([`crate::catalog::Change::Layout`]), A and B
//! run the same code from two copies, and a difference in these transitions is
//! placement alone: [`placement_gaps`] names every such comparison that differs by more
//! than [`PLACEMENT_TOLERANCE`] per operation.
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

/// How far two copies of the same code may differ in unchained transitions per operation
/// through their data alone (a rare branch taken in one variant's run and not the other's:
/// 0.023 between seed000's `A@+64` and `B@+64` over 704 reads). One jump across a page
/// executed once per operation is 1.0; one per 31-folio LRU batch, 0.03.
pub const PLACEMENT_TOLERANCE: f64 = 0.1;

/// A comparison whose B only moves data ([`crate::catalog::Change::Layout`]) but whose
/// copies of the shared code do not cross as many 4 KiB pages: a timing difference of the
/// size these transitions cost is where the linker put the copies, not the seed.
#[derive(Clone, Debug, PartialEq)]
pub struct PlacementGap {
    /// Scenario.
    pub scenario: String,
    /// Configuration.
    pub config: String,
    /// The comparison's A.
    pub a: String,
    /// The comparison's B.
    pub b: String,
    /// B's unchained transitions per operation minus A's.
    pub unchained_b_minus_a: f64,
}

/// The gap of `scenario`'s `config` between `def`'s variants in `costs`, when `def` is a
/// layout comparison, both were counted and they differ by more than
/// [`PLACEMENT_TOLERANCE`].
#[must_use]
pub fn placement_gap(
    costs: &[Cost],
    scenario: &str,
    config: &str,
    def: &crate::catalog::ComparisonDef,
) -> Option<PlacementGap> {
    if def.change != crate::catalog::Change::Layout {
        return None;
    }
    let a = find(costs, scenario, config, def.a)?.unchained_per_op?;
    let b = find(costs, scenario, config, def.b)?.unchained_per_op?;
    ((b - a).abs() > PLACEMENT_TOLERANCE).then(|| PlacementGap {
        scenario: scenario.into(),
        config: config.into(),
        a: def.a.into(),
        b: def.b.into(),
        unchained_b_minus_a: b - a,
    })
}

/// Every layout comparison of the catalog's scenarios, in every config `costs` counted,
/// whose A and B differ in unchained transitions by more than [`PLACEMENT_TOLERANCE`].
#[must_use]
pub fn placement_gaps(costs: &[Cost]) -> Vec<PlacementGap> {
    let mut configs: Vec<(&str, &str)> = Vec::new();
    for c in costs {
        if !configs.contains(&(c.scenario.as_str(), c.config.as_str())) {
            configs.push((&c.scenario, &c.config));
        }
    }
    configs
        .into_iter()
        .filter_map(|(s, c)| Some((crate::catalog::scenario(s)?, c)))
        .flat_map(|(s, c)| {
            s.comparisons
                .iter()
                .filter_map(move |d| placement_gap(costs, s.name, c, d))
        })
        .collect()
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

    fn unchained(scenario: &str, variant: &str, per_op: f64) -> Cost {
        Cost {
            scenario: scenario.into(),
            config: "c".into(),
            variant: variant.into(),
            runs: 1,
            ops: 100,
            instructions_per_op: 1000.0,
            rmws_per_op: Some(1.0),
            blocks_per_op: Some(100.0),
            unchained_per_op: Some(per_op),
        }
    }

    #[test]
    fn only_layout_comparisons_past_the_tolerance_are_placement_gaps() {
        // seed000's comparisons are layouts, seed004's is code.
        let costs = [
            unchained("seed000-refault", "A@+0", 19.30),
            unchained("seed000-refault", "B@+0", 20.01),
            unchained("seed000-refault", "A@+64", 19.30),
            unchained(
                "seed000-refault",
                "B@+64",
                19.30 + PLACEMENT_TOLERANCE * 0.9,
            ),
            unchained("seed004-readtwice", "A", 20.0),
            unchained("seed004-readtwice", "B", 25.0),
        ];
        let gaps = placement_gaps(&costs);
        assert_eq!(gaps.len(), 1, "{gaps:?}");
        let g = &gaps[0];
        assert_eq!(
            (
                g.scenario.as_str(),
                g.config.as_str(),
                g.a.as_str(),
                g.b.as_str()
            ),
            ("seed000-refault", "c", "A@+0", "B@+0")
        );
        assert!((g.unchained_b_minus_a - 0.71).abs() < 1e-9, "{g:?}");
        // Either direction counts, and a variant counted without transitions has none.
        let costs = [
            unchained("seed000-refault", "A@+0", 20.0),
            unchained("seed000-refault", "B@+0", 19.0),
            Cost {
                unchained_per_op: None,
                ..unchained("seed000-refault", "B@+64", 0.0)
            },
            unchained("seed000-refault", "A@+64", 30.0),
        ];
        let gaps = placement_gaps(&costs);
        assert_eq!(gaps.len(), 1, "{gaps:?}");
        assert!((gaps[0].unchained_b_minus_a + 1.0).abs() < 1e-9);
    }
}
