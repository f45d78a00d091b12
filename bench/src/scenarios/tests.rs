//! What the seeds' scenario tests share: a small [`SoftHost`], batches asked of one CPU at
//! a time, and [`TraceHost`], the soft fault core with every access of every address space
//! recorded and held to the size the scenario asked for.
//!
//! The scenario tests (a `tests` module at the bottom of each `seedNNN.rs`) build one
//! instance directly, drive its batches from the test thread and look at what it did: the
//! memcgs and limits it set up, the pages its batches touched, the fault core's counters,
//! and that its `check` and `teardown` fail when what they guard is broken.

use crate::engine::{BatchCtx, Instance};
use crate::vm::soft::SoftHost;
use crate::vm::{Pn, Space, VmHost};
use memcg::MemcgRef;
use mm::context::{Vm, VmConfig};
use mm::fault::FaultError;
use mm::mm_struct::MmStruct;
use mm::soft_mmu::SoftMmu;
use mm::vma::VmArea;
use std::boxed::Box;
use std::collections::BTreeSet;
use std::string::String;
use std::sync::{Arc, Mutex, MutexGuard};
use std::vec::Vec;

/// A soft fault core of `cpus` CPUs over `mib` MiB, for the rest of the process.
pub(crate) fn soft(cpus: usize, mib: u64) -> &'static SoftHost {
    Box::leak(Box::new(SoftHost::new(cpus, mib).expect("a soft host")))
}

/// One batch on CPU `cpu` (also its index), at most `max_ops` operations, untimed.
pub(crate) fn on(cpu: u32, max_ops: u64) -> BatchCtx {
    BatchCtx {
        cpu,
        index: cpu,
        max_ops,
        deadline_ns: u64::MAX,
    }
}

/// Counter `name` of `inst` (0 when it has none).
pub(crate) fn counter(inst: &dyn Instance, name: &str) -> i64 {
    inst.counters()
        .into_iter()
        .find(|(n, _)| n == name)
        .map_or(0, |(_, v)| v)
}

/// A measured run of `ops` operations whose counters changed by `counters`, for premise
/// checks.
pub(crate) fn run_with(counters: &[(&str, i64)], ops: u64) -> crate::record::Run {
    let mut r =
        crate::record::Run::new("test", "test", "A", 1, 1, false, ops, 1_000_000).expect("a run");
    r.counters = counters.iter().map(|&(n, v)| (n.into(), v)).collect();
    r
}

/// `r` with lock (or shared-word) class `class` taken `acquisitions` times, `contended` of
/// them contended and `handoffs` of them handed between CPUs.
pub(crate) fn with_lock(
    mut r: crate::record::Run,
    class: &str,
    acquisitions: u64,
    contended: u64,
    handoffs: u64,
) -> crate::record::Run {
    r.locks.insert(
        class.into(),
        crate::record::LockStat {
            acquisitions,
            contended,
            handoffs,
            ..Default::default()
        },
    );
    r
}

/// `runs` as the engine hands them to `inst`'s premises: each lists every class the
/// instance names in its lock classes, at zero where the run did not take it.
pub(crate) fn as_recorded(
    inst: &dyn Instance,
    runs: &[crate::record::Run],
) -> Vec<crate::record::Run> {
    runs.iter()
        .map(|r| {
            let mut r = r.clone();
            for c in inst.lock_classes() {
                r.locks.entry(c.name().into()).or_default();
            }
            r
        })
        .collect()
}

/// The verdicts of `inst`'s premises over `runs` as the engine records them
/// ([`as_recorded`]).
pub(crate) fn held(inst: &dyn Instance, runs: &[crate::record::Run]) -> Vec<bool> {
    let runs = as_recorded(inst, runs);
    let refs: Vec<&crate::record::Run> = runs.iter().collect();
    inst.premises(&refs)
        .unwrap()
        .iter()
        .map(|p| p.held)
        .collect()
}

/// Charges one page to `m` that no folio holds: the accounting the checker and teardown
/// verify is now wrong, as a scenario that leaked a charge would leave it.
pub(crate) fn leak_a_charge<P: Pn>(m: &MemcgRef<'_, P, mm::folios::VmFolios>) {
    m.try_charge(0, 1).expect("one page fits");
}

/// One store or load a scenario made through an address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Access {
    /// The address space, in creation order.
    pub space: usize,
    /// The CPU it ran on.
    pub cpu: usize,
    /// The address.
    pub va: u64,
    /// A store (not a load).
    pub write: bool,
}

/// What the address spaces of a [`TraceHost`] were asked for and saw.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    /// Per address space: its first address and the size the scenario asked for.
    pub spaces: Vec<(u64, u64)>,
    /// Every access, in order.
    pub accesses: Vec<Access>,
    /// Accesses outside the size asked for (refused with [`FaultError::NoRegion`]).
    pub outside: Vec<Access>,
}

impl Trace {
    /// The pages (`va >> 12`) stored to from space `space`.
    pub fn pages_written(&self, space: usize) -> BTreeSet<u64> {
        self.accesses
            .iter()
            .filter(|a| a.space == space && a.write)
            .map(|a| a.va >> 12)
            .collect()
    }
}

/// [`SoftHost`] with every address space traced: each access is recorded, and one outside
/// the `size` the scenario asked for is refused, as a platform that gives exactly what
/// [`VmHost::new_space`] promises (at least `size` bytes) would. The soft host itself
/// rounds every space up to 1 GiB, so a scenario that asks for too little would pass on it.
pub(crate) struct TraceHost {
    soft: &'static SoftHost,
    trace: Arc<Mutex<Trace>>,
}

impl TraceHost {
    /// A traced host of `cpus` CPUs over `mib` MiB.
    pub fn new(cpus: usize, mib: u64) -> Self {
        TraceHost {
            soft: soft(cpus, mib),
            trace: Arc::default(),
        }
    }

    /// The soft host underneath.
    pub fn soft(&self) -> &'static SoftHost {
        self.soft
    }

    /// What was recorded so far.
    pub fn trace(&self) -> MutexGuard<'_, Trace> {
        self.trace.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets the accesses recorded so far (the spaces stay).
    pub fn clear(&self) {
        let mut t = self.trace();
        t.accesses.clear();
        t.outside.clear();
    }
}

impl VmHost for TraceHost {
    type Mmu = SoftMmu;

    fn nr_cpus(&self) -> usize {
        self.soft.nr_cpus()
    }

    fn node_of(&self, cpu: usize) -> u32 {
        self.soft.node_of(cpu)
    }

    fn new_vm<P: Pn>(&self, cfg: VmConfig) -> Result<Box<Vm<P, SoftMmu>>, String> {
        self.soft.new_vm(cfg)
    }

    fn new_space<'v, P: Pn, V: VmArea + 'static>(
        &self,
        vm: &'v Vm<P, SoftMmu>,
        size: u64,
    ) -> Result<Box<dyn Space<V, SoftMmu> + 'v>, String> {
        let inner = self.soft.new_space::<P, V>(vm, size)?;
        let mut t = self.trace();
        let id = t.spaces.len();
        t.spaces.push((inner.base(), size));
        Ok(Box::new(TraceSpace {
            inner,
            id,
            size,
            trace: Arc::clone(&self.trace),
        }))
    }

    fn rcu_barrier(&self) -> Result<(), String> {
        self.soft.rcu_barrier()
    }
}

struct TraceSpace<'v, V: VmArea> {
    inner: Box<dyn Space<V, SoftMmu> + 'v>,
    id: usize,
    size: u64,
    trace: Arc<Mutex<Trace>>,
}

impl<V: VmArea> TraceSpace<'_, V> {
    /// Records the access; `false` when it is outside the size asked for.
    fn record(&self, cpu: usize, va: u64, write: bool) -> bool {
        let a = Access {
            space: self.id,
            cpu,
            va,
            write,
        };
        let base = self.inner.base();
        let mut t = self.trace.lock().unwrap_or_else(|p| p.into_inner());
        t.accesses.push(a);
        let inside = va >= base && va - base < self.size;
        if !inside {
            t.outside.push(a);
        }
        inside
    }
}

impl<V: VmArea> Space<V, SoftMmu> for TraceSpace<'_, V> {
    fn mm(&self) -> &MmStruct<V, SoftMmu> {
        self.inner.mm()
    }

    fn base(&self) -> u64 {
        self.inner.base()
    }

    fn use_mm(&self, cpu: usize) {
        self.inner.use_mm(cpu);
    }

    fn write(&self, cpu: usize, va: u64, value: u64) -> Result<(), FaultError> {
        if !self.record(cpu, va, true) {
            return Err(FaultError::NoRegion);
        }
        self.inner.write(cpu, va, value)
    }

    fn read(&self, cpu: usize, va: u64) -> Result<u64, FaultError> {
        if !self.record(cpu, va, false) {
            return Err(FaultError::NoRegion);
        }
        self.inner.read(cpu, va)
    }
}
