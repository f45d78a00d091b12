//! Per-CPU folio batches: `lru_add`, `activate` and `deactivate` (mm/swap.c).
//!
//! Models `struct folio_batch` (31 entries, `PAGEVEC_SIZE`), `struct cpu_fbatches`,
//! `folio_add_lru()`, `folio_activate()`, `folio_deactivate()`, `folio_batch_move_lru()`,
//! `lru_add_drain_cpu()` and `lru_add_drain_all()`. A batch is moved to the lruvecs when
//! full, taking each lruvec's lock once per run of consecutive folios of that lruvec
//! ([`crate::lruvec::folio_lruvec_relock`]). The CPU is an argument (`cpu: usize`, fixed
//! count at construction); each CPU's batches sit behind their own local lock (class
//! `cpu_fbatches.lock`, [`ksync::LocalLock`]). On a platform whose CPU ids are CPUs
//! ([`LruBatches::new_local`], the kernel) it is Linux's `local_lock`: only the CPU itself
//! takes it, with no atomic, and `lru_add_drain_all` runs `lru_add_drain_cpu` on every CPU
//! and waits, as Linux queues a drain on each CPU and flushes it. Elsewhere
//! ([`LruBatches::new`]: host tests, loom) it is a lock, which lets one thread drive and
//! drain any CPU's batches. `drain_all` uses Linux's `lru_drain_gen` so that callers racing
//! with a complete drain that started after them return without draining again.

use crate::error::LruError;
use crate::folio::{Folio, FolioFlags};
use crate::lock_classes::{FbatchLock, LruDrainLock, LruDrainStatsLock};
use crate::lruvec::{LruvecGuard, LruvecHost, LruvecLookup, folio_lruvec_relock};
use crate::sync::Lock;
use crate::sync::atomic::{AtomicU64, Ordering};
use core::ptr;
use ksync::local_lock::{LocalCpus, LocalLockError, LocalLockGuard};
use ksync::{LocalLock, LockFamily, PerCpu};

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

    /// Empty the batch in place (`folio_batch_reinit`): the count alone, as Linux's; the
    /// entries past it are never read.
    pub fn reinit(&mut self) {
        self.nr = 0;
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
/// lruvec, then drop the batch's folio references and empty it (`folios_put`, which ends in
/// `folio_batch_reinit`). The batch is moved where it lies, as Linux passes its pointer
/// (a by-value batch would be its 256 bytes copied per move). The whole move runs in
/// one read-side section of the lookup (RCU for memcg), which bounds every lruvec it finds.
/// A folio whose LRU flag is already set is isolated first (TestClearLRU), and only then
/// is its lruvec looked up and locked: the winner of the flag owns the folio, so its memcg
/// cannot change under the lookup.
///
/// Linux hands the loop a `move_fn` per kind (`lru_add_fn`, `folio_activate_fn`,
/// `lru_deactivate_fn`); here each kind gets its own copy of the loop (`move_each`), so
/// the fault path's add runs a loop holding the add alone, not one that asks the kind
/// twice per folio and carries all three moves: in that one the add's per-folio path
/// crossed 4 KiB pages and called the list insert out of line (four transitions per folio
/// that TCG cannot chain); its own loop inlines the insert.
pub fn folio_batch_move_lru<H, L>(
    batch: &mut FolioBatch,
    kind: BatchKind,
    cpu: usize,
    lookup: &L,
) -> MoveStats
where
    H: LruvecHost,
    L: LruvecLookup<H> + ?Sized,
{
    match kind {
        BatchKind::LruAdd => move_each(batch, false, cpu, lookup, |g, folio| {
            g.add_relocked_folio(folio).map(|()| true)
        }),
        BatchKind::Activate => move_each(batch, true, cpu, lookup, |g, folio| {
            g.activate_isolated(folio)
        }),
        BatchKind::Deactivate => move_each(batch, true, cpu, lookup, |g, folio| {
            g.deactivate_isolated(folio)
        }),
    }
}

/// [`folio_batch_move_lru`]'s loop with its move `move_fn` (true: moved, false: skipped);
/// `isolate`: each folio is on the LRU and is isolated first (TestClearLRU), its flag set
/// again if its lruvec cannot be locked. Out of line: one function per kind, which the
/// kernel's build places on a page of its own (docs/design.md, "Where the measured code
/// sits").
#[inline(never)]
fn move_each<H, L, F>(
    batch: &mut FolioBatch,
    isolate: bool,
    cpu: usize,
    lookup: &L,
    mut move_fn: F,
) -> MoveStats
where
    H: LruvecHost,
    L: LruvecLookup<H> + ?Sized,
    F: FnMut(&mut LruvecGuard<'_, H>, &'static Folio) -> Result<bool, LruError>,
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
            batch.reinit();
            return stats;
        }
    };
    let mut guard: Option<LruvecGuard<'_, H>> = None;
    for folio in batch.iter() {
        // Block memcg migration while the folio moves: only the TestClearLRU winner may.
        if isolate && !folio.test_clear_lru() {
            stats.skipped += 1;
            continue;
        }
        // The LRU flag is ours (or, for an add, not yet set): a release may run here.
        ksync::race::window();
        let prev = guard.as_ref().map(LruvecGuard::lruvec);
        let mut g = match folio_lruvec_relock(guard.take(), folio, lookup, &rcu) {
            Ok(g) => g,
            Err(e) => {
                if isolate {
                    folio.set(FolioFlags::LRU);
                }
                stats.error.get_or_insert(e);
                continue;
            }
        };
        // A new hold unless the guard kept its lock: the same lruvec (one compare, the
        // usual answer within a batch), or another under the same lock (seed 004's node
        // lock).
        let now = g.lruvec();
        if !prev.is_some_and(|p| ptr::eq(p, now) || p.lock_addr() == now.lock_addr()) {
            stats.lock_holds += 1;
        }
        match move_fn(&mut g, folio) {
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
    batch.reinit();
    stats
}

/// Why a CPU's batches could not be locked, as an [`LruError`].
#[cold]
fn refused(e: LocalLockError) -> LruError {
    match e {
        LocalLockError::NotOwner { owner, cpu } => LruError::NotThisCpu { owner, cpu },
        LocalLockError::Held => LruError::LocalLockHeld,
    }
}

/// All CPUs' folio batches plus the drain generation (`cpu_fbatches`, `lru_drain_gen`).
pub struct LruBatches<F: LockFamily> {
    cpus: PerCpu<LocalLock<F, FbatchLock, CpuFbatches>>,
    /// The platform's CPUs, when the batches are owned by them ([`LruBatches::new_local`]).
    local: Option<LocalCpus>,
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
    /// Empty batches for `nr_cpus` CPUs, each behind a lock: any thread may name any CPU.
    pub fn new(nr_cpus: usize) -> Self {
        LruBatches {
            cpus: PerCpu::new(nr_cpus, |_| LocalLock::locked(CpuFbatches::default())),
            local: None,
            drain_gen: AtomicU64::new(0),
            drain_lock: lock_api::Mutex::new(()),
        }
    }

    /// Empty batches for CPUs `0..nr_cpus` of `cpus`, each taken only by its own CPU
    /// without an atomic (`local_lock`); a call naming another CPU than the one it runs on
    /// fails with [`LruError::NotThisCpu`], and [`LruBatches::drain_all`] drains each CPU
    /// on that CPU.
    pub fn new_local(nr_cpus: usize, cpus: LocalCpus) -> Self {
        LruBatches {
            cpus: PerCpu::new(nr_cpus, |c| {
                LocalLock::owned(c, &cpus, CpuFbatches::default())
            }),
            local: Some(cpus),
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

    fn cpu(&self, cpu: usize) -> Result<&LocalLock<F, FbatchLock, CpuFbatches>, LruError> {
        self.cpus.get(cpu).ok_or(LruError::InvalidCpu(cpu))
    }

    /// `cpu`'s batches, locked (`local_lock(&cpu_fbatches.lock)`).
    #[inline(always)]
    fn lock(&self, cpu: usize) -> Result<LocalLockGuard<'_, F, FbatchLock, CpuFbatches>, LruError> {
        self.cpu(cpu)?.lock().map_err(refused)
    }

    /// Folios pending on `cpu` (with owned batches, only `cpu` itself may ask).
    pub fn pending(&self, cpu: usize) -> Result<usize, LruError> {
        Ok(self.lock(cpu)?.pending())
    }

    #[inline(always)]
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
        let mut fb = self.lock(cpu)?;
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
                stats.merge(folio_batch_move_lru(batch, kind, cpu, lookup));
                batch.add(folio).unwrap_or(0)
            }
        };
        if space == 0 {
            stats.merge(folio_batch_move_lru(batch, kind, cpu, lookup));
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
    /// folio in the youngest generation. Inline: a full batch's move is the call.
    #[inline(always)]
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
        let mut fb = self.lock(target)?;
        let mut stats = MoveStats::default();
        // An empty batch is skipped (the unmap and truncate paths drain this CPU every
        // time, usually finding two of the three empty).
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
                stats.merge(folio_batch_move_lru(batch, kind, self_cpu, lookup));
            }
        }
        drop(fb);
        Ok(stats)
    }

    /// `lru_add_drain_all`: drain every CPU. If another caller started *and finished* a
    /// full drain after this call began, returns `Ok(None)` without draining again
    /// (`lru_drain_gen`); otherwise the combined stats. `self_cpu` is the CPU doing the
    /// work. With owned batches each CPU drains its own, run on it through
    /// [`LocalCpus::on_each_cpu`], and this returns when all have (Linux queues
    /// `lru_add_drain_per_cpu` on each CPU and flushes the work); when that cannot be done
    /// the error is [`LruError::DrainRefused`]. With locked batches the caller drains every
    /// CPU's batches under their locks.
    pub fn drain_all<H, L>(
        &self,
        self_cpu: usize,
        lookup: &L,
    ) -> Result<Option<MoveStats>, LruError>
    where
        H: LruvecHost,
        L: LruvecLookup<H> + Sync + ?Sized,
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
        if let Some(cpus) = &self.local {
            return self.drain_each_cpu(cpus, lookup).map(Some);
        }
        let mut stats = MoveStats::default();
        for cpu in 0..self.cpus.nr_cpus() {
            stats.merge(self.drain_cpu_from(cpu, self_cpu, lookup)?);
        }
        Ok(Some(stats))
    }

    /// Owned batches: every CPU drains its own (`lru_add_drain_per_cpu`), the stats summed.
    fn drain_each_cpu<H, L>(&self, cpus: &LocalCpus, lookup: &L) -> Result<MoveStats, LruError>
    where
        H: LruvecHost,
        L: LruvecLookup<H> + Sync + ?Sized,
    {
        let total: lock_api::Mutex<Lock<F, LruDrainStatsLock>, Result<MoveStats, LruError>> =
            lock_api::Mutex::new(Ok(MoveStats::default()));
        let ran = cpus.on_each_cpu(&|cpu| {
            if cpu >= self.cpus.nr_cpus() {
                return;
            }
            let r = self.drain_cpu(cpu, lookup);
            let mut t = total.lock();
            match (&mut *t, r) {
                (Ok(sum), Ok(s)) => sum.merge(s),
                (Ok(_), Err(e)) => *t = Err(e),
                (Err(_), _) => {}
            }
        });
        if !ran {
            return Err(LruError::DrainRefused);
        }
        total.into_inner()
    }
}
