//! Shared helpers for the host integration tests: leaked `'static` folios, a lock family
//! whose locks count their own acquisitions, and a lookup from memcg id to lruvec.
#![allow(dead_code)]

use ksync::{LockClass, LockFamily, TicketLock};
use lru::{
    Folio, FolioFlags, LruError, LruGenFolio, LruMode, Lruvec, LruvecHost, LruvecLock,
    LruvecLookup, LruvecStandalone, PgData, Rcu, TailMode, Zone,
};
use std::sync::atomic::{AtomicUsize, Ordering};

/// ksync's ticket lock plus a count of this lock's own acquisitions (ksync counts per
/// class; a test that checks which lruvec was locked how often needs a count per lock).
pub struct CountingLock<C: LockClass> {
    inner: TicketLock<C>,
    acquisitions: AtomicUsize,
}

impl<C: LockClass> CountingLock<C> {
    pub fn acquisitions(&self) -> usize {
        self.acquisitions.load(Ordering::Relaxed)
    }
}

// SAFETY: delegates mutual exclusion to the ticket lock.
unsafe impl<C: LockClass> lock_api::RawMutex for CountingLock<C> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = CountingLock {
        inner: TicketLock::new(),
        acquisitions: AtomicUsize::new(0),
    };
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        self.inner.acquire();
        self.acquisitions.fetch_add(1, Ordering::Relaxed);
    }

    fn try_lock(&self) -> bool {
        let ok = self.inner.try_acquire();
        if ok {
            self.acquisitions.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }

    unsafe fn unlock(&self) {
        // SAFETY: forwarded: the caller holds the lock.
        unsafe { self.inner.release() }
    }
}

/// The family of [`CountingLock`]s.
pub struct Counting;

impl LockFamily for Counting {
    type Lock<C: LockClass> = CountingLock<C>;
}

/// `n` leaked folios charged to `memcg`, on node 0; `anon` selects the LRU type. Each holds
/// the one reference its owner has (as an allocated frame does): reclaim pins a folio
/// with `try_get` before it isolates it, and never takes an unreferenced one.
pub fn folios(n: usize, memcg: u16, anon: bool) -> Vec<&'static Folio> {
    (0..n)
        .map(|i| {
            let f: &'static Folio =
                Box::leak(Box::new(Folio::new(i as u64, 0, Zone::Normal).unwrap()));
            f.get();
            f.set_memcg_id(memcg).unwrap();
            if anon {
                f.set(FolioFlags::SWAPBACKED);
            }
            f
        })
        .collect()
}

/// A standalone lruvec host with family `F` and layout `G`.
pub type Sa<F, G> = LruvecStandalone<F, G>;

/// A leaked RCU domain for 64 CPUs, all offline (grace periods complete at once until a
/// test brings a CPU online).
pub fn rcu<F: LockFamily>() -> &'static Rcu<F> {
    Box::leak(Box::new(Rcu::new(64)))
}

/// A leaked node 0 for 64 CPUs, with an RCU domain of its own.
pub fn pgdat<H: LruvecHost>() -> &'static PgData<H> {
    Box::leak(Box::new(
        PgData::new(0, 64, 1 << 18, TailMode::Cached, rcu()).unwrap(),
    ))
}

/// A leaked lruvec on a node of its own, owning its lock.
pub fn lruvec<F: LockFamily, G: LruGenFolio>(
    memcg: u16,
    mode: LruMode,
) -> &'static Lruvec<Sa<F, G>> {
    lruvec_on(pgdat(), memcg, mode, LruvecLock::Own)
}

/// A leaked lruvec on `pgdat` taking lock `lock`.
pub fn lruvec_on<F: LockFamily, G: LruGenFolio>(
    pgdat: &'static PgData<Sa<F, G>>,
    memcg: u16,
    mode: LruMode,
    lock: LruvecLock,
) -> &'static Lruvec<Sa<F, G>> {
    let host: &'static Sa<F, G> = Box::leak(Box::new(Sa::new(memcg, pgdat, mode, lock, 0)));
    host
}

/// memcg id -> lruvec, for node 0.
pub struct Lookup<H: LruvecHost>(pub Vec<&'static Lruvec<H>>);

impl<H: LruvecHost> LruvecLookup<H> for Lookup<H> {
    type Guard<'a> = ();

    fn read_lock(&self, _cpu: usize) -> Result<(), LruError> {
        Ok(())
    }

    fn folio_lruvec<'g>(&'g self, _: &'g (), folio: &Folio) -> Option<&'g Lruvec<H>> {
        self.0
            .iter()
            .copied()
            .find(|l| l.memcg_id() == folio.memcg_id())
    }
}

/// A lookup that answers every folio with the same lruvec, whoever's the folio is (a
/// broken `folio_lruvec()`): what the relock must refuse rather than pass on.
pub struct Liar<H: LruvecHost>(pub &'static Lruvec<H>);

impl<H: LruvecHost> LruvecLookup<H> for Liar<H> {
    type Guard<'a> = ();

    fn read_lock(&self, _cpu: usize) -> Result<(), LruError> {
        Ok(())
    }

    fn folio_lruvec<'g>(&'g self, _: &'g (), _folio: &Folio) -> Option<&'g Lruvec<H>> {
        Some(self.0)
    }
}
