//! The per-VMA lock: `vma_start_read`, `vma_end_read`, `vma_start_write`, attach/detach.
//!
//! Models include/linux/mmap_lock.h and mm/mmap_lock.c (Linux 6.15, after `vm_lock` became
//! the `vm_refcnt` refcount). A region is *attached* while `vm_refcnt >= 1`; each reader adds
//! one; a writer adds [`VMA_LOCK_OFFSET`], which makes every new reader's limited increment
//! fail, and waits until only the attached count and its own offset are left. Write-locking
//! is remembered in `vm_lock_seq`: it equals the address space's `mm_lock_seq` (odd while
//! the mmap lock is held for writing) until the writer drops the mmap lock, which bumps
//! `mm_lock_seq` and so unlocks every region it locked at once (`vma_end_write_all`).
//!
//! A fault takes a region for reading locklessly ([`vma_start_read`]):
//!
//! 1. an early check, without ordering: `vm_lock_seq == mm_lock_seq` means a writer holds
//!    it: give up at once, before touching `vm_refcnt` (seed 003 measures where this
//!    `vm_lock_seq` read lands: in line 0 with `vm_start`/`vm_end`, or in `vm_refcnt`'s
//!    line, which every other faulting CPU writes);
//! 2. `vm_refcnt` + 1 unless it is 0 (detached) or at the limit (a writer's offset is in);
//! 3. a re-check of `vm_lock_seq` against `mm_lock_seq` (Acquire, pairing with the
//!    writer's Release when it drops the mmap lock): a writer that slipped in between
//!    makes the reader back off.
//!
//! A failed read lock is not an error: the fault falls back to the slow path under the mmap
//! lock, as Linux's `lock_mm_and_find_vma`.

use crate::lock_classes::{VmLockSeqWord, VmRefcntWord};
use crate::vma::VmArea;
use core::sync::atomic::{AtomicU32, Ordering};

/// Added to `vm_refcnt` by a writer (`VMA_LOCK_OFFSET`).
pub const VMA_LOCK_OFFSET: u32 = 0x4000_0000;
/// Readers plus the attached count never reach this (`VMA_REF_LIMIT`).
pub const VMA_REF_LIMIT: u32 = VMA_LOCK_OFFSET - 1;

/// Why a lockless read lock was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmaReadError {
    /// A writer holds (or is taking) the region: use the slow path.
    WriteLocked,
    /// The region was detached (unmapped) under us: look it up again.
    Detached,
}

/// `vma_start_read`: read-lock `vma` against `mm_lock_seq` without taking any lock.
/// Inline, as Linux's (`static inline` in include/linux/mm.h).
#[inline(always)]
pub fn vma_start_read<V: VmArea>(mm_lock_seq: &AtomicU32, vma: &V) -> Result<(), VmaReadError> {
    // (1) The early, unordered check (READ_ONCE in Linux).
    if vma.vm_lock_seq().load(Ordering::Relaxed) == mm_lock_seq.load(Ordering::Relaxed) {
        return Err(VmaReadError::WriteLocked);
    }
    // Where a test puts the writer that slips in between the two checks.
    #[cfg(test)]
    tests::after_early_check();
    // (2) __refcount_inc_not_zero_limited_acquire.
    let refcnt = vma.vm_refcnt();
    let mut old = refcnt.load(Ordering::Relaxed);
    loop {
        if old == 0 {
            return Err(VmaReadError::Detached);
        }
        if old >= VMA_REF_LIMIT {
            return Err(VmaReadError::WriteLocked);
        }
        match refcnt.compare_exchange_weak(old, old + 1, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => break,
            Err(seen) => {
                // Another CPU wrote the count between our load and our swap (or a weak
                // swap failed spuriously, which x86 never does).
                ksync::handoff::note_retry::<VmRefcntWord>();
                old = seen;
            }
        }
    }
    note_refcnt(vma, old, old + 1);
    // (3) The ordered re-check (raw_read_seqcount: Acquire).
    if vma.vm_lock_seq().load(Ordering::Relaxed) == mm_lock_seq.load(Ordering::Acquire) {
        // A writer took the region between our two checks: counted for the statistics.
        ksync::handoff::note_retry::<VmLockSeqWord>();
        vma_end_read(vma);
        return Err(VmaReadError::WriteLocked);
    }
    Ok(())
}

/// `vma_end_read`: drop a read lock taken by [`vma_start_read`] (inline, as Linux's).
#[inline(always)]
pub fn vma_end_read<V: VmArea>(vma: &V) {
    let old = vma.vm_refcnt().fetch_sub(1, Ordering::Release);
    note_refcnt(vma, old, old.wrapping_sub(1));
}

/// Counts a reader's write of `vm_refcnt` for the handoff statistics (`ksync::handoff`).
#[inline]
fn note_refcnt<V: VmArea>(vma: &V, old: u32, new: u32) {
    ksync::handoff::note_write::<VmRefcntWord>(
        core::ptr::from_ref(vma.vm_refcnt()) as usize,
        u64::from(old),
        u64::from(new),
    );
}

/// `vma_mark_attached`: make a new region visible to readers (refcount 0 -> 1). The caller
/// holds the mmap lock for writing and publishes the region after this.
pub fn vma_mark_attached<V: VmArea>(vma: &V) {
    vma.vm_refcnt().store(1, Ordering::Release);
}

/// Whether `vma` is write-locked in the current write cycle (`__is_vma_write_locked`).
#[must_use]
pub fn vma_is_write_locked<V: VmArea>(mm_lock_seq: &AtomicU32, vma: &V) -> bool {
    vma.vm_lock_seq().load(Ordering::Relaxed) == mm_lock_seq.load(Ordering::Relaxed)
}

/// `vma_start_write`: write-lock `vma` (the caller holds the mmap lock for writing, so
/// `mm_lock_seq` is the odd value of this write cycle). Waits until every reader that got in
/// before has left; readers arriving later fail.
pub fn vma_start_write<V: VmArea>(mm_lock_seq: &AtomicU32, vma: &V) {
    let seq = mm_lock_seq.load(Ordering::Relaxed);
    if vma.vm_lock_seq().load(Ordering::Relaxed) == seq {
        return;
    }
    let refcnt = vma.vm_refcnt();
    // __vma_enter_locked: only an attached region has readers to wait for.
    let attached = refcnt
        .fetch_update(Ordering::Acquire, Ordering::Relaxed, |r| {
            (r != 0).then_some(r + VMA_LOCK_OFFSET)
        })
        .is_ok();
    if attached {
        while refcnt.load(Ordering::Acquire) != VMA_LOCK_OFFSET + 1 {
            core::hint::spin_loop();
        }
    }
    vma.vm_lock_seq().store(seq, Ordering::Relaxed);
    if attached {
        refcnt.fetch_sub(VMA_LOCK_OFFSET, Ordering::Release);
    }
}

/// `vma_mark_detached`: unpublish a write-locked region (refcount 1 -> 0). Readers that
/// found it before it was write-locked are gone (`vma_start_write` waited for them), and new
/// ones fail, so after this no reader holds it; it may be freed after a grace period (a
/// lockless lookup may still be looking at it).
pub fn vma_mark_detached<V: VmArea>(vma: &V) {
    let refcnt = vma.vm_refcnt();
    loop {
        match refcnt.compare_exchange_weak(1, 0, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return,
            // A reader slipped past the early check and will back off at its re-check.
            Err(_) => core::hint::spin_loop(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vma::{VmAreaA, VmAreaB, VmFlags, VmaDesc};
    use std::cell::RefCell;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64};

    std::thread_local! {
        /// What runs, on this test thread, between a reader's early check and its
        /// `vm_refcnt` increment.
        static AFTER_EARLY_CHECK: RefCell<Option<Box<dyn FnMut()>>> = RefCell::new(None);
    }

    pub(super) fn after_early_check() {
        let hook = AFTER_EARLY_CHECK.with(|h| h.borrow_mut().take());
        if let Some(mut f) = hook {
            f();
        }
    }

    /// A writer that write-locks the region after the reader's early check and before its
    /// increment (the window Linux's re-check is for): the reader must see `vm_lock_seq`
    /// changed, back off with its reference dropped, and be counted as a contended
    /// `vma->vm_lock_seq` acquisition.
    fn writer_between_the_checks<V: VmArea>() {
        ksync::stat::set_enabled(true);
        let data = <VmLockSeqWord as ksync::LockClass>::data();
        let seq = Arc::new(AtomicU32::new(2));
        let v: Arc<V> = Arc::new(region());
        vma_mark_attached(&*v);
        let before = data.snapshot();
        let (seq_w, v_w) = (Arc::clone(&seq), Arc::clone(&v));
        AFTER_EARLY_CHECK.with(|h| {
            *h.borrow_mut() = Some(Box::new(move || {
                // mmap_write_lock, then vma_start_write: no reader holds the region yet.
                seq_w.store(3, Ordering::Relaxed);
                vma_start_write(&seq_w, &*v_w);
            }));
        });
        assert_eq!(
            vma_start_read(&seq, &*v),
            Err(VmaReadError::WriteLocked),
            "{}: the re-check must catch a writer that came in after the early check",
            V::LAYOUT
        );
        assert_eq!(
            v.vm_refcnt().load(Ordering::Relaxed),
            1,
            "the reader's reference is gone"
        );
        let d = data.snapshot().since(&before);
        assert!(
            d.contended >= 1,
            "{}: the changed sequence was not counted",
            V::LAYOUT
        );
        // mmap_write_unlock: the next reader gets in.
        seq.store(4, Ordering::Release);
        assert_eq!(vma_start_read(&seq, &*v), Ok(()));
        vma_end_read(&*v);
    }

    #[test]
    fn a_writer_between_the_two_checks_makes_the_reader_back_off() {
        writer_between_the_checks::<VmAreaA>();
        writer_between_the_checks::<VmAreaB>();
    }

    fn region<V: VmArea>() -> V {
        V::new(&VmaDesc {
            start: 0,
            end: 4096,
            flags: VmFlags::READ | VmFlags::WRITE,
            object: None,
            pgoff: 0,
            memcg: core::ptr::null(),
            node: 0,
            anon_id: 1,
            mm: core::ptr::null(),
        })
    }

    fn protocol<V: VmArea>() {
        // mm_lock_seq is even (unlocked) at 2; a write cycle makes it 3.
        let seq = AtomicU32::new(2);
        let v: V = region();
        assert_eq!(vma_start_read(&seq, &v), Err(VmaReadError::Detached));
        vma_mark_attached(&v);
        assert_eq!(vma_start_read(&seq, &v), Ok(()));
        assert_eq!(v.vm_refcnt().load(Ordering::Relaxed), 2);
        vma_end_read(&v);
        // mmap_write_lock: seq becomes odd; vma_start_write locks the region.
        seq.store(3, Ordering::Relaxed);
        vma_start_write(&seq, &v);
        assert!(vma_is_write_locked(&seq, &v));
        assert_eq!(vma_start_read(&seq, &v), Err(VmaReadError::WriteLocked));
        assert_eq!(
            v.vm_refcnt().load(Ordering::Relaxed),
            1,
            "the writer's offset is gone"
        );
        // mmap_write_unlock: seq moves on, the region is unlocked without touching it.
        seq.store(4, Ordering::Release);
        assert!(!vma_is_write_locked(&seq, &v));
        assert_eq!(vma_start_read(&seq, &v), Ok(()));
        vma_end_read(&v);
        seq.store(5, Ordering::Relaxed);
        vma_start_write(&seq, &v);
        vma_mark_detached(&v);
        seq.store(6, Ordering::Release);
        assert_eq!(vma_start_read(&seq, &v), Err(VmaReadError::Detached));
    }

    #[test]
    fn read_write_detach_protocol_both_layouts() {
        protocol::<VmAreaA>();
        protocol::<VmAreaB>();
    }

    /// Readers hammer one region while a writer write-locks it repeatedly: no reader is
    /// ever inside while the writer holds it, and the writer always gets in.
    fn readers_vs_writer<V: VmArea>() {
        let seq = Arc::new(AtomicU32::new(0));
        let v: Arc<V> = Arc::new(region());
        vma_mark_attached(&*v);
        let inside = Arc::new(AtomicU32::new(0));
        let writer_in = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let total = Arc::new(AtomicU64::new(0));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (seq, v, inside, writer_in, stop, total) = (
                    seq.clone(),
                    v.clone(),
                    inside.clone(),
                    writer_in.clone(),
                    stop.clone(),
                    total.clone(),
                );
                std::thread::spawn(move || {
                    let mut got = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        if vma_start_read(&seq, &*v).is_ok() {
                            inside.fetch_add(1, Ordering::SeqCst);
                            assert!(!writer_in.load(Ordering::SeqCst), "reader inside a writer");
                            inside.fetch_sub(1, Ordering::SeqCst);
                            vma_end_read(&*v);
                            got += 1;
                            total.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    got
                })
            })
            .collect();
        // After each round the writer waits until a reader got in, so the rounds interleave
        // with reads however the threads are scheduled (on a loaded machine the writer
        // could otherwise finish all its rounds before any reader ran).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        for round in 0..200u32 {
            seq.store(2 * round + 1, Ordering::Relaxed); // mmap_write_lock
            vma_start_write(&seq, &*v);
            writer_in.store(true, Ordering::SeqCst);
            assert_eq!(
                inside.load(Ordering::SeqCst),
                0,
                "writer with a reader inside"
            );
            writer_in.store(false, Ordering::SeqCst);
            seq.store(2 * round + 2, Ordering::Release); // mmap_write_unlock
            let seen = total.load(Ordering::Relaxed);
            while total.load(Ordering::Relaxed) == seen {
                assert!(
                    std::time::Instant::now() < deadline,
                    "no reader got in after round {round}"
                );
                std::thread::yield_now();
            }
        }
        stop.store(true, Ordering::Relaxed);
        let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
        assert!(reads > 0);
        assert_eq!(v.vm_refcnt().load(Ordering::Relaxed), 1);
    }

    #[test]
    fn readers_never_overlap_a_writer() {
        readers_vs_writer::<VmAreaA>();
        readers_vs_writer::<VmAreaB>();
    }
}
