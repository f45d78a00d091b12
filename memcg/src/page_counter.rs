//! `struct page_counter`: the hierarchical page counter behind `memory.max`
//! (mm/page_counter.c).
//!
//! `usage` sits alone on its cacheline, as in Linux ("make sure 'usage' does not share
//! cacheline with any other field"); `max`, `watermark`, `failcnt` and the parent pointer
//! share the next line. A charge walks from the counter to the root; if any level would go
//! above its `max`, the levels already charged below it are unwound, that level's `failcnt`
//! is bumped and the level is returned so the caller knows which memcg to reclaim from.
//!
//! One deliberate difference from Linux: each level charges with a compare-and-swap that
//! refuses to go above `max`, instead of `atomic_long_add_return()` followed by a rollback,
//! so concurrent chargers near the limit never make `usage` exceed `max`, not even
//! transiently. The race with [`PageCounter::set_max`] is closed the way Linux closes it
//! (the writer publishes `max` then reads `usage`; a charger updates `usage` then re-reads
//! `max`), but without relying on sequentially consistent loads: the writer reads `usage`
//! with a read-modify-write (`fetch_add(0)`), so either it reads the charger's update or the
//! charger's compare-and-swap reads from it and thereby sees the new `max`. This is what
//! the loom test `charge_racing_a_lower_limit_never_ends_above_it` checks; the charger's
//! hot path stays one CAS plus plain loads. A refusal (charge above `max`, uncharge below
//! zero) is decided only on a value read by a read-modify-write, never on a plain load that
//! may be older (loom found the uncharge case).

use crate::sync::{AtomicU64, Ordering};
use core::ptr::NonNull;

/// Largest value `max` can hold ("no limit"), Linux's `PAGE_COUNTER_MAX` on 64-bit.
pub const PAGE_COUNTER_MAX: u64 = (i64::MAX as u64) / 4096;

/// The usage word, on its own cacheline.
#[repr(C, align(64))]
#[derive(Debug)]
struct UsageLine {
    usage: AtomicU64,
}

/// Fields read at every level of a charge but written only on limit changes or failure.
#[repr(C, align(64))]
#[derive(Debug)]
struct LimitLine {
    max: AtomicU64,
    watermark: AtomicU64,
    failcnt: AtomicU64,
    parent: Option<NonNull<PageCounter>>,
}

/// A hierarchical page counter (`struct page_counter`).
#[repr(C)]
#[derive(Debug)]
pub struct PageCounter {
    usage: UsageLine,
    limits: LimitLine,
}

#[cfg(not(loom))]
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(offset_of!(PageCounter, usage) == 0);
    assert!(size_of::<UsageLine>() == 64);
    assert!(offset_of!(PageCounter, limits) == 64);
    assert!(size_of::<LimitLine>() == 64);
    assert!(size_of::<PageCounter>() == 128);
};

// SAFETY: all mutable state is atomic; `parent` is only dereferenced for shared access, and
// the constructor's contract keeps the parent alive as long as this counter.
unsafe impl Send for PageCounter {}
// SAFETY: as above; `&PageCounter` only exposes atomic operations.
unsafe impl Sync for PageCounter {}

/// A level of the hierarchy refused a charge (the `fail` out-parameter of
/// `page_counter_try_charge()`).
#[derive(Clone, Copy, Debug)]
pub struct ChargeFailure<'a> {
    /// The counter whose `max` would have been exceeded.
    pub over_limit: &'a PageCounter,
}

/// More pages were uncharged than a level held; that level was clamped to zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnchargeUnderflow;

impl PageCounter {
    /// Byte offset of the limits line (`max`, `watermark`, `failcnt`, `parent`).
    pub const LIMITS_OFFSET: usize = core::mem::offset_of!(PageCounter, limits);

    /// A root counter (no parent) with the given `max`.
    pub fn new_root(max: u64) -> Self {
        Self::with_parent(None, max)
    }

    /// A counter whose charges also go to `parent` and its ancestors.
    ///
    /// # Safety
    ///
    /// `parent` must point to a live `PageCounter` that stays at the same address and
    /// outlives the returned counter (in this crate: a child memcg holds a reference on its
    /// parent until it is freed).
    pub unsafe fn new_child(parent: NonNull<PageCounter>, max: u64) -> Self {
        Self::with_parent(Some(parent), max)
    }

    fn with_parent(parent: Option<NonNull<PageCounter>>, max: u64) -> Self {
        Self {
            usage: UsageLine {
                usage: AtomicU64::new(0),
            },
            limits: LimitLine {
                max: AtomicU64::new(max.min(PAGE_COUNTER_MAX)),
                watermark: AtomicU64::new(0),
                failcnt: AtomicU64::new(0),
                parent,
            },
        }
    }

    /// The parent counter, if any.
    #[inline]
    pub fn parent(&self) -> Option<&PageCounter> {
        // SAFETY: `new_child`'s contract keeps the parent alive and in place for as long as
        // `self` exists, and we only hand out a shared reference bounded by `&self`.
        self.limits.parent.map(|p| unsafe { p.as_ref() })
    }

    /// Pages currently charged (`page_counter_read()`).
    #[inline]
    pub fn usage(&self) -> u64 {
        self.usage.usage.load(Ordering::Relaxed)
    }

    /// The limit in pages.
    #[inline]
    pub fn max(&self) -> u64 {
        self.limits.max.load(Ordering::Relaxed)
    }

    /// Highest usage seen since creation or the last [`Self::reset_watermark`].
    #[inline]
    pub fn watermark(&self) -> u64 {
        self.limits.watermark.load(Ordering::Relaxed)
    }

    /// How many charges this level refused.
    #[inline]
    pub fn failcnt(&self) -> u64 {
        self.limits.failcnt.load(Ordering::Relaxed)
    }

    /// Pages that can still be charged at this level before hitting `max`.
    #[inline]
    pub fn margin(&self) -> u64 {
        self.max().saturating_sub(self.usage())
    }

    /// Resets the watermark to the current usage (`page_counter_reset_watermark()`).
    pub fn reset_watermark(&self) {
        self.limits.watermark.store(self.usage(), Ordering::Relaxed);
    }

    /// Charges `nr_pages` at this level only, refusing to exceed `max`.
    fn charge_level(&self, nr_pages: u64) -> bool {
        let usage = &self.usage.usage;
        let mut cur = usage.load(Ordering::Relaxed);
        loop {
            let max = self.limits.max.load(Ordering::Acquire);
            let new = match cur.checked_add(nr_pages) {
                Some(new) if new <= max => new,
                _ => {
                    // Refuse only on the latest value: a plain load may return an older one.
                    let latest = usage.fetch_add(0, Ordering::AcqRel);
                    if latest == cur {
                        return false;
                    }
                    cur = latest;
                    continue;
                }
            };
            match usage.compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    // Pairs with set_max(): either its `fetch_add(0)` on usage comes later
                    // and sees this charge, or our CAS read from it and this load sees its
                    // new max.
                    if new > self.limits.max.load(Ordering::Acquire) {
                        let _ = self.cancel_level(nr_pages);
                        return false;
                    }
                    if new > self.limits.watermark.load(Ordering::Relaxed) {
                        self.limits.watermark.fetch_max(new, Ordering::Relaxed);
                    }
                    return true;
                }
                Err(seen) => cur = seen,
            }
        }
    }

    /// Uncharges `nr_pages` at this level only, clamping at zero (`page_counter_cancel()`).
    fn cancel_level(&self, nr_pages: u64) -> Result<(), UnchargeUnderflow> {
        let usage = &self.usage.usage;
        let mut cur = usage.load(Ordering::Relaxed);
        loop {
            let (new, res) = match cur.checked_sub(nr_pages) {
                Some(new) => (new, Ok(())),
                None => (0, Err(UnchargeUnderflow)),
            };
            match usage.compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return res,
                Err(seen) => cur = seen,
            }
        }
    }

    /// Charges `nr_pages` here and at every ancestor (`page_counter_try_charge()`).
    ///
    /// On failure nothing stays charged: the levels below the refusing one are unwound, the
    /// refusing level's `failcnt` is incremented and it is returned.
    pub fn try_charge(&self, nr_pages: u64) -> Result<(), ChargeFailure<'_>> {
        let mut level = Some(self);
        while let Some(c) = level {
            if !c.charge_level(nr_pages) {
                c.limits.failcnt.fetch_add(1, Ordering::Relaxed);
                let mut undo = Some(self);
                while let Some(u) = undo {
                    if core::ptr::eq(u, c) {
                        break;
                    }
                    // Cannot underflow: we charged this level ourselves just above.
                    let _ = u.cancel_level(nr_pages);
                    undo = u.parent();
                }
                return Err(ChargeFailure { over_limit: c });
            }
            level = c.parent();
        }
        Ok(())
    }

    /// Uncharges `nr_pages` here and at every ancestor (`page_counter_uncharge()`).
    ///
    /// If this counter holds fewer than `nr_pages`, nothing changes and the call reports
    /// [`UnchargeUnderflow`]. An ancestor holding fewer (which the hierarchy rules out unless
    /// some caller's accounting is already broken) is clamped to zero, as Linux does after
    /// its warning, and the underflow is reported too.
    #[must_use = "an underflow means the caller's accounting is broken"]
    pub fn uncharge(&self, nr_pages: u64) -> Result<(), UnchargeUnderflow> {
        let usage = &self.usage.usage;
        let mut cur = usage.load(Ordering::Relaxed);
        loop {
            let Some(new) = cur.checked_sub(nr_pages) else {
                // Refuse only on the latest value: a plain load may return an older one.
                let latest = usage.fetch_add(0, Ordering::AcqRel);
                if latest == cur {
                    return Err(UnchargeUnderflow);
                }
                cur = latest;
                continue;
            };
            match usage.compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => break,
                Err(seen) => cur = seen,
            }
        }
        let mut res = Ok(());
        let mut level = self.parent();
        while let Some(c) = level {
            if c.cancel_level(nr_pages).is_err() {
                res = Err(UnchargeUnderflow);
            }
            level = c.parent();
        }
        res
    }

    /// Uncharges `nr_pages` at this level only, leaving the ancestors charged: the pages
    /// become the parent's own charge. Used when an offline memcg's charges move to its
    /// parent (reparenting).
    #[must_use = "an underflow means the caller's accounting is broken"]
    pub fn cancel_local(&self, nr_pages: u64) -> Result<(), UnchargeUnderflow> {
        self.cancel_level(nr_pages)
    }

    /// Sets `max` (`page_counter_set_max()`); fails with the current usage if it is above
    /// the new limit. The caller reclaims and retries, as `memory_max_write()` does.
    #[must_use = "the limit is not set when usage is above it"]
    pub fn set_max(&self, max: u64) -> Result<(), u64> {
        let max = max.min(PAGE_COUNTER_MAX);
        loop {
            let usage = self.usage.usage.load(Ordering::Acquire);
            if usage > max {
                return Err(usage);
            }
            let old = self.limits.max.swap(max, Ordering::AcqRel);
            // A read-modify-write, not a load: see the module comment.
            if self.usage.usage.fetch_add(0, Ordering::AcqRel) <= usage || max >= old {
                return Ok(());
            }
            // Usage grew while the smaller limit was being published: restore and retry.
            self.limits.max.store(old, Ordering::Release);
            crate::sync::spin_hint();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use alloc::boxed::Box;

    fn three_levels(maxes: [u64; 3]) -> (Box<PageCounter>, Box<PageCounter>, Box<PageCounter>) {
        let root = Box::new(PageCounter::new_root(maxes[0]));
        // SAFETY: `root` is boxed (stable address) and every test drops `leaf` and `mid`
        // before `root`.
        let mid = Box::new(unsafe { PageCounter::new_child(NonNull::from(&*root), maxes[1]) });
        // SAFETY: as above.
        let leaf = Box::new(unsafe { PageCounter::new_child(NonNull::from(&*mid), maxes[2]) });
        (root, mid, leaf)
    }

    #[test]
    fn charge_propagates_and_uncharge_returns() {
        let (root, mid, leaf) = three_levels([100, 50, 30]);
        leaf.try_charge(20).unwrap();
        mid.try_charge(5).unwrap();
        assert_eq!((leaf.usage(), mid.usage(), root.usage()), (20, 25, 25));
        assert_eq!(leaf.uncharge(20), Ok(()));
        assert_eq!((leaf.usage(), mid.usage(), root.usage()), (0, 5, 5));
        assert_eq!(leaf.watermark(), 20);
        assert_eq!(mid.watermark(), 25);
        drop(leaf);
        drop(mid);
    }

    #[test]
    fn failure_unwinds_lower_levels_and_counts() {
        let (root, mid, leaf) = three_levels([100, 10, 30]);
        let err = leaf.try_charge(11).unwrap_err();
        assert!(core::ptr::eq(err.over_limit, &*mid));
        assert_eq!((leaf.usage(), mid.usage(), root.usage()), (0, 0, 0));
        assert_eq!((leaf.failcnt(), mid.failcnt(), root.failcnt()), (0, 1, 0));
        leaf.try_charge(10).unwrap();
        assert!(leaf.try_charge(1).is_err());
        assert_eq!(mid.failcnt(), 2);
        drop(leaf);
        drop(mid);
    }

    #[test]
    fn underflow_is_reported_without_changes() {
        let (root, mid, leaf) = three_levels([100, 100, 100]);
        mid.try_charge(5).unwrap();
        leaf.try_charge(1).unwrap();
        assert_eq!(leaf.uncharge(3), Err(UnchargeUnderflow));
        assert_eq!((leaf.usage(), mid.usage(), root.usage()), (1, 6, 6));
        // An ancestor that lost pages behind the hierarchy's back is clamped and reported.
        assert_eq!(mid.cancel_local(6), Ok(()));
        assert_eq!(leaf.uncharge(1), Err(UnchargeUnderflow));
        assert_eq!((leaf.usage(), mid.usage(), root.usage()), (0, 0, 5));
        drop(leaf);
        drop(mid);
    }

    #[test]
    fn set_max_refuses_below_usage() {
        let c = PageCounter::new_root(PAGE_COUNTER_MAX);
        c.try_charge(40).unwrap();
        assert_eq!(c.set_max(39), Err(40));
        assert_eq!(c.max(), PAGE_COUNTER_MAX);
        assert_eq!(c.set_max(40), Ok(()));
        assert!(c.try_charge(1).is_err());
        assert_eq!(c.margin(), 0);
        assert_eq!(c.set_max(u64::MAX), Ok(()));
        assert_eq!(c.max(), PAGE_COUNTER_MAX);
    }

    #[test]
    fn overflowing_charge_is_refused() {
        let c = PageCounter::new_root(PAGE_COUNTER_MAX);
        assert!(c.try_charge(u64::MAX).is_err());
        assert_eq!(c.usage(), 0);
    }

    #[test]
    fn concurrent_charges_never_exceed_max() {
        let c = PageCounter::new_root(1000);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..2000 {
                        if c.try_charge(3).is_ok() {
                            assert!(c.usage() <= 1000);
                            assert_eq!(c.uncharge(3), Ok(()));
                        }
                    }
                });
            }
        });
        assert_eq!(c.usage(), 0);
        assert!(c.watermark() <= 1000);
    }
}
