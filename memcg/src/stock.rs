//! The per-CPU charge stock (`struct memcg_stock_pcp`, `consume_stock()`, `refill_stock()`,
//! `drain_stock()`, `drain_all_stock()` in mm/memcontrol.c).
//!
//! Charging the hierarchical page counter on every fault would bounce its `usage` lines
//! between CPUs, so each CPU keeps pages pre-charged to one memcg: a charge first tries to
//! take them from the local stock, and only when that fails charges `MEMCG_CHARGE_BATCH`
//! (64) pages at once and puts the surplus into the stock. A stock caches one memcg; when
//! the CPU charges another one, the old stock is drained (its pages uncharged). The stock
//! holds a reference on its memcg; `drain_all_stock()` empties every CPU's stock of a memcg
//! (or its descendants) when the memcg goes offline or is over its limit.
//!
//! References go with the pages in bulk, as `css_get_many()`/`css_put_many()` in Linux's
//! `try_charge()`/`refill_stock()`/`drain_stock()` before 5.9: a refill takes one reference
//! per stocked page in one call (and one more for caching the memcg when it switches), a
//! consumed page hands its reference to the charge (a folio's charge then takes none of its
//! own), and a drain drops what is left in one call. Every one of them is made on the
//! stock's CPU (this CPU's slot of the css count while the memcg is online), except in a
//! remote drain.
//!
//! Linux protects the stock with a local lock and drains remote CPUs through per-CPU work
//! (`drain_all_stock()` reads each CPU's `stock->cached` under `rcu_read_lock()`, and for
//! each one that caches a memcg below the one over its limit sets `FLUSHING_CACHED_CHARGE`
//! and queues `drain_local_stock`, without waiting). Here the stock is a
//! [`ksync::LocalLock`] (class `memcg_stock.lock`):
//!
//! - where the platform's CPU ids are CPUs ([`ChargeStocks::new_local`], the kernel) only
//!   the owning CPU takes it, with no atomic. `drain_all` has every CPU drain its own
//!   through `on_each_cpu` when the other CPUs are idle (the invariant checker, teardown,
//!   an offline between runs) and waits; while they run (a charge over its limit, inside
//!   a benchmark run) it drains this CPU's stock and, as Linux does, reads each other
//!   CPU's cached memcg under an RCU read-side section and sets the flush flag of those
//!   whose memcg matches; each owner honours it at its next use of its stock, as Linux's
//!   work would run on it. A CPU caching an unrelated memcg is left alone: draining it
//!   would uncharge its pages up the hierarchy and recharge them a batch later, writing
//!   the shared ancestors' counters where Linux does not;
//! - elsewhere ([`ChargeStocks::new`], host tests and loom) the stock is a lock that any
//!   thread may take for any CPU, and `drain_all` drains every stock under it.
//!
//! The cached memcg that other CPUs read is published beside the stock (an atomic pointer
//! the owner writes whenever the stock's memcg changes), because the stock itself is
//! reached only through its lock. Linux also skips a stock whose `nr_pages` is zero; the
//! owner does not publish its page count (that would be a store on every charge), so such
//! a stock is asked too, and its drain drops only the cache's reference.
//!
//! Unsafe code here, and why: the per-CPU stock caches a raw pointer to the memcg whose
//! charge it holds, which `unsafe trait StockTarget` makes its implementors keep alive
//! while the stock holds a reference, and, for the remote read, until a grace period of
//! the stocks' RCU domain after the last one.
#![allow(unsafe_code)]

use crate::error::MemcgError;
use crate::lock_classes::StockLock;
use crate::page_counter::PageCounter;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use ksync::local_lock::{LocalCpus, LocalLockError, LocalLockGuard};
use ksync::rcu::Rcu;
use ksync::{LocalLock, LockFamily, PerCpu};

/// Pages charged to the page counter at once and kept per CPU (`MEMCG_CHARGE_BATCH`).
pub const MEMCG_CHARGE_BATCH: u64 = 64;

/// Something a stock can cache: a memcg with a page counter and a reference count.
///
/// # Safety
///
/// After `css_get(&x)` the object behind `x` must stay alive and in place until the matching
/// `css_put`; `page_counter` must always return the same counter for the same object. For
/// stocks built with [`ChargeStocks::new_local`], which read other CPUs' cached objects
/// under the read lock of the RCU domain given there, an object must also stay alive until
/// a grace period of that domain has elapsed after its last `css_put`
/// (`mem_cgroup_css_free()` after an RCU grace period).
pub unsafe trait StockTarget {
    /// The counter charged and uncharged through the stock (`memcg->memory`).
    fn page_counter(&self) -> &PageCounter;
    /// Takes `n` references (`css_get_many()`) on `cpu`, the CPU whose stock is refilled.
    fn css_get_many(&self, cpu: usize, n: usize);
    /// Drops `n` references taken with [`StockTarget::css_get_many`] (`css_put_many()`),
    /// on `cpu` when the caller runs on a known CPU, else `None` (a remote drain).
    ///
    /// # Safety
    ///
    /// `this` must come from a reference on which at least `n` references were taken with
    /// `css_get_many` and not yet put; after the last one it must not be used.
    unsafe fn css_put_many(this: NonNull<Self>, cpu: Option<usize>, n: usize);
}

/// One CPU's stock: the cached memcg and its pre-charged pages, holding one reference on
/// the memcg for caching it and one per page.
#[derive(Debug)]
pub struct MemcgStock<T: StockTarget> {
    cached: Option<NonNull<T>>,
    nr_pages: u64,
}

// SAFETY: the stock owns a counted reference to `cached`; targets are shared between CPUs by
// design (all their operations are atomic), so moving the reference between threads is fine
// as long as `T` itself may be shared.
unsafe impl<T: StockTarget + Sync> Send for MemcgStock<T> {}

impl<T: StockTarget> MemcgStock<T> {
    const fn empty() -> Self {
        Self {
            cached: None,
            nr_pages: 0,
        }
    }

    /// Uncharges the stocked pages and drops their references and the cache's, in one
    /// call (`drain_stock()`); `cpu` is the draining CPU when known.
    fn drain(&mut self, cpu: Option<usize>) {
        if let Some(old) = self.cached.take() {
            let nr = core::mem::take(&mut self.nr_pages);
            // SAFETY: `cached` holds references taken in `refill`, so `old` is alive.
            let target = unsafe { old.as_ref() };
            if nr > 0 {
                // The stocked pages were charged by `refill`'s caller and never handed out,
                // so this cannot underflow.
                ksync::warn_on_once!(
                    target.page_counter().uncharge(nr).is_err(),
                    "draining a stock uncharged more than was charged"
                );
            }
            // SAFETY: drops the cache's reference and the stocked pages', all taken in
            // `refill` (consumed pages took theirs away); `old` is not used again.
            unsafe { T::css_put_many(old, cpu, nr as usize + 1) };
        }
    }
}

/// One CPU's slot: its stock, and whether another CPU asked it to drain it
/// (`FLUSHING_CACHED_CHARGE`).
struct StockPcp<F: LockFamily, T: StockTarget> {
    stock: LocalLock<F, StockLock, MemcgStock<T>>,
    /// Set by a `drain_all` that could not run on this CPU; cleared by the owner, which
    /// drains at its next use of the stock. Written by other CPUs only then.
    flush: AtomicBool,
    /// `stock.cached` as other CPUs read it (null: none), written by the owner under the
    /// stock's lock whenever the cached memcg changes: set after the cache's reference is
    /// taken, cleared before it is dropped.
    cached: AtomicPtr<T>,
}

impl<F: LockFamily, T: StockTarget> StockPcp<F, T> {
    fn new(stock: LocalLock<F, StockLock, MemcgStock<T>>) -> Self {
        Self {
            stock,
            flush: AtomicBool::new(false),
            cached: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// Drains `stock`, this slot's, and unpublishes its memcg first.
    fn drain(&self, stock: &mut MemcgStock<T>, cpu: Option<usize>) {
        self.cached.store(core::ptr::null_mut(), Ordering::Relaxed);
        stock.drain(cpu);
    }
}

/// The charge stocks of all CPUs.
pub struct ChargeStocks<F: LockFamily, T: StockTarget> {
    pcp: PerCpu<StockPcp<F, T>>,
    /// The platform's CPUs, and the RCU domain under which other CPUs' cached memcgs are
    /// read, when the stocks are owned by them ([`ChargeStocks::new_local`]).
    local: Option<(LocalCpus, &'static Rcu<F>)>,
}

/// A CPU's slot, and its stock locked.
type LockedSlot<'a, F, T> = (
    &'a StockPcp<F, T>,
    LocalLockGuard<'a, F, StockLock, MemcgStock<T>>,
);

/// Why a CPU's stock could not be locked.
#[cold]
fn refused(e: LocalLockError) -> MemcgError {
    match e {
        LocalLockError::NotOwner { owner, cpu } => MemcgError::NotThisCpu { owner, cpu },
        LocalLockError::Held => MemcgError::StockHeld,
    }
}

impl<F: LockFamily, T: StockTarget> core::fmt::Debug for ChargeStocks<F, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ChargeStocks")
            .field("nr_cpus", &self.pcp.nr_cpus())
            .finish()
    }
}

impl<F: LockFamily, T: StockTarget> ChargeStocks<F, T> {
    /// Empty stocks for `nr_cpus` CPUs.
    pub fn new(nr_cpus: usize) -> Self {
        Self {
            pcp: PerCpu::new(nr_cpus, |_| {
                StockPcp::new(LocalLock::locked(MemcgStock::empty()))
            }),
            local: None,
        }
    }

    /// Empty stocks for CPUs `0..nr_cpus` of `cpus`, each taken only by its own CPU without
    /// an atomic (`local_lock`); a call naming another CPU than the one it runs on fails.
    /// Other CPUs' cached memcgs are read under `rcu`'s read lock (see [`StockTarget`]).
    pub fn new_local(nr_cpus: usize, cpus: LocalCpus, rcu: &'static Rcu<F>) -> Self {
        Self {
            pcp: PerCpu::new(nr_cpus, |c| {
                StockPcp::new(LocalLock::owned(c, &cpus, MemcgStock::empty()))
            }),
            local: Some((cpus, rcu)),
        }
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.pcp.nr_cpus()
    }

    fn slot(&self, cpu: usize) -> Result<&StockPcp<F, T>, MemcgError> {
        self.pcp.get(cpu).ok_or(MemcgError::InvalidCpu {
            cpu,
            nr_cpus: self.pcp.nr_cpus(),
        })
    }

    /// `cpu`'s slot and its stock, locked (`local_lock_irqsave(&memcg_stock.stock_lock)`),
    /// drained first if another CPU asked for it.
    #[inline(always)]
    fn lock(&self, cpu: usize) -> Result<LockedSlot<'_, F, T>, MemcgError> {
        let slot = self.slot(cpu)?;
        let mut stock = slot.stock.lock().map_err(refused)?;
        // Only the owner clears the flag: a request that lands between the load and the
        // store is one this drain, which runs after it, satisfies.
        if slot.flush.load(Ordering::Relaxed) {
            slot.flush.store(false, Ordering::Relaxed);
            slot.drain(&mut stock, Some(cpu));
        }
        Ok((slot, stock))
    }

    /// Takes `nr_pages` from `cpu`'s stock if it caches `memcg` and holds enough
    /// (`consume_stock()`). Requests above the batch size never use the stock. On success
    /// the caller owns one css reference per page taken, which came with the pages.
    #[inline(always)]
    pub fn consume(&self, cpu: usize, memcg: &T, nr_pages: u64) -> Result<bool, MemcgError> {
        if nr_pages > MEMCG_CHARGE_BATCH {
            self.slot(cpu)?;
            return Ok(false);
        }
        let (_, mut stock) = self.lock(cpu)?;
        match stock.cached {
            Some(c) if core::ptr::eq(c.as_ptr(), memcg) && stock.nr_pages >= nr_pages => {
                stock.nr_pages -= nr_pages;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Puts `nr_pages`, already charged to `memcg`, into `cpu`'s stock (`refill_stock()`),
    /// taking a reference for each on `cpu` in one call (and one for caching `memcg` if it
    /// was not cached).
    ///
    /// If the stock caches another memcg it is drained first; if it grows above the batch
    /// size it is drained entirely.
    pub fn refill(&self, cpu: usize, memcg: &T, nr_pages: u64) -> Result<(), MemcgError> {
        let (slot, mut stock) = self.lock(cpu)?;
        let same = matches!(stock.cached, Some(c) if core::ptr::eq(c.as_ptr(), memcg));
        if !same {
            slot.drain(&mut stock, Some(cpu));
            memcg.css_get_many(cpu, nr_pages as usize + 1);
            let cached = NonNull::from(memcg);
            stock.cached = Some(cached);
            // Release: a CPU that reads the pointer sees the memcg as it was built.
            slot.cached.store(cached.as_ptr(), Ordering::Release);
        } else if nr_pages > 0 {
            memcg.css_get_many(cpu, nr_pages as usize);
        }
        stock.nr_pages += nr_pages;
        if stock.nr_pages > MEMCG_CHARGE_BATCH {
            slot.drain(&mut stock, Some(cpu));
        }
        Ok(())
    }

    /// Drains `cpu`'s stock.
    pub fn drain(&self, cpu: usize) -> Result<(), MemcgError> {
        let (slot, mut stock) = self.lock(cpu)?;
        slot.drain(&mut stock, Some(cpu));
        Ok(())
    }

    /// Drains every CPU's stock whose cached memcg satisfies `pred` (`drain_all_stock()`,
    /// where `pred` is "is `memcg` or a descendant of it"). Returns how many were drained
    /// now; with owned stocks and the other CPUs busy, those of the others whose cached
    /// memcg satisfies `pred` are asked to drain theirs at their next use (see the module
    /// documentation) and are not counted.
    pub fn drain_all(&self, pred: impl Fn(&T) -> bool + Sync) -> usize
    where
        T: Sync,
    {
        let Some((cpus, rcu)) = &self.local else {
            let mut drained = 0;
            for (cpu, _) in self.pcp.iter() {
                let Ok((slot, mut stock)) = self.lock(cpu) else {
                    continue;
                };
                if Self::drain_if(slot, &mut stock, &pred, None) {
                    drained += 1;
                }
            }
            return drained;
        };
        let drained = AtomicUsize::new(0);
        let ran = cpus.on_each_cpu(&|cpu| {
            if let Ok((slot, mut stock)) = self.lock(cpu)
                && Self::drain_if(slot, &mut stock, &pred, Some(cpu))
            {
                drained.fetch_add(1, Ordering::Relaxed);
            }
        });
        if ran {
            return drained.into_inner();
        }
        // The other CPUs are busy (a cross-CPU call is running): drain this CPU's stock and
        // ask those of the rest whose cached memcg matches, as Linux queues
        // `drain_local_stock` without waiting.
        let me = ksync::this_cpu();
        // A CPU outside the RCU domain cannot read the others' memcgs safely: it asks
        // every one, which only returns pages early.
        let guard = rcu.read_lock(me).ok();
        let mut now = 0;
        for (cpu, slot) in self.pcp.iter() {
            if cpu == me {
                if let Ok((slot, mut stock)) = self.lock(cpu)
                    && Self::drain_if(slot, &mut stock, &pred, Some(cpu))
                {
                    now += 1;
                }
                continue;
            }
            let ask = match &guard {
                Some(_) => {
                    // Published after the stock took a reference on it and cleared before
                    // that reference is dropped: the memcg was alive when read.
                    let cached = slot.cached.load(Ordering::Acquire);
                    // SAFETY: alive when read (above); `StockTarget` keeps it until a grace
                    // period of `rcu` after its last put, which `guard` holds off.
                    let memcg = unsafe { cached.as_ref() };
                    memcg.is_some_and(&pred)
                }
                None => true,
            };
            if ask {
                slot.flush.store(true, Ordering::Relaxed);
            }
        }
        drop(guard);
        now
    }

    /// Drains `stock`, `slot`'s, if its cached memcg satisfies `pred`; `cpu` the draining
    /// CPU when it is the stock's own.
    fn drain_if(
        slot: &StockPcp<F, T>,
        stock: &mut MemcgStock<T>,
        pred: &impl Fn(&T) -> bool,
        cpu: Option<usize>,
    ) -> bool {
        // SAFETY: `cached` holds a reference, so the target is alive while we look.
        let hit = stock.cached.is_some_and(|c| pred(unsafe { c.as_ref() }));
        if hit {
            slot.drain(stock, cpu);
        }
        hit
    }

    /// Pages held in `cpu`'s stock and whether it caches `memcg` (for tests and reports;
    /// with owned stocks, only on `cpu`).
    pub fn stocked(&self, cpu: usize, memcg: &T) -> Result<u64, MemcgError> {
        let (_, stock) = self.lock(cpu)?;
        Ok(match stock.cached {
            Some(c) if core::ptr::eq(c.as_ptr(), memcg) => stock.nr_pages,
            _ => 0,
        })
    }
}

impl<F: LockFamily, T: StockTarget> Drop for ChargeStocks<F, T> {
    fn drop(&mut self) {
        // `&mut self`: no CPU can be using a stock, so each is drained in place (no lock,
        // no cross-CPU call), as a remote drain.
        for cpu in 0..self.pcp.nr_cpus() {
            if let Some(slot) = self.pcp.get_mut(cpu) {
                slot.stock.get_mut().drain(None);
            }
        }
    }
}
