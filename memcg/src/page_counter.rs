//! `struct page_counter`: the hierarchical page counter behind `memory.max`, `memory.min`
//! and `memory.low` (mm/page_counter.c, include/linux/page_counter.h).
//!
//! The fields are in Linux's three cacheline groups:
//! - `usage` (with `failcnt`) alone on the first line: every charge and uncharge at every
//!   level writes it ("make sure 'usage' does not share cacheline with any other field");
//! - the protection counters and the watermarks on the second line: written when a new
//!   high is reached or protected usage changes (`emin`, `min_usage`,
//!   `children_min_usage`, `elow`, `low_usage`, `children_low_usage`, `watermark`,
//!   `local_watermark`);
//! - the read-mostly fields on the third (`protection_support`, `track_failcnt`, `min`,
//!   `low`, `max`, `parent`), which every charge reads at every level, so that a failed
//!   charge or a new watermark no longer writes the line every charge reads.
//!
//! A charge walks from the counter to the root; if any level would go above its `max`,
//! the levels already charged below it are unwound, that level's `failcnt` is bumped (when
//! it tracks failures) and the level is returned so the caller knows which memcg to
//! reclaim from. With protection support on, every usage change propagates the protected
//! usage (`min(usage, min)`, `min(usage, low)`) to the parent's `children_*_usage`
//! (`propagate_protected_usage()`), from which [`PageCounter::calculate_protection`]
//! derives the effective protection (`emin`, `elow`) reclaim honours. `memory.high` is not
//! modelled.
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
//!
//! Unsafe code here, and why: a page counter reaches its parent through a raw pointer
//! (Linux's `counter->parent`), valid as long as the child by the constructor's contract.
#![allow(unsafe_code)]

use crate::sync::{AtomicBool, AtomicU64, Ordering};
use core::ptr::NonNull;

/// Largest value `max` can hold ("no limit"), Linux's `PAGE_COUNTER_MAX` on 64-bit.
pub const PAGE_COUNTER_MAX: u64 = (i64::MAX as u64) / 4096;

/// The usage group: `usage` and `failcnt`, on their own line.
#[repr(C, align(64))]
#[derive(Debug)]
struct UsageLine {
    usage: AtomicU64,
    /// Charges this level refused (`failcnt`, counted with `track_failcnt`).
    failcnt: AtomicU64,
}

/// Protection tracking and watermarks: written on protected-usage changes and new highs.
#[repr(C, align(64))]
#[derive(Debug)]
struct ProtectionLine {
    emin: AtomicU64,
    min_usage: AtomicU64,
    children_min_usage: AtomicU64,
    elow: AtomicU64,
    low_usage: AtomicU64,
    children_low_usage: AtomicU64,
    watermark: AtomicU64,
    local_watermark: AtomicU64,
}

/// Read by every charge at every level, written only on limit changes.
#[repr(C, align(64))]
#[derive(Debug)]
struct LimitLine {
    protection_support: AtomicBool,
    track_failcnt: AtomicBool,
    min: AtomicU64,
    low: AtomicU64,
    max: AtomicU64,
    parent: Option<NonNull<PageCounter>>,
}

/// A hierarchical page counter (`struct page_counter`).
#[repr(C)]
#[derive(Debug)]
pub struct PageCounter {
    usage: UsageLine,
    protection: ProtectionLine,
    limits: LimitLine,
}

#[cfg(not(loom))]
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(offset_of!(PageCounter, usage) == 0);
    assert!(size_of::<UsageLine>() == 64);
    assert!(offset_of!(PageCounter, protection) == 64);
    assert!(size_of::<ProtectionLine>() == 64);
    assert!(offset_of!(PageCounter, limits) == 128);
    assert!(size_of::<LimitLine>() == 64);
    assert!(size_of::<PageCounter>() == 192);
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
    /// Byte offset of the protection and watermark group.
    pub const PROTECTION_OFFSET: usize = core::mem::offset_of!(PageCounter, protection);
    /// Byte offset of the read-mostly limits group (`min`, `low`, `max`, `parent`).
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
        let z = || AtomicU64::new(0);
        Self {
            usage: UsageLine {
                usage: z(),
                failcnt: z(),
            },
            protection: ProtectionLine {
                emin: z(),
                min_usage: z(),
                children_min_usage: z(),
                elow: z(),
                low_usage: z(),
                children_low_usage: z(),
                watermark: z(),
                local_watermark: z(),
            },
            limits: LimitLine {
                protection_support: AtomicBool::new(true),
                track_failcnt: AtomicBool::new(true),
                min: z(),
                low: z(),
                max: AtomicU64::new(max.min(PAGE_COUNTER_MAX)),
                parent,
            },
        }
    }

    /// The pahole table of the struct, in its groups.
    #[must_use]
    pub fn layout_fields() -> [lru::layout::FieldDesc; 16] {
        type T = PageCounter;
        [
            lru::layout_field!(T, "usage", "usage" => usage.usage),
            lru::layout_field!(T, "usage", "failcnt" => usage.failcnt),
            lru::layout_field!(T, "protection", "emin" => protection.emin),
            lru::layout_field!(T, "protection", "min_usage" => protection.min_usage),
            lru::layout_field!(T, "protection", "children_min_usage" => protection.children_min_usage),
            lru::layout_field!(T, "protection", "elow" => protection.elow),
            lru::layout_field!(T, "protection", "low_usage" => protection.low_usage),
            lru::layout_field!(T, "protection", "children_low_usage" => protection.children_low_usage),
            lru::layout_field!(T, "protection", "watermark" => protection.watermark),
            lru::layout_field!(T, "protection", "local_watermark" => protection.local_watermark),
            lru::layout_field!(T, "read_mostly", "protection_support" => limits.protection_support),
            lru::layout_field!(T, "read_mostly", "track_failcnt" => limits.track_failcnt),
            lru::layout_field!(T, "read_mostly", "min" => limits.min),
            lru::layout_field!(T, "read_mostly", "low" => limits.low),
            lru::layout_field!(T, "read_mostly", "max" => limits.max),
            lru::layout_field!(T, "read_mostly", "parent" => limits.parent),
        ]
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

    /// `memory.min` in pages.
    #[inline]
    pub fn min(&self) -> u64 {
        self.limits.min.load(Ordering::Relaxed)
    }

    /// `memory.low` in pages.
    #[inline]
    pub fn low(&self) -> u64 {
        self.limits.low.load(Ordering::Relaxed)
    }

    /// Highest usage seen since creation or the last [`Self::reset_watermark`].
    #[inline]
    pub fn watermark(&self) -> u64 {
        self.protection.watermark.load(Ordering::Relaxed)
    }

    /// Highest usage since the last [`Self::reset_local_watermark`] (`memory.peak`).
    #[inline]
    pub fn local_watermark(&self) -> u64 {
        self.protection.local_watermark.load(Ordering::Relaxed)
    }

    /// How many charges this level refused.
    #[inline]
    pub fn failcnt(&self) -> u64 {
        self.usage.failcnt.load(Ordering::Relaxed)
    }

    /// The effective `memory.min` computed by the last [`Self::calculate_protection`].
    #[inline]
    pub fn emin(&self) -> u64 {
        self.protection.emin.load(Ordering::Relaxed)
    }

    /// The effective `memory.low` computed by the last [`Self::calculate_protection`].
    #[inline]
    pub fn elow(&self) -> u64 {
        self.protection.elow.load(Ordering::Relaxed)
    }

    /// Protected usage of the children under `min` (`children_min_usage`).
    #[inline]
    pub fn children_min_usage(&self) -> u64 {
        self.protection.children_min_usage.load(Ordering::Relaxed)
    }

    /// Pages that can still be charged at this level before hitting `max`.
    #[inline]
    pub fn margin(&self) -> u64 {
        self.max().saturating_sub(self.usage())
    }

    /// Resets the watermark to the current usage (`page_counter_reset_watermark()`).
    pub fn reset_watermark(&self) {
        let u = self.usage();
        self.protection.watermark.store(u, Ordering::Relaxed);
        self.protection.local_watermark.store(u, Ordering::Relaxed);
    }

    /// Resets the local watermark only (a write to cgroup v2's `memory.peak`).
    pub fn reset_local_watermark(&self) {
        self.protection
            .local_watermark
            .store(self.usage(), Ordering::Relaxed);
    }

    /// `propagate_protected_usage()`: after a usage change to `usage`, publish this level's
    /// protected usage (`min(usage, min)`, `min(usage, low)`) into the parent's children
    /// sums.
    fn propagate_protected_usage(&self, usage: u64) {
        let Some(parent) = self.parent() else { return };
        let p = &self.protection;
        let pp = &parent.protection;
        let protected = usage.min(self.limits.min.load(Ordering::Relaxed));
        if protected != p.min_usage.load(Ordering::Relaxed) {
            let old = p.min_usage.swap(protected, Ordering::Relaxed);
            // Linux's signed `delta`: the atomics wrap, so adding `protected - old` modulo
            // 2^64 subtracts when the protected usage shrank.
            let delta = protected.wrapping_sub(old);
            if delta != 0 {
                pp.children_min_usage.fetch_add(delta, Ordering::Relaxed);
            }
        }
        let protected = usage.min(self.limits.low.load(Ordering::Relaxed));
        if protected != p.low_usage.load(Ordering::Relaxed) {
            let old = p.low_usage.swap(protected, Ordering::Relaxed);
            let delta = protected.wrapping_sub(old);
            if delta != 0 {
                pp.children_low_usage.fetch_add(delta, Ordering::Relaxed);
            }
        }
    }

    #[inline]
    fn usage_changed(&self, new: u64) {
        if self.limits.protection_support.load(Ordering::Relaxed) {
            self.propagate_protected_usage(new);
        }
    }

    /// Charges `nr_pages` at this level only, refusing to exceed `max`.
    fn charge_level(&self, nr_pages: u64) -> bool {
        let usage = &self.usage.usage;
        let mut cur = usage.load(Ordering::Relaxed);
        loop {
            let max = self.limits.max.load(Ordering::Acquire);
            let new = match cur.checked_add(nr_pages) {
                Some(new) if new <= max => new,
                // Refuse only on the latest value: a plain load may return an older one. A
                // compare-and-swap of `cur` with itself succeeds only if `cur` is the
                // latest (a read-modify-write read it); otherwise retry with what it saw.
                _ => match usage.compare_exchange(cur, cur, Ordering::AcqRel, Ordering::Relaxed) {
                    Ok(_) => return false,
                    Err(seen) => {
                        cur = seen;
                        continue;
                    }
                },
            };
            match usage.compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    // Pairs with set_max(): either its `fetch_add(0)` on usage comes later
                    // and sees this charge, or our CAS read from it and this load sees its
                    // new max.
                    if new > self.limits.max.load(Ordering::Acquire) {
                        ksync::warn_on_once!(
                            self.cancel_level(nr_pages).is_err(),
                            "page_counter_cancel underflowed"
                        );
                        return false;
                    }
                    self.usage_changed(new);
                    // Written only on a new high: the watermark line, not the limits line.
                    let pr = &self.protection;
                    if new > pr.watermark.load(Ordering::Relaxed) {
                        pr.watermark.fetch_max(new, Ordering::Relaxed);
                    }
                    if new > pr.local_watermark.load(Ordering::Relaxed) {
                        pr.local_watermark.fetch_max(new, Ordering::Relaxed);
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
                Ok(_) => {
                    self.usage_changed(new);
                    return res;
                }
                Err(seen) => cur = seen,
            }
        }
    }

    /// Charges `nr_pages` here and at every ancestor (`page_counter_try_charge()`).
    ///
    /// On failure nothing stays charged: the levels below the refusing one are unwound, the
    /// refusing level's `failcnt` is incremented (if it tracks failures) and it is returned.
    ///
    /// Out of line and on a page of its own in the kernel's build (`.text.hot`): the
    /// charge's slow path calls it every 64 pages, and placed by the linker it once
    /// straddled a page, 2.9 unchained transitions per seed000 read in every variant.
    #[inline(never)]
    pub fn try_charge(&self, nr_pages: u64) -> Result<(), ChargeFailure<'_>> {
        let mut level = Some(self);
        while let Some(c) = level {
            if !c.charge_level(nr_pages) {
                if c.limits.track_failcnt.load(Ordering::Relaxed) {
                    c.usage.failcnt.fetch_add(1, Ordering::Relaxed);
                }
                let mut undo = Some(self);
                while let Some(u) = undo {
                    if core::ptr::eq(u, c) {
                        break;
                    }
                    // Cannot underflow: we charged this level ourselves just above.
                    ksync::warn_on_once!(
                        u.cancel_level(nr_pages).is_err(),
                        "page_counter_cancel underflowed"
                    );
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
                // Refuse only on the latest value, as charge_level() does.
                match usage.compare_exchange(cur, cur, Ordering::AcqRel, Ordering::Relaxed) {
                    Ok(_) => return Err(UnchargeUnderflow),
                    Err(seen) => {
                        cur = seen;
                        continue;
                    }
                }
            };
            match usage.compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    self.usage_changed(new);
                    break;
                }
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
    ///
    /// A charge that races a lower limit (usage above it once the limit is published) makes
    /// it fail too, with the old limit restored: where Linux's loop tries again at once, this
    /// leaves the retry to the caller, whose reclaim loop is bounded.
    #[must_use = "the limit is not set when usage is above it"]
    pub fn set_max(&self, max: u64) -> Result<(), u64> {
        let max = max.min(PAGE_COUNTER_MAX);
        let usage = self.usage.usage.load(Ordering::Acquire);
        if usage > max {
            return Err(usage);
        }
        let old = self.limits.max.swap(max, Ordering::AcqRel);
        // A read-modify-write, not a load: see the module comment. Every charge it does not
        // see reads the new limit; every charge it sees is within the limit or was not.
        let now = self.usage.usage.fetch_add(0, Ordering::AcqRel);
        if now <= max {
            return Ok(());
        }
        // Usage grew above the limit while it was being published: restore the old one.
        self.limits.max.store(old, Ordering::Release);
        Err(now)
    }

    /// `page_counter_set_min()`: sets `memory.min` and republishes the protected usage of
    /// this level and its ancestors.
    pub fn set_min(&self, min: u64) {
        self.limits
            .min
            .store(min.min(PAGE_COUNTER_MAX), Ordering::Relaxed);
        let mut c = Some(self);
        while let Some(l) = c {
            l.propagate_protected_usage(l.usage());
            c = l.parent();
        }
    }

    /// `page_counter_set_low()`: sets `memory.low` likewise.
    pub fn set_low(&self, low: u64) {
        self.limits
            .low
            .store(low.min(PAGE_COUNTER_MAX), Ordering::Relaxed);
        let mut c = Some(self);
        while let Some(l) = c {
            l.propagate_protected_usage(l.usage());
            c = l.parent();
        }
    }

    /// `page_counter_calculate_protection()` (without `memory_recursiveprot`): this level's
    /// effective `min` and `low` as seen from reclaim of `root`. Below `root`'s children the
    /// protection is shared in proportion to usage when the children claim more than
    /// their parent affords them. A level with no usage, and `root` itself, keep their old
    /// values (reclaim skips them anyway).
    pub fn calculate_protection(&self, root: &PageCounter) {
        if core::ptr::eq(self, root) {
            return;
        }
        let usage = self.usage();
        if usage == 0 {
            return;
        }
        let Some(parent) = self.parent() else { return };
        let (min, low) = (self.min(), self.low());
        if core::ptr::eq(parent, root) {
            self.protection.emin.store(min, Ordering::Relaxed);
            self.protection.elow.store(low, Ordering::Relaxed);
            return;
        }
        let pp = &parent.protection;
        let emin = effective_protection(
            usage,
            min,
            pp.emin.load(Ordering::Relaxed),
            pp.children_min_usage.load(Ordering::Relaxed),
        );
        let elow = effective_protection(
            usage,
            low,
            pp.elow.load(Ordering::Relaxed),
            pp.children_low_usage.load(Ordering::Relaxed),
        );
        self.protection.emin.store(emin, Ordering::Relaxed);
        self.protection.elow.store(elow, Ordering::Relaxed);
    }
}

/// `effective_protection()` without recursive protection: the protected usage, scaled down
/// when the siblings together claim more than the parent's effective protection.
fn effective_protection(
    usage: u64,
    setting: u64,
    parent_effective: u64,
    siblings_protected: u64,
) -> u64 {
    let protected = usage.min(setting);
    if siblings_protected > parent_effective {
        // u128: pages times pages does not fit in 64 bits in general.
        return (u128::from(protected) * u128::from(parent_effective)
            / u128::from(siblings_protected)) as u64;
    }
    protected
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
    fn no_limit_is_linuxs_page_counter_max() {
        // LONG_MAX / PAGE_SIZE on 64-bit.
        assert_eq!(PAGE_COUNTER_MAX, 2_251_799_813_685_247);
        let c = PageCounter::new_root(u64::MAX);
        assert_eq!(c.max(), PAGE_COUNTER_MAX);
        // Far more than a batch, or a 4 KiB page's worth of pages, fits under no limit.
        c.try_charge(1 << 40).unwrap();
        c.try_charge(4097).unwrap();
        assert_eq!(c.usage(), (1 << 40) + 4097);
        assert_eq!(c.margin(), PAGE_COUNTER_MAX - c.usage());
        assert!(c.try_charge(PAGE_COUNTER_MAX).is_err());
        c.set_min(u64::MAX);
        c.set_low(u64::MAX);
        assert_eq!((c.min(), c.low()), (PAGE_COUNTER_MAX, PAGE_COUNTER_MAX));
    }

    #[test]
    fn watermarks_follow_the_highest_usage_until_reset() {
        let (root, mid, leaf) = three_levels([1000, 1000, 1000]);
        leaf.try_charge(50).unwrap();
        assert_eq!(leaf.uncharge(40), Ok(()));
        leaf.try_charge(5).unwrap();
        assert_eq!(leaf.usage(), 15);
        assert_eq!((leaf.watermark(), leaf.local_watermark()), (50, 50));
        assert_eq!((root.watermark(), root.local_watermark()), (50, 50));
        // memory.peak's reset: the local watermark only.
        leaf.reset_local_watermark();
        assert_eq!((leaf.watermark(), leaf.local_watermark()), (50, 15));
        leaf.try_charge(5).unwrap();
        assert_eq!((leaf.watermark(), leaf.local_watermark()), (50, 20));
        // Both, to the current usage.
        leaf.reset_watermark();
        assert_eq!((leaf.watermark(), leaf.local_watermark()), (20, 20));
        assert_eq!(mid.watermark(), 50, "a level's reset leaves the others");
        leaf.try_charge(1).unwrap();
        assert_eq!((leaf.watermark(), leaf.local_watermark()), (21, 21));
        // A refused charge is no new high.
        assert!(leaf.try_charge(2000).is_err());
        assert_eq!((leaf.watermark(), leaf.local_watermark()), (21, 21));
        drop(leaf);
        drop(mid);
    }

    #[test]
    fn protected_usage_reaches_the_parent() {
        let (root, mid, leaf) = three_levels([1000, 1000, 1000]);
        leaf.set_min(30);
        leaf.set_low(60);
        assert_eq!(
            mid.children_min_usage(),
            0,
            "nothing charged, nothing protected"
        );
        leaf.try_charge(20).unwrap();
        assert_eq!(mid.children_min_usage(), 20);
        leaf.try_charge(20).unwrap();
        assert_eq!(mid.children_min_usage(), 30, "capped at memory.min");
        assert_eq!(leaf.uncharge(25), Ok(()));
        assert_eq!(mid.children_min_usage(), 15);
        // Lowering the setting republishes it at once.
        leaf.set_min(10);
        assert_eq!(mid.children_min_usage(), 10);
        leaf.set_min(100);
        assert_eq!(mid.children_min_usage(), 15);
        // A level's own protected usage is published to its parent.
        mid.set_min(5);
        assert_eq!(root.children_min_usage(), 5);
        // Through the effective protection: mid affords min 5 and low 100; leaf claims
        // 15 of each (its usage), so min is cut to mid's 5 and low kept whole.
        mid.set_low(100);
        mid.calculate_protection(&root);
        leaf.calculate_protection(&root);
        assert_eq!((mid.emin(), mid.elow()), (5, 100));
        assert_eq!((leaf.emin(), leaf.elow()), (5, 15));
        leaf.set_low(10);
        leaf.calculate_protection(&root);
        assert_eq!(leaf.elow(), 10);
        drop(leaf);
        drop(mid);
    }

    #[test]
    fn effective_protection_is_shared_by_usage() {
        let root = Box::new(PageCounter::new_root(PAGE_COUNTER_MAX));
        // SAFETY: `root` is boxed and outlives every child below (dropped last).
        let p = Box::new(unsafe { PageCounter::new_child(NonNull::from(&*root), u64::MAX) });
        let child = |max| {
            // SAFETY: as above; the children are dropped before `p`.
            Box::new(unsafe { PageCounter::new_child(NonNull::from(&*p), max) })
        };
        let (a, b, idle) = (child(u64::MAX), child(u64::MAX), child(u64::MAX));
        p.set_min(100);
        p.set_low(50);
        p.try_charge(10).unwrap();
        a.set_min(120);
        b.set_min(40);
        a.set_low(100);
        b.set_low(100);
        idle.set_min(500);
        a.try_charge(120).unwrap();
        b.try_charge(80).unwrap();
        for c in [&p, &a, &b, &idle] {
            c.calculate_protection(&root);
        }
        // p is a child of the root: its settings as they are.
        assert_eq!((p.emin(), p.elow()), (100, 50));
        // The children claim 120 + 40 = 160 of p's 100: in proportion.
        assert_eq!((a.emin(), b.emin()), (75, 25));
        // Low: they claim min(120, 100) + min(80, 100) = 180 of p's 50: 100 * 50 / 180 and
        // 80 * 50 / 180.
        assert_eq!((a.elow(), b.elow()), (27, 22));
        // b grows: its protected usage follows (80 -> 90) and the shares shrink to
        // 100 * 50 / 190 and 90 * 50 / 190.
        b.try_charge(10).unwrap();
        for c in [&a, &b] {
            c.calculate_protection(&root);
        }
        assert_eq!((a.elow(), b.elow()), (26, 23));
        // No usage: untouched (reclaim skips it anyway).
        assert_eq!((idle.emin(), idle.elow()), (0, 0));
        // Seen from p itself, the children's settings apply as they are, and p keeps its
        // old values.
        for c in [&p, &a, &b] {
            c.calculate_protection(&p);
        }
        assert_eq!((a.emin(), b.emin(), a.elow()), (120, 40, 100));
        assert_eq!((p.emin(), p.elow()), (100, 50));
        // A root without a parent keeps its values whoever reclaims.
        root.calculate_protection(&p);
        assert_eq!((root.emin(), root.elow()), (0, 0));
        drop((a, b, idle));
        drop(p);
    }

    #[test]
    fn effective_protection_splits_in_proportion() {
        assert_eq!(effective_protection(50, 100, 60, 40), 50, "siblings fit");
        assert_eq!(effective_protection(50, 100, 60, 60), 50, "exactly fit");
        assert_eq!(effective_protection(50, 30, 60, 120), 15);
        assert_eq!(effective_protection(80, 100, 60, 120), 40);
        // Pages times pages beyond 64 bits.
        let big = PAGE_COUNTER_MAX;
        assert_eq!(effective_protection(big, big, big / 2, big), big / 2);
    }

    #[test]
    fn raising_or_lowering_max_above_usage() {
        let c = PageCounter::new_root(10);
        c.try_charge(8).unwrap();
        assert_eq!(c.set_max(100), Ok(()));
        assert_eq!((c.max(), c.margin()), (100, 92));
        assert_eq!(c.set_max(8), Ok(()));
        assert_eq!((c.max(), c.margin()), (8, 0));
        assert!(c.try_charge(1).is_err());
        assert_eq!(c.failcnt(), 1);
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
