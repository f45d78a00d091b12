//! Shared helpers for the host integration tests: leaked `'static` folios, a counting
//! lock, and a lookup from memcg id to lruvec.
#![allow(dead_code)]

use lru::sync::RawSpinlock;
use lru::{Folio, FolioFlags, LruGenFolio, LruMode, Lruvec, LruvecLookup, Zone};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A spinlock that counts its acquisitions, like the kernel's statistics lock.
pub struct CountingLock {
    inner: RawSpinlock,
    acquisitions: AtomicUsize,
}

impl CountingLock {
    pub fn acquisitions(&self) -> usize {
        self.acquisitions.load(Ordering::Relaxed)
    }
}

// SAFETY: delegates mutual exclusion to `RawSpinlock`.
unsafe impl lock_api::RawMutex for CountingLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = CountingLock {
        inner: <RawSpinlock as lock_api::RawMutex>::INIT,
        acquisitions: AtomicUsize::new(0),
    };
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        self.inner.lock();
        self.acquisitions.fetch_add(1, Ordering::Relaxed);
    }

    fn try_lock(&self) -> bool {
        let ok = self.inner.try_lock();
        if ok {
            self.acquisitions.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }

    unsafe fn unlock(&self) {
        // SAFETY: forwarded: the caller holds the lock.
        unsafe { self.inner.unlock() }
    }
}

/// `n` leaked folios charged to `memcg`, on node 0; `anon` selects the LRU type.
pub fn folios(n: usize, memcg: u16, anon: bool) -> Vec<&'static Folio> {
    (0..n)
        .map(|i| {
            let f: &'static Folio =
                Box::leak(Box::new(Folio::new(i as u64, 0, Zone::Normal).unwrap()));
            f.set_memcg_id(memcg).unwrap();
            if anon {
                f.set(FolioFlags::SWAPBACKED);
            }
            f
        })
        .collect()
}

/// A leaked lruvec.
pub fn lruvec<R: lock_api::RawMutex + 'static, G: LruGenFolio>(
    memcg: u16,
    mode: LruMode,
) -> &'static Lruvec<R, G> {
    Box::leak(Box::new(Lruvec::new(memcg, 0, mode, 0).unwrap()))
}

/// memcg id -> lruvec, for node 0.
pub struct Lookup<R: lock_api::RawMutex + 'static, G: LruGenFolio>(pub Vec<&'static Lruvec<R, G>>);

impl<R: lock_api::RawMutex + 'static, G: LruGenFolio> LruvecLookup<R, G> for Lookup<R, G> {
    fn folio_lruvec(&self, folio: &Folio) -> Option<&Lruvec<R, G>> {
        self.0
            .iter()
            .copied()
            .find(|l| l.memcg_id() == folio.memcg_id())
    }
}
