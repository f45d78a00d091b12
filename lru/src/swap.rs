//! Per-CPU folio batches: `lru_add`, `activate` and `deactivate` (mm/swap.c).
//!
//! Models `struct folio_batch` (31 entries, `PAGEVEC_SIZE`), `struct cpu_fbatches`,
//! `folio_add_lru()`, `folio_activate()`, `folio_deactivate()`, `folio_batch_move_lru()`,
//! `lru_add_drain_cpu()` and `lru_add_drain_all()`. A batch is moved to the lruvecs when
//! full, taking each lruvec's lock once per run of consecutive folios of that lruvec
//! ([`crate::lruvec::folio_lruvec_relock`]). The CPU is an argument (`cpu: usize`, fixed
//! count at construction); each CPU's batches sit behind their own lock (class
//! `cpu_fbatches.lock`, Linux's `local_lock`), which also lets another CPU drain them —
//! Linux queues work on each CPU instead. `drain_all` uses Linux's `lru_drain_gen` so that callers racing with a
//! complete drain that started after them return without draining again.

use crate::error::LruError;
use crate::folio::{Folio, FolioFlags};
use crate::lock_classes::{FbatchLock, LruDrainLock};
use crate::lruvec::{LruvecGuard, LruvecHost, LruvecLookup, folio_lruvec_relock};
use crate::sync::Lock;
use crate::sync::atomic::{AtomicU64, Ordering};
use ksync::{LockFamily, PerCpu};

/// Entries per batch (`PAGEVEC_SIZE`).
pub const FOLIO_BATCH_SIZE: usize = 31;

/// `struct folio_batch`: up to 31 folios waiting to be moved under one lock hold.
#[derive(Debug, Clone)]
pub struct FolioBatch {
    nr: u8,
    folios: [Option<&'static Folio>; FOLIO_BATCH_SIZE],
}

impl Default for FolioBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl FolioBatch {
    /// An empty batch (`folio_batch_init`).
    #[must_use]
    pub const fn new() -> Self {
        FolioBatch {
            nr: 0,
            folios: [None; FOLIO_BATCH_SIZE],
        }
    }

    /// Folios in the batch (`folio_batch_count`).
    #[must_use]
    pub fn count(&self) -> usize {
        usize::from(self.nr)
    }

    /// Free entries (`folio_batch_space`).
    #[must_use]
    pub fn space(&self) -> usize {
        FOLIO_BATCH_SIZE - self.count()
    }

    /// Add a folio; returns the space left, 0 meaning "now full, move it"
    /// (`folio_batch_add`). A full batch refuses the folio with `Err(folio)`.
    pub fn add(&mut self, folio: &'static Folio) -> Result<usize, &'static Folio> {
        if self.space() == 0 {
            return Err(folio);
        }
        self.folios[self.count()] = Some(folio);
        self.nr += 1;
        Ok(self.space())
    }

    /// The folios, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &'static Folio> + '_ {
        self.folios[..self.count()].iter().flatten().copied()
    }

    /// Empty the batch (`folio_batch_reinit`), returning its contents.
    pub fn take(&mut self) -> FolioBatch {
        core::mem::take(self)
    }
}

/// Which move a batch performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchKind {
    /// `lru_add`: put new folios on the LRU.
    LruAdd,
    /// `activate`: promote folios already on the LRU.
    Activate,
    /// `lru_deactivate`: demote active folios.
    Deactivate,
}

/// `struct cpu_fbatches`: one CPU's batches.
#[derive(Debug, Default)]
pub struct CpuFbatches {
    /// `fbatches->lru_add`.
    pub lru_add: FolioBatch,
    /// `fbatches->activate`.
    pub activate: FolioBatch,
    /// `fbatches->lru_deactivate`.
    pub deactivate: FolioBatch,
}

impl CpuFbatches {
    /// Folios pending in all three batches (`cpu_needs_drain`).
    #[must_use]
    pub fn pending(&self) -> usize {
        self.lru_add.count() + self.activate.count() + self.deactivate.count()
    }
}

/// Result of moving a batch: how many folios moved and the first error met, if any.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MoveStats {
    /// Folios placed or moved.
    pub moved: usize,
    /// Folios skipped (someone else isolated them first, or nothing to do).
    pub skipped: usize,
    /// lru_lock acquisitions (relock keeps one hold across a run of one lruvec).
    pub lock_holds: usize,
    /// The first error met; the other folios were still processed.
    pub error: Option<LruError>,
}

impl MoveStats {
    /// Whether a batch call failed: its own input was refused (`Err`), or a folio of a
    /// batch it moved met an error ([`MoveStats::error`]). The callers that have nowhere to
    /// send either (an unmap's `lru_add_drain`, a fault queueing a new folio) warn on it
    /// (`VM_WARN_ON_ONCE`) instead of dropping it.
    #[must_use]
    pub fn failed(r: &Result<MoveStats, LruError>) -> bool {
        !matches!(r, Ok(MoveStats { error: None, .. }))
    }

    /// [`MoveStats::failed`] for `drain_all`'s outcome (`Ok(None)`: another caller drained).
    #[must_use]
    pub fn drain_all_failed(r: &Result<Option<MoveStats>, LruError>) -> bool {
        !matches!(r, Ok(None | Some(MoveStats { error: None, .. })))
    }

    fn merge(&mut self, o: MoveStats) {
        self.moved += o.moved;
        self.skipped += o.skipped;
        self.lock_holds += o.lock_holds;
        self.error = self.error.or(o.error);
    }
}

/// `folio_batch_move_lru`: apply `kind` to every folio of `batch` on `cpu`, relocking per
/// lruvec, then drop the batch's folio references (`folios_put`). The whole move runs in
/// one read-side section of the lookup (RCU for memcg), which bounds every lruvec it finds.
/// A folio whose LRU flag is already set is isolated first (TestClearLRU), and only then
/// is its lruvec looked up and locked: the winner of the flag owns the folio, so its memcg
/// cannot change under the lookup.
pub fn folio_batch_move_lru<H, L>(
    batch: FolioBatch,
    kind: BatchKind,
    cpu: usize,
    lookup: &L,
) -> MoveStats
where
    H: LruvecHost,
    L: LruvecLookup<H> + ?Sized,
{
    let mut stats = MoveStats::default();
    let rcu = match lookup.read_lock(cpu) {
        Ok(g) => g,
        Err(e) => {
            stats.error = Some(e);
            // Nothing was moved; the batch's references are still dropped.
            for folio in batch.iter() {
                ksync::warn_on_once!(
                    lookup.folio_put(cpu, folio).is_err(),
                    "a folio batch dropped a reference the folio did not hold"
                );
            }
            return stats;
        }
    };
    let mut guard: Option<LruvecGuard<'_, H>> = None;
    for folio in batch.iter() {
        // Block memcg migration while the folio moves: only the TestClearLRU winner may.
        if kind != BatchKind::LruAdd && !folio.test_clear_lru() {
            stats.skipped += 1;
            continue;
        }
        // The LRU flag is ours (or, for an add, not yet set): a release may run here.
        ksync::race::window();
        let prev = guard.as_ref().map(|g| g.lruvec().lock_addr());
        let mut g = match folio_lruvec_relock(guard.take(), folio, lookup, &rcu) {
            Ok(g) => g,
            Err(e) => {
                if kind != BatchKind::LruAdd {
                    folio.set(FolioFlags::LRU);
                }
                stats.error.get_or_insert(e);
                continue;
            }
        };
        if prev != Some(g.lruvec().lock_addr()) {
            stats.lock_holds += 1;
        }
        let res = match kind {
            BatchKind::LruAdd => g.add_folio(folio).map(|()| true),
            BatchKind::Activate => g.activate_isolated(folio),
            BatchKind::Deactivate => g.deactivate_isolated(folio),
        };
        match res {
            Ok(true) => stats.moved += 1,
            Ok(false) => stats.skipped += 1,
            Err(e) => {
                stats.error.get_or_insert(e);
            }
        }
        guard = Some(g);
    }
    drop(guard);
    drop(rcu);
    for folio in batch.iter() {
        if let Err(e) = lookup.folio_put(cpu, folio) {
            stats.error.get_or_insert(e);
        }
    }
    stats
}

/// All CPUs' folio batches plus the drain generation (`cpu_fbatches`, `lru_drain_gen`).
pub struct LruBatches<F: LockFamily> {
    cpus: PerCpu<lock_api::Mutex<Lock<F, FbatchLock>, CpuFbatches>>,
    drain_gen: AtomicU64,
    drain_lock: lock_api::Mutex<Lock<F, LruDrainLock>, ()>,
}

impl<F: LockFamily> core::fmt::Debug for LruBatches<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LruBatches")
            .field("nr_cpus", &self.cpus.nr_cpus())
            .field("drain_gen", &self.drain_gen.load(Ordering::Relaxed))
            .finish()
    }
}

impl<F: LockFamily> LruBatches<F> {
    /// Empty batches for `nr_cpus` CPUs.
    pub fn new(nr_cpus: usize) -> Self {
        LruBatches {
            cpus: PerCpu::new(nr_cpus, |_| lock_api::Mutex::new(CpuFbatches::default())),
            drain_gen: AtomicU64::new(0),
            drain_lock: lock_api::Mutex::new(()),
        }
    }

    /// Number of CPUs fixed at construction.
    #[must_use]
    pub fn nr_cpus(&self) -> usize {
        self.cpus.nr_cpus()
    }

    /// `lru_drain_gen`: how many `drain_all` rounds have started.
    #[must_use]
    pub fn drain_gen(&self) -> u64 {
        self.drain_gen.load(Ordering::Acquire)
    }

    fn cpu(
        &self,
        cpu: usize,
    ) -> Result<&lock_api::Mutex<Lock<F, FbatchLock>, CpuFbatches>, LruError> {
        self.cpus.get(cpu).ok_or(LruError::InvalidCpu(cpu))
    }

    /// Folios pending on `cpu`.
    pub fn pending(&self, cpu: usize) -> Result<usize, LruError> {
        Ok(self.cpu(cpu)?.lock().pending())
    }

    fn add_and_move<H, L>(
        &self,
        cpu: usize,
        folio: &'static Folio,
        kind: BatchKind,
        lookup: &L,
    ) -> Result<MoveStats, LruError>
    where
        H: LruvecHost,
        L: LruvecLookup<H> + ?Sized,
    {
        let mut fb = self.cpu(cpu)?.lock();
        let batch = match kind {
            BatchKind::LruAdd => &mut fb.lru_add,
            BatchKind::Activate => &mut fb.activate,
            BatchKind::Deactivate => &mut fb.deactivate,
        };
        folio.get();
        let mut stats = MoveStats::default();
        let space = match batch.add(folio) {
            Ok(space) => space,
            Err(folio) => {
                // Batches are moved the moment they fill, under this same lock, so this
                // is only reachable if a move was interrupted; move and retry.
                stats.merge(folio_batch_move_lru(batch.take(), kind, cpu, lookup));
                batch.add(folio).unwrap_or(0)
            }
        };
        if space == 0 {
            stats.merge(folio_batch_move_lru(batch.take(), kind, cpu, lookup));
        }
        drop(fb);
        // Errors met while moving *other* folios are reported in the stats; `Err` is
        // reserved for bad input from this caller.
        Ok(stats)
    }

    /// `folio_add_lru`: queue a new folio for the LRU on `cpu`; moves the batch when full.
    /// `Err` means this call's input was bad (CPU out of range, folio already on the
    /// LRU); problems with folios of the moved batch are in [`MoveStats::error`].
    /// The fault path sets `ACTIVE` first (as `lru_gen_in_fault()` does) to place the
    /// folio in the youngest generation.
    pub fn folio_add_lru<H, L>(
        &self,
        cpu: usize,
        folio: &'static Folio,
        lookup: &L,
    ) -> Result<MoveStats, LruError>
    where
        H: LruvecHost,
        L: LruvecLookup<H> + ?Sized,
    {
        self.cpu(cpu)?;
        if folio.test_lru() {
            return Err(LruError::AlreadyOnLru);
        }
        self.add_and_move(cpu, folio, BatchKind::LruAdd, lookup)
    }

    /// `folio_activate`: queue an inactive LRU folio for promotion on `cpu`. Folios not on
    /// the LRU, already active or unevictable are ignored (`Ok` with nothing moved).
    pub fn folio_activate<H, L>(
        &self,
        cpu: usize,
        folio: &'static Folio,
        lookup: &L,
    ) -> Result<MoveStats, LruError>
    where
        H: LruvecHost,
        L: LruvecLookup<H> + ?Sized,
    {
        self.cpu(cpu)?;
        let f = folio.flags();
        if !f.contains(FolioFlags::LRU)
            || f.intersects(FolioFlags::ACTIVE | FolioFlags::UNEVICTABLE)
        {
            return Ok(MoveStats::default());
        }
        self.add_and_move(cpu, folio, BatchKind::Activate, lookup)
    }

    /// `folio_deactivate`: queue an LRU folio for demotion on `cpu`.
    pub fn folio_deactivate<H, L>(
        &self,
        cpu: usize,
        folio: &'static Folio,
        lookup: &L,
    ) -> Result<MoveStats, LruError>
    where
        H: LruvecHost,
        L: LruvecLookup<H> + ?Sized,
    {
        self.cpu(cpu)?;
        let f = folio.flags();
        if !f.contains(FolioFlags::LRU) || f.contains(FolioFlags::UNEVICTABLE) {
            return Ok(MoveStats::default());
        }
        self.add_and_move(cpu, folio, BatchKind::Deactivate, lookup)
    }

    /// `lru_add_drain_cpu`: `cpu` moves every batch of its own.
    pub fn drain_cpu<H, L>(&self, cpu: usize, lookup: &L) -> Result<MoveStats, LruError>
    where
        H: LruvecHost,
        L: LruvecLookup<H> + ?Sized,
    {
        self.drain_cpu_from(cpu, cpu, lookup)
    }

    /// Move every batch of `target` from `self_cpu` (the CPU doing the work, whose read
    /// side bounds the lookups).
    fn drain_cpu_from<H, L>(
        &self,
        target: usize,
        self_cpu: usize,
        lookup: &L,
    ) -> Result<MoveStats, LruError>
    where
        H: LruvecHost,
        L: LruvecLookup<H> + ?Sized,
    {
        let mut fb = self.cpu(target)?.lock();
        let mut stats = MoveStats::default();
        // An empty batch is skipped without being moved out (each is 256 bytes, and the
        // unmap and truncate paths drain this CPU every time, usually finding two of the
        // three empty).
        for kind in [
            BatchKind::LruAdd,
            BatchKind::Activate,
            BatchKind::Deactivate,
        ] {
            let batch = match kind {
                BatchKind::LruAdd => &mut fb.lru_add,
                BatchKind::Activate => &mut fb.activate,
                BatchKind::Deactivate => &mut fb.deactivate,
            };
            if batch.count() > 0 {
                stats.merge(folio_batch_move_lru(batch.take(), kind, self_cpu, lookup));
            }
        }
        drop(fb);
        Ok(stats)
    }

    /// `lru_add_drain_all`: drain every CPU. If another caller started *and finished* a
    /// full drain after this call began, returns `Ok(None)` without draining again
    /// (`lru_drain_gen`); otherwise the combined stats. `self_cpu` is the CPU doing the
    /// work (Linux queues the drain on each CPU; here the caller drains every CPU's batches
    /// under their locks).
    pub fn drain_all<H, L>(
        &self,
        self_cpu: usize,
        lookup: &L,
    ) -> Result<Option<MoveStats>, LruError>
    where
        H: LruvecHost,
        L: LruvecLookup<H> + ?Sized,
    {
        self.cpu(self_cpu)?;
        let this_gen = self.drain_gen.load(Ordering::Acquire);
        let _serial = self.drain_lock.lock();
        // Someone bumped the generation after we sampled it and, holding the lock, drained
        // every CPU (including everything queued before our call): nothing left for us.
        if this_gen != self.drain_gen.load(Ordering::Relaxed) {
            return Ok(None);
        }
        self.drain_gen.store(this_gen + 1, Ordering::Release);
        let mut stats = MoveStats::default();
        for cpu in 0..self.cpus.nr_cpus() {
            stats.merge(self.drain_cpu_from(cpu, self_cpu, lookup)?);
        }
        Ok(Some(stats))
    }
}
