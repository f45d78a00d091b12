//! The memcg FIFO (`struct lru_gen_memcg`): which memcgs global reclaim visits, in order.
//!
//! Models `lru_gen_rotate_memcg()`, `lru_gen_online_memcg()`, `lru_gen_offline_memcg()`,
//! `lru_gen_release_memcg()` and the reader side of `shrink_many()` (mm/vmscan.c).
//! `MEMCG_NR_GENS` generations x `MEMCG_NR_BINS` bins of hlist_nulls heads, whose nulls
//! value is the generation, one lock, `seq` and `nr_memcgs[gen]`. Readers walk a bin under
//! RCU with no lock and restart when they end on another generation's nulls.
//!
//! Entries are borrowed, not owned: [`LruGenMemcg::online`] is `unsafe` and its contract is
//! Linux's, an entry stays valid until [`LruGenMemcg::release`] has returned and a grace
//! period of the FIFO's RCU domain has passed. Readers hold an [`RcuReadGuard`] of that
//! domain, and every entry they are handed is borrowed for the guard's lifetime only.
//!
//! [`LruGenMemcg::shrink_many`] is the reader of `shrink_many()`: the generation is read
//! once, before the restart label; entries whose `gen` differs (rotated meanwhile) are
//! skipped; the visitor takes its reference (`mem_cgroup_tryget()`) and chooses the
//! rotation op for the memcg it visited, which is applied once the walk has moved past it;
//! a walk that ends on another generation's nulls restarts the bin, then the other bins of
//! the generation are walked.
//!
//! Tail insertion comes in both of seed 002's variants, chosen per FIFO at construction:
//! [`TailMode::Walk`] walks the bin to its end under the lock (`hlist_nulls_add_tail_rcu`,
//! O(n)), [`TailMode::Cached`] keeps `tail[gen][bin]` and the node's `bin` so insertion is
//! `hlist_nulls_add_behind_rcu` after the cached tail, O(1).
//!
//! Unsafe code here, and why: the memcg FIFO links lruvecs by raw `hlist_nulls` nodes read
//! under RCU, and `unsafe trait MemcgFifoEntry` says where each lruvec keeps its node.
#![allow(unsafe_code)]

use crate::error::LruError;
use crate::hlist_nulls::{
    HlistNullsHead, HlistNullsNode, add_behind_rcu, add_head_rcu, add_tail_rcu, del_init_rcu,
};
use crate::layout::{FieldDesc, StructLayout};
use crate::lock_classes::MemcgLruLock;
use crate::lru_gen::{LruGenFolio, LruGenMemcgNode};
use crate::rcu::{Rcu, RcuReadGuard};
use crate::sync::Lock;
use crate::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use core::marker::PhantomData;
use core::mem::offset_of;
use core::ops::ControlFlow;
use ksync::LockFamily;

/// Generations of the memcg FIFO (`MEMCG_NR_GENS`).
pub const MEMCG_NR_GENS: usize = 3;
/// Bins per generation (`MEMCG_NR_BINS`).
pub const MEMCG_NR_BINS: usize = 8;

/// The generation a FIFO `seq` denotes (`get_memcg_gen`).
#[must_use]
pub const fn get_memcg_gen(seq: u64) -> usize {
    (seq % MEMCG_NR_GENS as u64) as usize
}

/// The bin an index denotes (`get_memcg_bin`).
#[must_use]
pub const fn get_memcg_bin(bin: usize) -> usize {
    bin % MEMCG_NR_BINS
}

/// The rotation ops of `lru_gen_rotate_memcg` (`MEMCG_LRU_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemcgLruOp {
    /// Leave it where it is.
    Nop,
    /// Move to the head of its bin (segment head): visited first next time.
    Head,
    /// Move to the tail of its bin (segment tail): visited last.
    Tail,
    /// Move to the old generation (`seq`): visited in this round.
    Old,
    /// Move to the young generation (`seq + 1`): skipped until the next round.
    Young,
}

/// `lrugen->seg` values.
pub mod seg {
    /// Not in a segment.
    pub const NONE: u8 = 0;
    /// Head segment (`MEMCG_LRU_HEAD`).
    pub const HEAD: u8 = 1;
    /// Tail segment (`MEMCG_LRU_TAIL`).
    pub const TAIL: u8 = 2;
}

/// Seed 002's two tail-insertion variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailMode {
    /// Walk the bin to find its tail (Linux before the seed).
    Walk,
    /// Cached tail pointer per bin (the seed's patch).
    Cached,
}

/// Something that embeds an [`LruGenMemcgNode`] and can sit on the memcg FIFO.
///
/// # Safety
///
/// `memcg_node()` must return the field at byte offset `MEMCG_NODE_OFFSET` of `self`,
/// for every value of the type; the FIFO recovers `&Self` from the node's address.
pub unsafe trait MemcgFifoEntry: Sync + 'static {
    /// Byte offset of the node inside `Self`.
    const MEMCG_NODE_OFFSET: usize;
    /// The embedded node.
    fn memcg_node(&self) -> &LruGenMemcgNode;
}

// SAFETY: `memcg_node` returns the field at `MEMCG_NODE_OFFSET` by construction.
unsafe impl MemcgFifoEntry for crate::LruGenFolioBase {
    const MEMCG_NODE_OFFSET: usize = <Self as LruGenFolio>::MEMCG_NODE_OFFSET;
    fn memcg_node(&self) -> &LruGenMemcgNode {
        LruGenFolio::memcg_node(self)
    }
}

// SAFETY: as above.
unsafe impl MemcgFifoEntry for crate::LruGenFolioGrouped {
    const MEMCG_NODE_OFFSET: usize = <Self as LruGenFolio>::MEMCG_NODE_OFFSET;
    fn memcg_node(&self) -> &LruGenMemcgNode {
        LruGenFolio::memcg_node(self)
    }
}

/// What the visitor of [`LruGenMemcg::shrink_many`] decided about one memcg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShrinkStep {
    /// The rotation to apply to it once the walk has moved past it (`shrink_one()`'s op).
    pub op: MemcgLruOp,
    /// Stop the whole walk (`should_abort_scan()`).
    pub abort: bool,
}

/// What one [`LruGenMemcg::shrink_many`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShrinkManyStats {
    /// Entries the visitor was called on.
    pub visited: usize,
    /// Entries skipped because their generation differed (rotated meanwhile).
    pub skipped: usize,
    /// Entries the visitor could not take (`mem_cgroup_tryget()` failed).
    pub unpinned: usize,
    /// Rotations applied.
    pub rotated: usize,
    /// Restarts of a bin after a race with a rotation.
    pub restarts: usize,
    /// Whether the visitor aborted the walk.
    pub aborted: bool,
}

/// How a lockless walk of one bin ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkEnd {
    /// The visitor stopped the walk.
    Stopped,
    /// The walk reached the end of the bin it started on.
    Completed,
    /// The walk ended on another generation's nulls: it raced with a rotation, restart.
    Raced,
}

/// `struct lru_gen_memcg`, generic over its lock and the entry type `E`.
#[repr(C)]
pub struct LruGenMemcg<F: LockFamily, E: MemcgFifoEntry> {
    seq: AtomicU64,
    nr_memcgs: [AtomicUsize; MEMCG_NR_GENS],
    fifo: [[HlistNullsHead; MEMCG_NR_BINS]; MEMCG_NR_GENS],
    tail: [[AtomicUsize; MEMCG_NR_BINS]; MEMCG_NR_GENS],
    lock: lock_api::Mutex<Lock<F, MemcgLruLock>, ()>,
    mode: TailMode,
    rand: AtomicU32,
    id: u32,
    /// The RCU domain entries are freed by (read-mostly).
    rcu: &'static Rcu<F>,
    _entries: PhantomData<fn() -> E>,
}

/// Source of FIFO ids; 0 means "on no FIFO". A plain core atomic even under loom.
static NEXT_FIFO_ID: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(1);

impl<F: LockFamily, E: MemcgFifoEntry> core::fmt::Debug for LruGenMemcg<F, E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LruGenMemcg")
            .field("mode", &self.mode)
            .field("seq", &self.seq())
            .field("nr_memcgs", &self.nr_memcgs)
            .finish()
    }
}

const LIST_IN_NODE: usize = offset_of!(LruGenMemcgNode, list);

impl<F: LockFamily, E: MemcgFifoEntry> LruGenMemcg<F, E> {
    /// An empty FIFO (`lru_gen_init_pgdat`) whose entries are freed after grace periods of
    /// `rcu`; `seed` seeds the bin picker.
    pub fn new(mode: TailMode, seed: u32, rcu: &'static Rcu<F>) -> Self {
        LruGenMemcg {
            seq: AtomicU64::new(0),
            nr_memcgs: core::array::from_fn(|_| AtomicUsize::new(0)),
            fifo: core::array::from_fn(|r#gen| {
                core::array::from_fn(|_| HlistNullsHead::new(r#gen))
            }),
            tail: core::array::from_fn(|_| core::array::from_fn(|_| AtomicUsize::new(0))),
            lock: lock_api::Mutex::new(()),
            mode,
            rand: AtomicU32::new(seed | 1),
            id: NEXT_FIFO_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed),
            rcu,
            _entries: PhantomData,
        }
    }

    /// The tail-insertion variant.
    #[must_use]
    pub fn mode(&self) -> TailMode {
        self.mode
    }

    /// `memcg_lru.seq` (lockless read).
    #[must_use]
    pub fn seq(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// `memcg_lru.nr_memcgs[gen]` (lockless read).
    #[must_use]
    pub fn nr_memcgs(&self, r#gen: usize) -> usize {
        self.nr_memcgs[r#gen % MEMCG_NR_GENS].load(Ordering::Relaxed)
    }

    /// The RCU domain entries are freed by: readers hold its read guard.
    #[must_use]
    pub fn rcu(&self) -> &'static Rcu<F> {
        self.rcu
    }

    fn check_domain(&self, guard: &RcuReadGuard<'_>) -> Result<(), LruError> {
        if guard.domain() == self.rcu.domain() {
            Ok(())
        } else {
            Err(LruError::RcuWrongDomain)
        }
    }

    /// The lock (for its statistics).
    #[must_use]
    pub fn raw_lock(&self) -> &lock_api::Mutex<Lock<F, MemcgLruLock>, ()> {
        &self.lock
    }

    /// The entry that embeds `node`.
    ///
    /// # Safety
    ///
    /// `node` is (or was, within the caller's read-side section) linked into one of this
    /// FIFO's lists, and the entry stays valid for `'a`: the lock is held and the node is
    /// linked, or `'a` is bounded by an RCU read guard of this FIFO's domain (entries are
    /// freed only a grace period after their release, `online`'s contract).
    unsafe fn entry_of<'a>(node: &HlistNullsNode) -> &'a E {
        let addr = node.addr() - LIST_IN_NODE - E::MEMCG_NODE_OFFSET;
        // SAFETY: only nodes embedded in an `E` at `MEMCG_NODE_OFFSET` are linked (the
        // `MemcgFifoEntry` contract), so `addr` is that `E`; the caller guarantees it is
        // valid for 'a.
        unsafe { &*(addr as *const E) }
    }

    /// Whether `node` is on this FIFO. Caller holds the lock: `fifo_id` only changes
    /// under the lock of the FIFO it names.
    fn holds(&self, node: &LruGenMemcgNode) -> bool {
        node.fifo_id.load(Ordering::Acquire) == self.id && !node.list.is_unhashed()
    }

    fn next_bin(&self) -> usize {
        // xorshift32 (get_random_u32_below stand-in); written under the lock.
        let mut x = self.rand.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rand.store(x, Ordering::Relaxed);
        get_memcg_bin(x as usize)
    }

    /// A random bin (`get_random_u32_below(MEMCG_NR_BINS)`), for the first bin of a
    /// `shrink_many()` walk; lockless (a racy update only changes which bin is random).
    #[must_use]
    pub fn next_random_bin(&self) -> usize {
        let step = |mut x: u32| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let old = self
            .rand
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(step(x)))
            .unwrap_or(1);
        get_memcg_bin(step(old) as usize)
    }

    /// `lru_gen_add_memcg` (seed 002): insert at head or tail of `fifo[gen][bin]`.
    fn add(&self, node: &LruGenMemcgNode, r#gen: usize, bin: usize, at_head: bool) {
        let head = &self.fifo[r#gen][bin];
        node.bin.store(bin as u8, Ordering::Relaxed);
        match self.mode {
            TailMode::Walk => {
                // SAFETY: the FIFO lock is held by every caller of `add`; the node is
                // unhashed and stays valid until released plus a grace period (`online`).
                unsafe {
                    if at_head {
                        add_head_rcu(&node.list, head);
                    } else {
                        let steps = add_tail_rcu(&node.list, head);
                        crate::events::count(crate::events::LruEvent::FifoTailStep, steps);
                    }
                }
            }
            TailMode::Cached => {
                let tail = &self.tail[r#gen][bin];
                let last = tail.load(Ordering::Relaxed);
                if at_head || last == 0 {
                    // SAFETY: as above.
                    unsafe { add_head_rcu(&node.list, head) };
                } else {
                    // SAFETY: `last` is the address of the linked last node of this bin
                    // (maintained under the lock below and in `del`).
                    let last = unsafe { &*(last as *const HlistNullsNode) };
                    // SAFETY: lock held, node unhashed and kept valid (`online`), `last`
                    // linked.
                    unsafe { add_behind_rcu(&node.list, last) };
                }
                if !at_head || last == 0 {
                    tail.store(node.list.addr(), Ordering::Relaxed);
                }
            }
        }
    }

    /// `lru_gen_del_memcg` (seed 002): unlink, fixing the cached tail.
    fn del(&self, node: &LruGenMemcgNode, r#gen: usize) {
        if self.mode == TailMode::Cached {
            let bin = usize::from(node.bin.load(Ordering::Relaxed));
            let head = &self.fifo[r#gen][bin];
            let tail = &self.tail[r#gen][bin];
            if tail.load(Ordering::Relaxed) == node.list.addr() {
                // SAFETY: the node is linked into `head` (it sits in fifo[gen][bin]) and
                // the lock is held.
                let prev = unsafe { node.list.prev(head) };
                tail.store(prev.map_or(0, HlistNullsNode::addr), Ordering::Relaxed);
            }
        }
        // SAFETY: lock held; the entry stays valid a grace period past its release, so
        // readers standing on it stay valid; `next` is kept intact for them.
        unsafe { del_init_rcu(&node.list) };
    }

    fn bump_seq_if_drained(&self, old: usize) {
        let seq = self.seq.load(Ordering::Relaxed);
        if self.nr_memcgs[old].load(Ordering::Relaxed) == 0 && old == get_memcg_gen(seq) {
            self.seq.store(seq + 1, Ordering::Release);
        }
    }

    fn counter_add(&self, r#gen: usize, delta: isize) {
        let c = &self.nr_memcgs[r#gen];
        c.store(
            c.load(Ordering::Relaxed).wrapping_add_signed(delta),
            Ordering::Relaxed,
        );
    }

    /// `lru_gen_online_memcg`: add `entry` at the tail of a random bin of the current
    /// generation.
    ///
    /// # Safety
    ///
    /// `entry` stays valid and at its address until [`LruGenMemcg::release`] of it has
    /// returned and then a grace period of [`LruGenMemcg::rcu`] has completed (readers may
    /// still stand on it until then).
    pub unsafe fn online(&self, entry: &E) -> Result<(), LruError> {
        let node = entry.memcg_node();
        let _g = self.lock.lock();
        if node.fifo_id.load(Ordering::Acquire) != 0 || !node.list.is_unhashed() {
            return Err(LruError::AlreadyOnFifo);
        }
        node.fifo_id.store(self.id, Ordering::Release);
        let r#gen = get_memcg_gen(self.seq.load(Ordering::Relaxed));
        let bin = self.next_bin();
        node.r#gen.store(r#gen as u8, Ordering::Relaxed);
        node.seg.store(seg::NONE, Ordering::Relaxed);
        self.add(node, r#gen, bin, false);
        self.counter_add(r#gen, 1);
        Ok(())
    }

    /// `lru_gen_rotate_memcg` with a random bin.
    pub fn rotate(&self, entry: &E, op: MemcgLruOp) -> Result<(), LruError> {
        let _g = self.lock.lock();
        let bin = self.next_bin();
        self.rotate_locked(entry, op, bin)
    }

    /// `lru_gen_rotate_memcg` into a chosen bin (benchmarks and tests).
    pub fn rotate_to_bin(&self, entry: &E, op: MemcgLruOp, bin: usize) -> Result<(), LruError> {
        let _g = self.lock.lock();
        self.rotate_locked(entry, op, get_memcg_bin(bin))
    }

    fn rotate_locked(&self, entry: &E, op: MemcgLruOp, bin: usize) -> Result<(), LruError> {
        let node = entry.memcg_node();
        if !self.holds(node) {
            return Err(LruError::NotOnFifo);
        }
        let seq = self.seq.load(Ordering::Relaxed);
        let old = usize::from(node.r#gen.load(Ordering::Relaxed));
        let (mut new, mut sg) = (old, seg::NONE);
        match op {
            MemcgLruOp::Nop => return Ok(()),
            MemcgLruOp::Head => sg = seg::HEAD,
            MemcgLruOp::Tail => sg = seg::TAIL,
            MemcgLruOp::Old => new = get_memcg_gen(seq),
            MemcgLruOp::Young => new = get_memcg_gen(seq + 1),
        }
        node.seg.store(sg, Ordering::Relaxed);
        node.r#gen.store(new as u8, Ordering::Relaxed);
        self.del(node, old);
        let at_head = matches!(op, MemcgLruOp::Head | MemcgLruOp::Old);
        self.add(node, new, bin, at_head);
        self.counter_add(old, -1);
        self.counter_add(new, 1);
        self.bump_seq_if_drained(old);
        Ok(())
    }

    /// `lru_gen_offline_memcg`: rotate to the old generation so it is reclaimed first.
    pub fn offline(&self, entry: &E) -> Result<(), LruError> {
        self.rotate(entry, MemcgLruOp::Old)
    }

    /// `lru_gen_release_memcg`: take `entry` off the FIFO (before its memory is freed,
    /// after which a grace period must pass). A no-op if it is not on the FIFO.
    pub fn release(&self, entry: &E) {
        let node = entry.memcg_node();
        let _g = self.lock.lock();
        if !self.holds(node) {
            return;
        }
        let r#gen = usize::from(node.r#gen.load(Ordering::Relaxed));
        self.del(node, r#gen);
        node.fifo_id.store(0, Ordering::Release);
        self.counter_add(r#gen, -1);
        self.bump_seq_if_drained(r#gen);
    }

    /// Walk `fifo[gen][bin]` locklessly (the body of `shrink_many`'s
    /// `hlist_nulls_for_each_entry_rcu`) inside the read-side section `guard`, which must
    /// be of this FIFO's domain ([`LruError::RcuWrongDomain`] otherwise). Every entry
    /// `visit` gets is borrowed for the guard's lifetime. `visit` returns `Break` to stop.
    pub fn walk_bin<'g>(
        &self,
        guard: &'g RcuReadGuard<'_>,
        r#gen: usize,
        bin: usize,
        mut visit: impl FnMut(&'g E) -> ControlFlow<()>,
    ) -> Result<WalkEnd, LruError> {
        self.check_domain(guard)?;
        let r#gen = r#gen % MEMCG_NR_GENS;
        // SAFETY: the caller is inside a read-side section of this FIFO's domain for 'g, and
        // entries are freed only a grace period after their release (`online`), so every
        // node reachable from the list, or from a list a node moves to, stays valid for 'g.
        let mut cursor = unsafe { self.fifo[r#gen][get_memcg_bin(bin)].iter_rcu() };
        for node in cursor.by_ref() {
            // SAFETY: as above: `node` was reached in this section, its entry lives for 'g.
            let e: &'g E = unsafe { Self::entry_of(node) };
            if visit(e).is_break() {
                return Ok(WalkEnd::Stopped);
            }
        }
        Ok(if cursor.end_nulls() == Some(r#gen) {
            WalkEnd::Completed
        } else {
            WalkEnd::Raced
        })
    }

    /// The reader of `shrink_many()` inside the read-side section `guard` (of this FIFO's
    /// domain): reads the old generation once, then walks its bins starting at
    /// `first_bin`. Entries of another generation are skipped; `visit` is called on the
    /// others and returns `None` when it could not take the memcg (`mem_cgroup_tryget()`
    /// failed), or the rotation to apply and whether to abort. The rotation of an entry is
    /// applied once the walk has moved past it, as Linux applies `op` on the next
    /// iteration. A bin whose walk ends on another generation's nulls is restarted (it
    /// raced with a rotation, as Linux's `goto restart`).
    pub fn shrink_many<'g>(
        &self,
        guard: &'g RcuReadGuard<'_>,
        first_bin: usize,
        mut visit: impl FnMut(&'g E) -> Option<ShrinkStep>,
    ) -> Result<ShrinkManyStats, LruError> {
        self.check_domain(guard)?;
        let mut stats = ShrinkManyStats::default();
        let r#gen = get_memcg_gen(self.seq());
        let first_bin = get_memcg_bin(first_bin);
        let mut bin = first_bin;
        loop {
            // restart:
            let mut pending: Option<(&'g E, MemcgLruOp)> = None;
            // SAFETY: as in `walk_bin`: entries reached in this section live for 'g.
            let mut cursor = unsafe { self.fifo[r#gen][bin].iter_rcu() };
            for node in cursor.by_ref() {
                // The walk has moved past the previous entry: apply its rotation.
                if let Some((e, op)) = pending.take() {
                    stats.rotated += usize::from(self.rotate(e, op).is_ok());
                }
                // SAFETY: as above.
                let e: &'g E = unsafe { Self::entry_of(node) };
                if usize::from(e.memcg_node().r#gen.load(Ordering::Relaxed)) != r#gen {
                    stats.skipped += 1;
                    continue;
                }
                stats.visited += 1;
                let Some(step) = visit(e) else {
                    stats.unpinned += 1;
                    continue;
                };
                if step.op != MemcgLruOp::Nop {
                    pending = Some((e, step.op));
                }
                if step.abort {
                    stats.aborted = true;
                    break;
                }
            }
            if let Some((e, op)) = pending.take() {
                stats.rotated += usize::from(self.rotate(e, op).is_ok());
            }
            if stats.aborted {
                return Ok(stats);
            }
            // Restart if raced with lru_gen_rotate_memcg().
            if cursor.end_nulls() != Some(r#gen) {
                stats.restarts += 1;
                continue;
            }
            // Try the rest of the bins of the current generation.
            bin = get_memcg_bin(bin + 1);
            if bin == first_bin {
                return Ok(stats);
            }
        }
    }

    /// The cached tail of `fifo[gen][bin]` ([`TailMode::Cached`] only), borrowed for the
    /// read-side section `guard`.
    pub fn cached_tail<'g>(
        &self,
        guard: &'g RcuReadGuard<'_>,
        r#gen: usize,
        bin: usize,
    ) -> Result<Option<&'g E>, LruError> {
        self.check_domain(guard)?;
        let _g = self.lock.lock();
        let t = self.tail[r#gen % MEMCG_NR_GENS][get_memcg_bin(bin)].load(Ordering::Relaxed);
        if t == 0 {
            return Ok(None);
        }
        // SAFETY: a non-zero tail is the address of a node linked into this FIFO (the lock
        // is held); its entry stays valid for the read-side section 'g (`online`).
        Ok(Some(unsafe {
            Self::entry_of(&*(t as *const HlistNullsNode))
        }))
    }

    /// Check, under the lock, that every bin is consistent: the cached tail (when
    /// cached) equals the real last node, each node's `gen`/`bin` match its list, and
    /// `nr_memcgs` equals the list lengths. Returns the total number of entries.
    pub fn check(&self) -> Result<usize, &'static str> {
        let _g = self.lock.lock();
        let mut total = 0;
        for r#gen in 0..MEMCG_NR_GENS {
            let mut count = 0;
            for bin in 0..MEMCG_NR_BINS {
                // SAFETY: the lock is held, so the list does not change and every node on
                // it belongs to an online entry, valid until its release.
                let mut cursor = unsafe { self.fifo[r#gen][bin].iter_rcu() };
                let mut last = 0;
                for node in cursor.by_ref() {
                    // SAFETY: as above, valid while the lock is held.
                    let e = unsafe { Self::entry_of(node) }.memcg_node();
                    if usize::from(e.r#gen.load(Ordering::Relaxed)) != r#gen {
                        return Err("node gen differs from its list");
                    }
                    if self.mode == TailMode::Cached
                        && usize::from(e.bin.load(Ordering::Relaxed)) != bin
                    {
                        return Err("node bin differs from its list");
                    }
                    last = node.addr();
                    count += 1;
                    if count > self.nr_memcgs[r#gen].load(Ordering::Relaxed) {
                        // Also what ends the walk of a list corrupted into a cycle.
                        return Err("more nodes than nr_memcgs");
                    }
                }
                if cursor.end_nulls() != Some(r#gen) {
                    return Err("list ends on a foreign nulls value");
                }
                if self.mode == TailMode::Cached
                    && self.tail[r#gen][bin].load(Ordering::Relaxed) != last
                {
                    return Err("cached tail differs from the real tail");
                }
            }
            if count != self.nr_memcgs[r#gen].load(Ordering::Relaxed) {
                return Err("nr_memcgs differs from the list lengths");
            }
            total += count;
        }
        Ok(total)
    }
}

/// The pahole table of `LruGenMemcg<F, _>`.
pub fn lru_gen_memcg_fields<F: LockFamily>() -> [FieldDesc; 9] {
    type M<F> = LruGenMemcg<F, crate::LruGenFolioGrouped>;
    [
        crate::layout_field!(M<F>, "read_mostly", seq),
        crate::layout_field!(M<F>, "locked", nr_memcgs),
        crate::layout_field!(M<F>, "rcu_heads", fifo),
        crate::layout_field!(M<F>, "locked", tail),
        crate::layout_field!(M<F>, "locked", lock),
        crate::layout_field!(M<F>, "read_mostly", mode),
        crate::layout_field!(M<F>, "locked", rand),
        crate::layout_field!(M<F>, "read_mostly", id),
        crate::layout_field!(M<F>, "read_mostly", rcu),
    ]
}

/// Wrap [`lru_gen_memcg_fields`] as a [`StructLayout`].
pub fn lru_gen_memcg_layout<F: LockFamily>(fields: &[FieldDesc]) -> StructLayout<'_> {
    type M<F> = LruGenMemcg<F, crate::LruGenFolioGrouped>;
    StructLayout {
        name: "lru_gen_memcg",
        size: core::mem::size_of::<M<F>>(),
        align: core::mem::align_of::<M<F>>(),
        fields,
    }
}

// Placement checks for `lru_gen_memcg` with the kernel's lock (ksync's ticket lock): readers load `seq` and then the
// `fifo` heads under RCU, so both start in the first pair, as in Linux; the cached tails
// and the lock, written only by rotations, follow the heads.
#[cfg(not(loom))]
mod layout_asserts {
    use super::LruGenMemcg;
    use crate::LruGenFolioGrouped;
    use core::mem::offset_of;

    type M = LruGenMemcg<ksync::Ticket, LruGenFolioGrouped>;

    crate::cacheline_assert_pair!(M, seq, 0);
    crate::cacheline_assert_pair!(M, fifo, 0);
    const _: () = assert!(offset_of!(M, tail) > offset_of!(M, fifo));
    const _: () = assert!(offset_of!(M, lock) > offset_of!(M, tail));
}
