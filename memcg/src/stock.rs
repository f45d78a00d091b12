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
//! Linux protects the stock with a local lock and drains remote CPUs through per-CPU work.
//! Here the stock is a lock (class `memcg_stock.lock`) that the owning CPU takes
//! uncontended and a draining CPU takes remotely, which gives the same exclusion.
//!
//! Unsafe code here, and why: the per-CPU stock caches a raw pointer to the memcg whose
//! charge it holds, which `unsafe trait StockTarget` makes its implementors keep alive
//! while the stock holds a reference.
#![allow(unsafe_code)]

use crate::error::MemcgError;
use crate::lock_classes::StockLock;
use crate::page_counter::PageCounter;
use core::ptr::NonNull;
use ksync::{LockFamily, PerCpu};
use lock_api::Mutex;
use lru::sync::Lock;

/// Pages charged to the page counter at once and kept per CPU (`MEMCG_CHARGE_BATCH`).
pub const MEMCG_CHARGE_BATCH: u64 = 64;

/// Something a stock can cache: a memcg with a page counter and a reference count.
///
/// # Safety
///
/// After `css_get(&x)` the object behind `x` must stay alive and in place until the matching
/// `css_put`; `page_counter` must always return the same counter for the same object.
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

/// The charge stocks of all CPUs.
pub struct ChargeStocks<F: LockFamily, T: StockTarget> {
    pcp: PerCpu<Mutex<Lock<F, StockLock>, MemcgStock<T>>>,
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
            pcp: PerCpu::new(nr_cpus, |_| Mutex::new(MemcgStock::empty())),
        }
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.pcp.nr_cpus()
    }

    fn slot(&self, cpu: usize) -> Result<&Mutex<Lock<F, StockLock>, MemcgStock<T>>, MemcgError> {
        self.pcp.get(cpu).ok_or(MemcgError::InvalidCpu {
            cpu,
            nr_cpus: self.pcp.nr_cpus(),
        })
    }

    /// Takes `nr_pages` from `cpu`'s stock if it caches `memcg` and holds enough
    /// (`consume_stock()`). Requests above the batch size never use the stock. On success
    /// the caller owns one css reference per page taken, which came with the pages.
    pub fn consume(&self, cpu: usize, memcg: &T, nr_pages: u64) -> Result<bool, MemcgError> {
        let stock = self.slot(cpu)?;
        if nr_pages > MEMCG_CHARGE_BATCH {
            return Ok(false);
        }
        let mut stock = stock.lock();
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
        let stock = self.slot(cpu)?;
        let mut stock = stock.lock();
        let same = matches!(stock.cached, Some(c) if core::ptr::eq(c.as_ptr(), memcg));
        if !same {
            stock.drain(Some(cpu));
            memcg.css_get_many(cpu, nr_pages as usize + 1);
            stock.cached = Some(NonNull::from(memcg));
        } else if nr_pages > 0 {
            memcg.css_get_many(cpu, nr_pages as usize);
        }
        stock.nr_pages += nr_pages;
        if stock.nr_pages > MEMCG_CHARGE_BATCH {
            stock.drain(Some(cpu));
        }
        Ok(())
    }

    /// Drains `cpu`'s stock.
    pub fn drain(&self, cpu: usize) -> Result<(), MemcgError> {
        self.slot(cpu)?.lock().drain(Some(cpu));
        Ok(())
    }

    /// Drains every CPU's stock whose cached memcg satisfies `pred` (`drain_all_stock()`,
    /// where `pred` is "is `memcg` or a descendant of it"). Returns how many were drained.
    pub fn drain_all(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        let mut drained = 0;
        for (_, stock) in self.pcp.iter() {
            let mut stock = stock.lock();
            // SAFETY: `cached` holds a reference, so the target is alive while we look.
            let hit = stock.cached.is_some_and(|c| pred(unsafe { c.as_ref() }));
            if hit {
                // Run by any CPU for every CPU's stock: the shared count.
                stock.drain(None);
                drained += 1;
            }
        }
        drained
    }

    /// Pages held in `cpu`'s stock and whether it caches `memcg` (for tests and reports).
    pub fn stocked(&self, cpu: usize, memcg: &T) -> Result<u64, MemcgError> {
        let stock = self.slot(cpu)?.lock();
        Ok(match stock.cached {
            Some(c) if core::ptr::eq(c.as_ptr(), memcg) => stock.nr_pages,
            _ => 0,
        })
    }
}

impl<F: LockFamily, T: StockTarget> Drop for ChargeStocks<F, T> {
    fn drop(&mut self) {
        self.drain_all(|_| true);
    }
}
