//! `page-counter-802f1d`: every CPU charges and uncharges pages in a three-level memcg
//! hierarchy, as will-it-scale's `page_fault2` makes v5.11 do, with `struct page_counter`
//! in its layout before and after Linux commit 802f1d522d5f ("mm: page_counter: re-layout
//! structure to reduce false sharing", Feng Tang, v5.12), which moved `parent` off the
//! line of `usage` (see [`memcg::page_counter_802f1d`] for the two layouts).
//!
//! The hierarchy is root -> `parent` -> leaf, as a benchmark run in a service's cgroup has
//! it. Config `one-memcg` puts every CPU in ONE leaf (the commit's will-it-scale processes
//! share one cgroup); `siblings` gives every CPU its own leaf under the one parent. Either
//! way `usage` of the shared levels is written by every CPU's charges and uncharges, while
//! the walks up the hierarchy on every CPU read `parent` from the same counters.
//!
//! One operation is one page charged and uncharged, the memcg half of a `page_fault2`
//! iteration (a write fault on a private file mapping charges the new anonymous page; the
//! `munmap` uncharges it). A batch is [`BATCH`] pages on one CPU, with v5.11's batching
//! (`MEMCG_CHARGE_BATCH` was 32 then, [`CHARGE_BATCH`]), so the per-CPU stock does what it
//! did in the commit's runs and hides no more than it hid there:
//! - each page's charge is `try_charge()`: taken from the CPU's stock when it holds a page
//!   of the leaf (`consume_stock()`); otherwise `page_counter_try_charge()` of 32 pages up
//!   the hierarchy (writing `usage` at each level, reading `max`, `parent`, `min`, `low`),
//!   the surplus refilled into the stock, then v5.11's `memory.high` check loop, which
//!   reads `usage` and `high` of every level through `parent_mem_cgroup()` (a load of
//!   `memory.parent`);
//! - each page's rmap adds one to `NR_ANON_MAPPED` and counts `PGPGIN`:
//!   `__mod_memcg_state()` / `__count_memcg_events()` batch per CPU and, above 32 pending,
//!   add the batch to every level's atomic counter on a walk through `parent_mem_cgroup()`;
//! - the `munmap` takes every page off `NR_ANON_MAPPED` (per page, batched the same way)
//!   and `uncharge_batch()` uncharges the batch with one `page_counter_uncharge()` walk
//!   and counts `PGPGOUT`.
//!
//! So per 64 pages: two charge walks, one uncharge walk and about five stat walks, each
//! over three levels: `usage` written 9 times (3 of them the shared parent's: the
//! `parent_usage_writes_per_op` of 3/64 the runs show) and `parent` loaded about 39 times
//! (the walks' steps up, `propagate_protected_usage()`'s, the high check's and the stat
//! walks'; `parent_reads_per_op` about 0.61). In A, every `parent` load is from a line
//! other CPUs keep writing; in B from a line that stays shared in every cache.
//!
//! Counters (absolute, summed over CPUs): `pages`, `charge_walks`, `uncharge_walks`,
//! `stat_walks`, `parent_usage_writes` (RMWs on the shared parent's `usage`),
//! `parent_reads` (loads of `parent` on the walks, every level). Premises: the parent's
//! `usage` is written and `parent` is read in every run (per operation, above zero), and
//! the shared parent's `usage` and `parent` are on one line in A and not in B, measured at
//! the instance's own addresses; at two CPUs or more, across CPUs, a `usage` is written by
//! another CPU between two writes of one (`usage_handoffs_per_op` above zero,
//! `ksync::handoff`), so the line `parent` is read from in A moves between CPUs. With one
//! CPU nothing is shared: the ratio there is the two layouts' cost alone. Invariant after every run: every level's `usage` equals the
//! pages its CPUs' stocks hold, nothing failed a charge, and every stat's atomic counters
//! and per-CPU batches add up to the pages charged and uncharged.
//!
//! This is a model of the commit's mechanism on the memcg crate's layout types, not the
//! memcg tree's own charge path (whose `page_counter` is today's three-group layout).
//!
//! Unsafe code here, and why (one of bench's two such modules): Linux's
//! `parent_mem_cgroup()` is a load of the counter's parent pointer, so the model's memcgs
//! are boxed and linked by raw pointers, whose targets the scenario keeps alive in order.
#![allow(unsafe_code)]

use crate::engine::premise::{self, PremiseCheck, Premises};
use crate::engine::{BatchCtx, BenchScenario, Instance, ScenarioError, Setup};
use crate::record::Run;
use crate::vm::VmHost;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use ksync::LockClass;
use memcg::lock_classes::PageCounterUsageWord;
use memcg::page_counter_802f1d::{
    self as layouts, PageCounter802f1d, PageCounterLayout, PageCounterV511, Walk,
};

mod entry;
pub use entry::CATALOG;

/// Pages per batch.
pub const BATCH: u64 = 64;

/// v5.11's `MEMCG_CHARGE_BATCH`: the stock's refill and the stat batches' threshold.
pub const CHARGE_BATCH: u64 = 32;

/// Each leaf's `max` in pages (4 GiB): far above what the stocks hold, so no charge fails.
const LEAF_MAX: u64 = 1 << 20;

/// The stats every page updates: `NR_ANON_MAPPED`, `PGPGIN`, `PGPGOUT`.
const NR_STATS: usize = 3;
const ANON_MAPPED: usize = 0;
const PGPGIN: usize = 1;
const PGPGOUT: usize = 2;

/// A memcg of the model: its `memory` counter first (so a counter reached through
/// `parent` is its memcg, `mem_cgroup_from_counter()`), then its hierarchical stats on a
/// line of their own (`memcg->vmstats[]`). Aligned to a 128-byte pair, so that every
/// instance places its counters the same way towards the adjacent-line prefetcher
/// (`memory` alone in the first pair, the stats in the second): A and its control A' then
/// differ in nothing but their addresses.
#[repr(C, align(128))]
struct Memcg<L> {
    memory: L,
    stats: Stats,
}

#[repr(C, align(64))]
struct Stats([AtomicI64; NR_STATS]);

impl<L: PageCounterLayout> Memcg<L> {
    /// A memcg under `parent` (boxed, so its address stays).
    ///
    /// # Safety
    ///
    /// `parent`, if any, must stay in place and outlive the new memcg.
    unsafe fn new(parent: Option<&Memcg<L>>, max: u64) -> Box<Self> {
        let parent = parent.map(|p| NonNull::from(&p.memory));
        Box::new(Memcg {
            // SAFETY: the caller keeps `parent` alive and in place.
            memory: unsafe { L::new(parent, max) },
            stats: Stats(Default::default()),
        })
    }

    /// `parent_mem_cgroup()`: one load of `memory.parent`.
    #[inline]
    fn parent(&self) -> Option<&Memcg<L>> {
        self.memory.parent_ptr().map(|p| {
            // SAFETY: every counter of this scenario is the `memory` field, at offset 0 of
            // a `#[repr(C)]` `Memcg<L>`, built only by `Memcg::new`, so the parent counter's
            // address is its memcg's; `new`'s contract keeps that memcg alive as long as
            // this one.
            unsafe { p.cast::<Memcg<L>>().as_ref() }
        })
    }
}

/// One CPU's state: its stock and stat batches (touched only by that CPU while runs are
/// going) and its counters, two lines of its own.
#[repr(C, align(128))]
#[derive(Default)]
struct PerCpu {
    /// Pages of its leaf the stock holds (`memcg_stock_pcp->nr_pages`).
    stock: AtomicU64,
    /// Pending stat deltas of its leaf (`vmstats_percpu`).
    pending: [AtomicI64; NR_STATS],
    pages: AtomicU64,
    charge_walks: AtomicU64,
    uncharge_walks: AtomicU64,
    stat_walks: AtomicU64,
    parent_usage_writes: AtomicU64,
    parent_reads: AtomicU64,
}

/// What a batch did, added to the CPU's counters once at its end.
#[derive(Default)]
struct Tally {
    charge_walks: u64,
    uncharge_walks: u64,
    stat_walks: u64,
    parent_usage_writes: u64,
    parent_reads: u64,
}

impl Tally {
    fn add(&mut self, walk: &Walk) {
        self.parent_usage_writes += walk.watched_writes;
        self.parent_reads += walk.parent_reads;
    }
}

/// One variant of one config.
struct PageCounterInst<L: PageCounterLayout> {
    /// Per CPU (by index), the leaf it charges: `leaves[0]` for every CPU in `one-memcg`.
    leaves: Vec<Box<Memcg<L>>>,
    parent: Box<Memcg<L>>,
    root: Box<Memcg<L>>,
    cpus: Vec<PerCpu>,
    /// Whether every CPU shares one leaf.
    one_leaf: bool,
    /// Whether this is the commit's "before" (A), for the line premise.
    before: bool,
}

impl<L: PageCounterLayout> PageCounterInst<L> {
    fn build(cpus: u32, one_leaf: bool, before: bool) -> Self {
        // SAFETY: the root has no parent.
        let root = unsafe { Memcg::<L>::new(None, memcg::PAGE_COUNTER_MAX) };
        let leaves = if one_leaf { 1 } else { cpus.max(1) };
        // SAFETY: `root` is boxed and dropped after `parent` (field order).
        let parent = unsafe { Memcg::new(Some(&root), LEAF_MAX * u64::from(leaves)) };
        let leaves = (0..leaves)
            // SAFETY: `parent` is boxed and dropped after the leaves (field order).
            .map(|_| unsafe { Memcg::new(Some(&parent), LEAF_MAX) })
            .collect();
        PageCounterInst {
            leaves,
            parent,
            root,
            cpus: (0..cpus).map(|_| PerCpu::default()).collect(),
            one_leaf,
            before,
        }
    }

    fn leaf(&self, index: usize) -> &Memcg<L> {
        if self.one_leaf {
            &self.leaves[0]
        } else {
            &self.leaves[index]
        }
    }

    /// `__mod_memcg_state()` / `__count_memcg_events()` of v5.11: the CPU's batch, and
    /// above [`CHARGE_BATCH`] a walk adding it to every level.
    fn mod_stat(&self, leaf: &Memcg<L>, cpu: &PerCpu, item: usize, val: i64, t: &mut Tally) {
        let x = cpu.pending[item].load(Ordering::Relaxed) + val;
        if x.unsigned_abs() > CHARGE_BATCH {
            let mut mi = Some(leaf);
            while let Some(m) = mi {
                m.stats.0[item].fetch_add(x, Ordering::Relaxed);
                mi = m.parent();
                t.parent_reads += 1;
            }
            t.stat_walks += 1;
            cpu.pending[item].store(0, Ordering::Relaxed);
        } else {
            cpu.pending[item].store(x, Ordering::Relaxed);
        }
    }

    /// v5.11's `try_charge()` of one page.
    fn charge_page(&self, leaf: &Memcg<L>, cpu: &PerCpu, t: &mut Tally) -> Result<(), String> {
        let stock = cpu.stock.load(Ordering::Relaxed);
        if stock > 0 {
            cpu.stock.store(stock - 1, Ordering::Relaxed);
            return Ok(());
        }
        let mut walk = Walk::watching(&self.parent.memory);
        let charged = layouts::try_charge(&leaf.memory, CHARGE_BATCH, &mut walk);
        t.add(&walk);
        t.charge_walks += 1;
        charged.map_err(|c| {
            format!(
                "a charge was refused at usage {}",
                c.usage().load(Ordering::Relaxed)
            )
        })?;
        cpu.stock.store(CHARGE_BATCH - 1, Ordering::Relaxed);
        // The memory.high check: every level's usage against its high, up through
        // parent_mem_cgroup().
        let mut mi = Some(leaf);
        let mut above_high = false;
        while let Some(m) = mi {
            above_high |=
                m.memory.usage().load(Ordering::Relaxed) > m.memory.high().load(Ordering::Relaxed);
            mi = m.parent();
            t.parent_reads += 1;
        }
        if above_high {
            return Err("a level went above memory.high, which no level sets".into());
        }
        Ok(())
    }

    fn drain(&self) {
        for (i, cpu) in self.cpus.iter().enumerate() {
            let stock = cpu.stock.swap(0, Ordering::Relaxed);
            if stock > 0 {
                layouts::uncharge(&self.leaf(i).memory, stock, &mut Walk::default());
            }
        }
    }
}

impl<L: PageCounterLayout + 'static> Instance for PageCounterInst<L> {
    fn objects(&self) -> Vec<crate::engine::ObjectDesc> {
        let counter = |label: String, m: &Memcg<L>| crate::engine::ObjectDesc {
            label,
            addr: core::ptr::from_ref(&m.memory) as usize,
            size: core::mem::size_of::<L>(),
            fields: L::fields().to_vec(),
        };
        let mut v = alloc::vec![
            counter(alloc::format!("{} (root)", L::NAME), &self.root),
            counter(alloc::format!("{} (parent)", L::NAME), &self.parent),
        ];
        for (i, leaf) in self
            .leaves
            .iter()
            .enumerate()
            .take(crate::vm::OBJECT_MEMCGS)
        {
            v.push(counter(alloc::format!("{} (leaf {i})", L::NAME), leaf));
        }
        v
    }

    fn run_batch(&self, ctx: &BatchCtx) -> Result<u64, ScenarioError> {
        let index = ctx.index as usize;
        let cpu = self
            .cpus
            .get(index)
            .ok_or_else(|| ScenarioError::new(format!("no CPU index {index}")))?;
        let leaf = self.leaf(index);
        let n = BATCH.min(ctx.max_ops).max(1);
        let mut t = Tally::default();
        for _ in 0..n {
            self.charge_page(leaf, cpu, &mut t)?;
            self.mod_stat(leaf, cpu, ANON_MAPPED, 1, &mut t);
            self.mod_stat(leaf, cpu, PGPGIN, 1, &mut t);
        }
        for _ in 0..n {
            self.mod_stat(leaf, cpu, ANON_MAPPED, -1, &mut t);
        }
        let mut walk = Walk::watching(&self.parent.memory);
        layouts::uncharge(&leaf.memory, n, &mut walk);
        t.add(&walk);
        t.uncharge_walks += 1;
        self.mod_stat(leaf, cpu, PGPGOUT, n as i64, &mut t);
        for (c, v) in [
            (&cpu.pages, n),
            (&cpu.charge_walks, t.charge_walks),
            (&cpu.uncharge_walks, t.uncharge_walks),
            (&cpu.stat_walks, t.stat_walks),
            (&cpu.parent_usage_writes, t.parent_usage_writes),
            (&cpu.parent_reads, t.parent_reads),
        ] {
            c.store(c.load(Ordering::Relaxed) + v, Ordering::Relaxed);
        }
        Ok(n)
    }

    fn counters(&self) -> Vec<(String, i64)> {
        let sum = |f: fn(&PerCpu) -> &AtomicU64| -> i64 {
            self.cpus
                .iter()
                .map(|c| f(c).load(Ordering::Relaxed) as i64)
                .sum()
        };
        vec![
            ("pages".into(), sum(|c| &c.pages)),
            ("charge_walks".into(), sum(|c| &c.charge_walks)),
            ("uncharge_walks".into(), sum(|c| &c.uncharge_walks)),
            ("stat_walks".into(), sum(|c| &c.stat_walks)),
            (
                "parent_usage_writes".into(),
                sum(|c| &c.parent_usage_writes),
            ),
            ("parent_reads".into(), sum(|c| &c.parent_reads)),
        ]
    }

    fn lock_classes(&self) -> Vec<&'static ksync::ClassData> {
        vec![PageCounterUsageWord::data()]
    }

    fn premises(&self, runs: &[&Run]) -> Premises {
        let same = layouts::usage_shares_line_with_parent(&self.parent.memory);
        let figure = if same { 1.0 } else { 0.0 };
        let line = if self.before {
            PremiseCheck::at_least("usage_parent_same_line", figure, 1.0)
        } else {
            PremiseCheck::zero("usage_parent_same_line", figure)
        };
        Ok(vec![
            PremiseCheck::above_zero(
                "parent_usage_writes_per_op",
                premise::per_op(runs, "parent_usage_writes")?,
            ),
            PremiseCheck::above_zero(
                "parent_reads_per_op",
                premise::per_op(runs, "parent_reads")?,
            ),
            line,
            PremiseCheck::above_zero(
                "usage_handoffs_per_op",
                premise::handoffs_per_op(runs, PageCounterUsageWord::NAME)?,
            )
            .across_cpus(),
        ])
    }

    fn check(&self) -> Result<(), String> {
        let usage = |m: &Memcg<L>| m.memory.usage().load(Ordering::Relaxed);
        let stocks: Vec<u64> = self
            .cpus
            .iter()
            .map(|c| c.stock.load(Ordering::Relaxed))
            .collect();
        let held: u64 = stocks.iter().sum();
        if self.one_leaf {
            if usage(&self.leaves[0]) != held {
                return Err(format!(
                    "the leaf's usage {} but the stocks hold {held}",
                    usage(&self.leaves[0])
                ));
            }
        } else {
            for (i, (leaf, stock)) in self.leaves.iter().zip(&stocks).enumerate() {
                if usage(leaf) != *stock {
                    return Err(format!(
                        "leaf {i}: usage {} but its CPU's stock holds {stock}",
                        usage(leaf)
                    ));
                }
            }
        }
        if usage(&self.parent) != held || usage(&self.root) != held {
            return Err(format!(
                "parent usage {}, root usage {}, stocks {held}",
                usage(&self.parent),
                usage(&self.root)
            ));
        }
        let levels = self
            .leaves
            .iter()
            .map(|b| &**b)
            .chain([&*self.parent, &*self.root]);
        for m in levels {
            if m.memory.failcnt().load(Ordering::Relaxed) != 0 {
                return Err("a charge failed".into());
            }
        }
        // Stats: every level's atomic plus the pending batches of the CPUs below it.
        let pages: i64 = self
            .cpus
            .iter()
            .map(|c| c.pages.load(Ordering::Relaxed) as i64)
            .sum();
        let stat = |m: &Memcg<L>, item: usize| m.stats.0[item].load(Ordering::Relaxed);
        let pending = |item: usize| -> i64 {
            self.cpus
                .iter()
                .map(|c| c.pending[item].load(Ordering::Relaxed))
                .sum()
        };
        for (item, want) in [(ANON_MAPPED, 0), (PGPGIN, pages), (PGPGOUT, pages)] {
            for m in [&*self.parent, &*self.root] {
                if stat(m, item) + pending(item) != want {
                    return Err(format!(
                        "stat {item}: {} + {} pending, expected {want}",
                        stat(m, item),
                        pending(item)
                    ));
                }
            }
        }
        Ok(())
    }

    fn teardown(self: Box<Self>) -> Result<(), ScenarioError> {
        self.check().map_err(ScenarioError::from)?;
        self.drain();
        let levels = self
            .leaves
            .iter()
            .map(|b| &**b)
            .chain([&*self.parent, &*self.root]);
        for m in levels {
            let u = m.memory.usage().load(Ordering::Relaxed);
            if u != 0 {
                return Err(ScenarioError::new(format!(
                    "{u} pages left charged after the drain"
                )));
            }
        }
        Ok(())
    }
}

/// The scenario (platform neutral: it needs no fault core).
pub struct PageCounterRelayout<'h, H: VmHost> {
    host: &'h H,
}

impl<'h, H: VmHost> PageCounterRelayout<'h, H> {
    /// The scenario; `host` only bounds the CPU count.
    #[must_use]
    pub fn new(host: &'h H) -> Self {
        PageCounterRelayout { host }
    }
}

impl<H: VmHost> BenchScenario for PageCounterRelayout<'_, H> {
    fn name(&self) -> &'static str {
        CATALOG.name
    }

    fn instantiate<'a>(
        &'a self,
        setup: &Setup<'_, 'a>,
    ) -> Result<Box<dyn Instance + 'a>, ScenarioError> {
        if setup.cpus as usize > self.host.nr_cpus() {
            return Err(ScenarioError::new(format!(
                "{} CPUs asked, {} served",
                setup.cpus,
                self.host.nr_cpus()
            )));
        }
        let one_leaf = match setup.config {
            "one-memcg" => true,
            "siblings" => false,
            c => return Err(ScenarioError::no_config(c)),
        };
        Ok(match setup.variant {
            "A" => Box::new(PageCounterInst::<PageCounterV511>::build(
                setup.cpus, one_leaf, true,
            )),
            "B" => Box::new(PageCounterInst::<PageCounter802f1d>::build(
                setup.cpus, one_leaf, false,
            )),
            v => return Err(ScenarioError::no_variant(v)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Storage;
    use crate::scenarios::tests::{counter, on, run_with, soft};

    fn build<L: PageCounterLayout + 'static>(
        cpus: u32,
        one_leaf: bool,
        before: bool,
    ) -> PageCounterInst<L> {
        PageCounterInst::build(cpus, one_leaf, before)
    }

    /// Two CPUs' batches: every page charged and uncharged, the stock refilled every 32
    /// pages, the parent's `usage` written by every walk, `parent` read on every walk.
    fn batches_on_two_cpus<L: PageCounterLayout + 'static>(one_leaf: bool) {
        let inst = build::<L>(2, one_leaf, true);
        for _ in 0..3 {
            for cpu in 0..2 {
                assert_eq!(inst.run_batch(&on(cpu, u64::MAX)).unwrap(), BATCH);
            }
        }
        inst.check().unwrap();
        assert_eq!(counter(&inst, "pages"), 6 * BATCH as i64);
        // 64 pages from a stock of 32: two refills per batch, which use the stock up.
        assert_eq!(counter(&inst, "charge_walks"), 12);
        assert_eq!(counter(&inst, "uncharge_walks"), 6);
        // Every walk writes the parent's `usage` once.
        assert_eq!(counter(&inst, "parent_usage_writes"), 18);
        assert!(counter(&inst, "stat_walks") > 0);
        // Three levels: every walk reads `parent` at each.
        assert!(counter(&inst, "parent_reads") >= 3 * (18 + counter(&inst, "stat_walks")));
        assert_eq!(inst.root.memory.usage().load(Ordering::Relaxed), 0);
        // Five pages from a fresh refill leave 27 in CPU 1's stock, charged at every level.
        inst.run_batch(&on(1, 5)).unwrap();
        inst.check().unwrap();
        let leaf = usize::from(!one_leaf);
        assert_eq!(inst.leaves[leaf].memory.usage().load(Ordering::Relaxed), 27);
        assert_eq!(inst.root.memory.usage().load(Ordering::Relaxed), 27);
        Box::new(inst).teardown().unwrap();
    }

    #[test]
    fn batches_charge_and_uncharge_every_page_in_both_layouts_and_configs() {
        for one_leaf in [true, false] {
            batches_on_two_cpus::<PageCounterV511>(one_leaf);
            batches_on_two_cpus::<PageCounter802f1d>(one_leaf);
        }
    }

    #[test]
    fn a_batch_stops_at_what_a_counted_run_still_owes() {
        let inst = build::<PageCounter802f1d>(1, true, false);
        assert_eq!(inst.run_batch(&on(0, 5)).unwrap(), 5);
        inst.check().unwrap();
        assert!(inst.run_batch(&on(1, 5)).is_err(), "no CPU index 1");
        Box::new(inst).teardown().unwrap();
    }

    /// The line premise follows the layout at the instance's addresses; the counts must be
    /// above zero.
    #[test]
    fn premises_name_the_line_and_need_writes_and_reads() {
        use crate::scenarios::tests::with_lock;
        let a = build::<PageCounterV511>(1, false, true);
        let b = build::<PageCounter802f1d>(1, false, false);
        let run = |writes, reads, handoffs| {
            with_lock(
                run_with(
                    &[("parent_usage_writes", writes), ("parent_reads", reads)],
                    64,
                ),
                PageCounterUsageWord::NAME,
                9,
                0,
                handoffs,
            )
        };
        let judged = |inst: &dyn Instance, r: &Run| inst.premises(&[r]).unwrap();
        let held = |inst: &dyn Instance, r: &Run| -> Vec<bool> {
            judged(inst, r).iter().map(|p| p.held).collect()
        };
        let ok = run(3, 20, 2);
        let names: Vec<&str> = judged(&a, &ok).iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            crate::catalog::scenario("page-counter-802f1d")
                .unwrap()
                .premises
        );
        assert_eq!(held(&a, &ok), [true; 4]);
        assert_eq!(held(&b, &ok), [true; 4]);
        assert_eq!(judged(&a, &ok)[2].figure, 1.0);
        assert_eq!(judged(&b, &ok)[2].figure, 0.0);
        assert_eq!(judged(&a, &ok)[3].figure, 2.0 / 64.0);
        assert_eq!(held(&a, &run(0, 20, 2)), [false, true, true, true]);
        assert_eq!(held(&b, &run(3, 0, 2)), [true, false, true, true]);
        // Nobody else wrote a counter between two writes of one CPU.
        assert_eq!(held(&b, &run(3, 20, 0)), [true, true, true, false]);
        assert!(judged(&b, &ok)[3].across_cpus && !judged(&b, &ok)[2].across_cpus);
        // A built as "before" from the after layout would not hold its line premise.
        let wrong = build::<PageCounter802f1d>(1, false, true);
        assert!(!judged(&wrong, &ok)[2].held);
        assert!(
            a.premises(&[&run_with(&[("parent_reads", 20)], 64)])
                .is_err()
        );
        Box::new(a).teardown().unwrap();
        Box::new(b).teardown().unwrap();
        Box::new(wrong).teardown().unwrap();
    }

    #[test]
    fn check_and_teardown_fail_on_a_charge_no_stock_holds() {
        let inst = build::<PageCounterV511>(2, false, true);
        inst.run_batch(&on(0, u64::MAX)).unwrap();
        inst.check().unwrap();
        let mut w = Walk::default();
        layouts::try_charge(&inst.leaves[1].memory, 1, &mut w).unwrap();
        assert!(inst.check().is_err(), "a leaked page");
        assert!(Box::new(inst).teardown().is_err());
        // A stat batch lost on the way up.
        let inst = build::<PageCounter802f1d>(1, true, false);
        inst.run_batch(&on(0, u64::MAX)).unwrap();
        inst.parent.stats.0[PGPGIN].fetch_add(1, Ordering::Relaxed);
        assert!(inst.check().is_err());
    }

    #[test]
    fn the_provider_knows_its_configs_and_variants() {
        let host = soft(2, 64);
        let s = PageCounterRelayout::new(host);
        for config in ["one-memcg", "siblings"] {
            for variant in ["A", "B"] {
                let storage = Storage::new();
                let setup = Setup {
                    config,
                    variant,
                    cpus: 2,
                    storage: &storage,
                };
                s.instantiate(&setup).unwrap().teardown().unwrap();
            }
        }
        let storage = Storage::new();
        let bad = |config, variant, cpus| {
            s.instantiate(&Setup {
                config,
                variant,
                cpus,
                storage: &storage,
            })
            .is_err()
        };
        assert!(bad("anon", "A", 1));
        assert!(bad("siblings", "C", 1));
        assert!(bad("siblings", "A", 3), "more CPUs than the host serves");
    }
}
