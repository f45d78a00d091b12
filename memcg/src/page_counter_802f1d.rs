//! `struct page_counter` before and after Linux commit 802f1d522d5f ("mm: page_counter:
//! re-layout structure to reduce false sharing", Feng Tang, v5.12; posted as
//! <1611040814-33449-1-git-send-email-feng.tang@intel.com>), as two types with the same
//! fields in the two orders, for the `page-counter-802f1d` benchmark scenario.
//!
//! In v5.11 `parent` sat at offset 40, on the first 64-byte line with `usage` (offset 0):
//! every charge and uncharge writes `usage` of every level of the hierarchy, and every walk
//! up the hierarchy (`parent_mem_cgroup()`, which reads `memory.parent`, on every memcg
//! stat flush; the charge walk itself) reads `parent`, so a reader on one CPU missed on the
//! line that chargers on the other CPUs kept writing. The commit moved `parent` to the end
//! (offset 104, the second line, still in `usage`'s 128-byte pair: the commit added no
//! alignment); `max` stayed on `usage`'s line. [`C_OFFSETS`] lists every field's offset
//! in both C structs, and a test holds both layouts to it. Its figure: will-it-scale
//! `page_fault2` +3.0% to +9.9% per process, `malloc1` -0.1% to +8.9%, on 96 and 144
//! hardware threads (see the `page-counter-802f1d` catalog entry).
//!
//! These are layout models, not the counter the memcg tree charges: [`crate::PageCounter`]
//! is today's three-group layout, newer than both. The walks ([`try_charge`],
//! [`uncharge`]) are v5.11's `page_counter_try_charge()` / `page_counter_uncharge()` over
//! either layout: `atomic_long_add_return()` on `usage`, then `max` read, protected usage
//! propagated (reading `parent`, `min`, `low`, `min_usage`, `low_usage`), the watermark
//! raised, and on to `parent`. Both types are 64-byte aligned (a counter starts a line, as
//! the commit's perf c2c data had `usage` and `parent` on one line); the compile-time
//! assertions below pin every offset to the C struct's on x86_64 and each layout's line
//! placement of `usage`, `max` and `parent`, and [`report`] prints both pahole-style.
//!
//! Unsafe code here, and why: v5.11's `page_counter` reaches its parent through a raw
//! pointer (`parent_mem_cgroup()` is a load), which the caller promises stays valid
//! (`unsafe fn new`).
#![allow(unsafe_code)]

use crate::lock_classes::PageCounterUsageWord;
use core::fmt::{self, Write};
use core::mem::{align_of, offset_of, size_of};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};
use lru::cacheline::{CACHELINE, line_of};
use lru::layout::{FieldDesc, StructLayout};

/// What both layouts provide: their fields by role, so one walk serves both.
pub trait PageCounterLayout: Sized + Sync + Send + core::fmt::Debug {
    /// The name in the layout report.
    const NAME: &'static str;
    /// The counter's fields, in offset order, for the layout report.
    fn fields() -> [FieldDesc; 14];
    /// A counter with `max` (and `high` unset: `PAGE_COUNTER_MAX`) whose charges also go to `parent` and its ancestors.
    ///
    /// # Safety
    ///
    /// `parent`, if any, must point to a live counter of the same layout that stays at the
    /// same address and outlives the returned one.
    unsafe fn new(parent: Option<NonNull<Self>>, max: u64) -> Self;
    /// `usage`: written by every charge and uncharge at every level.
    fn usage(&self) -> &AtomicU64;
    /// `max`.
    fn max(&self) -> &AtomicU64;
    /// `high` (`memory.high`).
    fn high(&self) -> &AtomicU64;
    /// `min`.
    fn min(&self) -> &AtomicU64;
    /// `low`.
    fn low(&self) -> &AtomicU64;
    /// `min_usage`.
    fn min_usage(&self) -> &AtomicU64;
    /// `low_usage`.
    fn low_usage(&self) -> &AtomicU64;
    /// `children_min_usage`.
    fn children_min_usage(&self) -> &AtomicU64;
    /// `children_low_usage`.
    fn children_low_usage(&self) -> &AtomicU64;
    /// `watermark`.
    fn watermark(&self) -> &AtomicU64;
    /// `failcnt`.
    fn failcnt(&self) -> &AtomicU64;
    /// The raw `parent` field (one load of it).
    fn parent_ptr(&self) -> Option<NonNull<Self>>;

    /// The parent counter: one load of `parent`.
    #[inline]
    fn parent(&self) -> Option<&Self> {
        // SAFETY: `new`'s contract keeps the parent alive and in place for as long as `self`
        // exists, and the reference is bounded by `&self`.
        self.parent_ptr().map(|p| unsafe { p.as_ref() })
    }
}

macro_rules! page_counter_layout {
    ($(#[$doc:meta])* $name:ident, $report:literal, [$($field:ident),+ $(,)?]) => {
        $(#[$doc])*
        #[repr(C, align(64))]
        #[derive(Debug)]
        pub struct $name {
            $(
                #[doc = concat!("`", stringify!($field), "`.")]
                $field: page_counter_layout!(@ty $field),
            )+
        }

        // SAFETY: every field but `parent` is atomic; `parent` is only dereferenced for
        // shared access, and `new`'s contract keeps the parent alive as long as this one.
        unsafe impl Send for $name {}
        // SAFETY: as above; `&Self` only exposes atomic operations and the parent.
        unsafe impl Sync for $name {}

        impl PageCounterLayout for $name {
            const NAME: &'static str = $report;

            fn fields() -> [FieldDesc; 14] {
                type T = $name;
                [$(lru::layout_field!(
                    T,
                    page_counter_layout!(@group $field),
                    stringify!($field) => $field
                )),+]
            }

            unsafe fn new(parent: Option<NonNull<Self>>, max: u64) -> Self {
                Self {
                    $($field: page_counter_layout!(@init $field, parent, max),)+
                }
            }

            #[inline]
            fn usage(&self) -> &AtomicU64 { &self.usage }
            #[inline]
            fn max(&self) -> &AtomicU64 { &self.max }
            #[inline]
            fn high(&self) -> &AtomicU64 { &self.high }
            #[inline]
            fn min(&self) -> &AtomicU64 { &self.min }
            #[inline]
            fn low(&self) -> &AtomicU64 { &self.low }
            #[inline]
            fn min_usage(&self) -> &AtomicU64 { &self.min_usage }
            #[inline]
            fn low_usage(&self) -> &AtomicU64 { &self.low_usage }
            #[inline]
            fn children_min_usage(&self) -> &AtomicU64 { &self.children_min_usage }
            #[inline]
            fn children_low_usage(&self) -> &AtomicU64 { &self.children_low_usage }
            #[inline]
            fn watermark(&self) -> &AtomicU64 { &self.watermark }
            #[inline]
            fn failcnt(&self) -> &AtomicU64 { &self.failcnt }
            #[inline]
            fn parent_ptr(&self) -> Option<NonNull<Self>> {
                self.parent
            }
        }
    };
    (@ty parent) => { Option<NonNull<Self>> };
    (@ty $f:ident) => { AtomicU64 };
    (@init parent, $parent:ident, $max:ident) => { $parent };
    (@init max, $parent:ident, $max:ident) => { AtomicU64::new($max) };
    (@init high, $parent:ident, $max:ident) => { AtomicU64::new(crate::PAGE_COUNTER_MAX) };
    (@init $f:ident, $parent:ident, $max:ident) => { AtomicU64::new(0) };
    (@group usage) => { "usage" };
    (@group min) => { "read_mostly" };
    (@group low) => { "read_mostly" };
    (@group high) => { "read_mostly" };
    (@group max) => { "read_mostly" };
    (@group parent) => { "read_mostly" };
    (@group emin) => { "protection" };
    (@group min_usage) => { "protection" };
    (@group children_min_usage) => { "protection" };
    (@group elow) => { "protection" };
    (@group low_usage) => { "protection" };
    (@group children_low_usage) => { "protection" };
    (@group watermark) => { "legacy" };
    (@group failcnt) => { "legacy" };
}

page_counter_layout!(
    /// v5.11's `struct page_counter` (before 802f1d522d5f): `parent` at 40, on `usage`'s
    /// line.
    PageCounterV511,
    "page_counter (v5.11, parent on usage's line)",
    [
        usage,
        min,
        low,
        high,
        max,
        parent,
        emin,
        min_usage,
        children_min_usage,
        elow,
        low_usage,
        children_low_usage,
        watermark,
        failcnt,
    ]
);

page_counter_layout!(
    /// `struct page_counter` after 802f1d522d5f (v5.12): `parent` moved to the end, at 104,
    /// on the second line.
    PageCounter802f1d,
    "page_counter (802f1d522d5f, parent at the end)",
    [
        usage,
        min,
        low,
        high,
        max,
        emin,
        min_usage,
        children_min_usage,
        elow,
        low_usage,
        children_low_usage,
        watermark,
        failcnt,
        parent,
    ]
);

// The C structs' offsets on x86_64 (112 bytes; 128 with the line alignment), and the one
// thing the commit changed: `parent` on `usage`'s line before, on the next line after, with
// `max` on `usage`'s line in both.
const _: () = {
    type A = PageCounterV511;
    type B = PageCounter802f1d;
    assert!(size_of::<A>() == 128 && align_of::<A>() == CACHELINE);
    assert!(size_of::<B>() == 128 && align_of::<B>() == CACHELINE);
    assert!(offset_of!(A, usage) == 0 && offset_of!(B, usage) == 0);
    assert!(offset_of!(A, max) == 32 && offset_of!(B, max) == 32);
    assert!(offset_of!(A, parent) == 40 && offset_of!(B, parent) == 104);
    assert!(offset_of!(A, failcnt) == 104 && offset_of!(B, failcnt) == 96);
    assert!(offset_of!(A, min_usage) == 56 && offset_of!(B, min_usage) == 48);
    // Before: `usage`, `max` and `parent` on line 0.
    assert!(offset_of!(A, parent) / CACHELINE == offset_of!(A, usage) / CACHELINE);
    assert!(offset_of!(A, max) / CACHELINE == offset_of!(A, usage) / CACHELINE);
    // After: `parent` on its own line, `max` still with `usage`.
    assert!(offset_of!(B, parent) / CACHELINE != offset_of!(B, usage) / CACHELINE);
    assert!(offset_of!(B, max) / CACHELINE == offset_of!(B, usage) / CACHELINE);
    // The commit moved `parent` off `usage`'s 64-byte line, not off its 128-byte pair: at
    // 104 of a counter that starts a pair it is still in `usage`'s pair (the commit added
    // no alignment; only later commits padded `usage` onto a line of its own).
    // So B removes the line sharing the commit's perf c2c data showed, and an
    // adjacent-line prefetcher would still fetch `parent`'s line with `usage`'s.
    assert!(offset_of!(B, parent) / 128 == offset_of!(B, usage) / 128);
};

/// Every field's offset in the C structs on x86_64: v5.11's (A) and after 802f1d522d5f
/// (B, include/linux/page_counter.h as the commit left it), in declaration order.
pub const C_OFFSETS: [(&str, usize, usize); 14] = [
    ("usage", 0, 0),
    ("min", 8, 8),
    ("low", 16, 16),
    ("high", 24, 24),
    ("max", 32, 32),
    ("parent", 40, 104),
    ("emin", 48, 40),
    ("min_usage", 56, 48),
    ("children_min_usage", 64, 56),
    ("elow", 72, 64),
    ("low_usage", 80, 72),
    ("children_low_usage", 88, 80),
    ("watermark", 96, 88),
    ("failcnt", 104, 96),
];

/// Whether `counter`'s `usage` and `parent` are on one 64-byte line at the address it
/// has (what the scenario's premise measures in the build it runs).
#[must_use]
pub fn usage_shares_line_with_parent<L: PageCounterLayout>(counter: &L) -> bool {
    let usage = core::ptr::from_ref(counter.usage()) as usize;
    let parent_offset = L::fields()
        .iter()
        .find(|f| f.name == "parent")
        .map_or(0, |f| f.offset);
    let parent = core::ptr::from_ref(counter) as usize + parent_offset;
    usage / CACHELINE == parent / CACHELINE
}

/// `propagate_protected_usage()`: with a parent and a `min` or `low` (or protected usage
/// left from one), the protected usage moves to the parent's `children_*_usage`.
#[inline]
fn propagate_protected_usage<L: PageCounterLayout>(c: &L, usage: u64, walk: &mut Walk) {
    let Some(parent) = walk.up(c) else {
        return;
    };
    let min = c.min().load(Ordering::Relaxed);
    if min != 0 || c.min_usage().load(Ordering::Relaxed) != 0 {
        let protected = usage.min(min);
        let old = c.min_usage().swap(protected, Ordering::Relaxed);
        let delta = protected.wrapping_sub(old);
        if delta != 0 {
            parent
                .children_min_usage()
                .fetch_add(delta, Ordering::Relaxed);
        }
    }
    let low = c.low().load(Ordering::Relaxed);
    if low != 0 || c.low_usage().load(Ordering::Relaxed) != 0 {
        let protected = usage.min(low);
        let old = c.low_usage().swap(protected, Ordering::Relaxed);
        let delta = protected.wrapping_sub(old);
        if delta != 0 {
            parent
                .children_low_usage()
                .fetch_add(delta, Ordering::Relaxed);
        }
    }
}

/// What walks did, for the scenario's counters: every `usage` write, every load of
/// `parent`, and the `usage` writes of one watched counter (the shared parent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Walk {
    /// Levels whose `usage` the walks wrote (a refused charge's unwinding included).
    pub usage_writes: u64,
    /// Loads of `parent` (the walk's step up and `propagate_protected_usage()`'s).
    pub parent_reads: u64,
    /// The counter whose writes are also counted in `watched_writes` (its address; 0:
    /// none).
    pub watched: usize,
    /// `usage` writes of the watched counter.
    pub watched_writes: u64,
}

impl Walk {
    /// A tally that also counts the `usage` writes of `watched`.
    #[must_use]
    pub fn watching<L>(watched: &L) -> Walk {
        Walk {
            watched: core::ptr::from_ref(watched) as usize,
            ..Walk::default()
        }
    }

    /// Counts a write of `c`'s `usage` that found `old` and left `new`.
    #[inline]
    fn wrote<L: PageCounterLayout>(&mut self, c: &L, old: u64, new: u64) {
        ksync::handoff::note_write::<PageCounterUsageWord>(
            core::ptr::from_ref(c.usage()) as usize,
            old,
            new,
        );
        self.usage_writes += 1;
        if core::ptr::from_ref(c) as usize == self.watched {
            self.watched_writes += 1;
        }
    }

    #[inline]
    fn up<'c, L: PageCounterLayout>(&mut self, c: &'c L) -> Option<&'c L> {
        self.parent_reads += 1;
        c.parent()
    }
}

/// `page_counter_try_charge()` of v5.11: charges `nr` pages to `counter` and every ancestor;
/// if a level would go above its `max`, the levels below it are uncharged again, its
/// `failcnt` is bumped and it is returned.
pub fn try_charge<'c, L: PageCounterLayout>(
    counter: &'c L,
    nr: u64,
    walk: &mut Walk,
) -> Result<(), &'c L> {
    let mut level = Some(counter);
    while let Some(c) = level {
        let new = c.usage().fetch_add(nr, Ordering::Relaxed) + nr;
        walk.wrote(c, new - nr, new);
        if new > c.max().load(Ordering::Relaxed) {
            let old = c.usage().fetch_sub(nr, Ordering::Relaxed);
            walk.wrote(c, old, old.wrapping_sub(nr));
            propagate_protected_usage(c, new - nr, walk);
            c.failcnt().fetch_add(1, Ordering::Relaxed);
            let mut undo = Some(counter);
            while let Some(u) = undo.filter(|u| !core::ptr::eq(*u, c)) {
                uncharge_one(u, nr, walk);
                undo = walk.up(u);
            }
            return Err(c);
        }
        propagate_protected_usage(c, new, walk);
        if new > c.watermark().load(Ordering::Relaxed) {
            c.watermark().store(new, Ordering::Relaxed);
        }
        level = walk.up(c);
    }
    Ok(())
}

/// `page_counter_cancel()`: one level's `usage` down by `nr` (clamped at zero, as Linux
/// warns and resets).
#[inline]
fn uncharge_one<L: PageCounterLayout>(c: &L, nr: u64, walk: &mut Walk) {
    let old = c.usage().fetch_sub(nr, Ordering::Relaxed);
    walk.wrote(c, old, old.wrapping_sub(nr));
    let new = if old < nr {
        c.usage().store(0, Ordering::Relaxed);
        0
    } else {
        old - nr
    };
    propagate_protected_usage(c, new, walk);
}

/// `page_counter_uncharge()`: `nr` pages off `counter` and every ancestor.
pub fn uncharge<L: PageCounterLayout>(counter: &L, nr: u64, walk: &mut Walk) {
    let mut level = Some(counter);
    while let Some(c) = level {
        uncharge_one(c, nr, walk);
        level = walk.up(c);
    }
}

fn print_one<L: PageCounterLayout>(w: &mut dyn Write) -> fmt::Result {
    let mut fields = L::fields();
    fields.sort_by_key(|f| f.offset);
    StructLayout {
        name: L::NAME,
        size: size_of::<L>(),
        align: align_of::<L>(),
        fields: &fields,
    }
    .print(w)?;
    let line = |name: &str| {
        fields
            .iter()
            .find(|f| f.name == name)
            .map_or(0, |f| line_of(f.offset))
    };
    writeln!(
        w,
        "    usage on line {}, max on line {}, parent on line {}: parent {} usage's line",
        line("usage"),
        line("max"),
        line("parent"),
        if line("parent") == line("usage") {
            "shares"
        } else {
            "is off"
        }
    )
}

/// Prints both layouts pahole-style, each with the lines of `usage`, `max` and `parent`.
pub fn report(w: &mut dyn Write) -> fmt::Result {
    print_one::<PageCounterV511>(w)?;
    print_one::<PageCounter802f1d>(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::boxed::Box;
    use alloc::string::String;

    /// Both layouts, field by field, at the C structs' offsets (B as the upstream commit
    /// left `struct page_counter`).
    #[test]
    fn every_field_is_where_the_c_struct_has_it() {
        let (a, b) = (PageCounterV511::fields(), PageCounter802f1d::fields());
        for (name, in_a, in_b) in C_OFFSETS {
            let at =
                |fields: &[FieldDesc]| fields.iter().find(|f| f.name == name).map(|f| f.offset);
            assert_eq!(at(&a), Some(in_a), "v5.11 {name}");
            assert_eq!(at(&b), Some(in_b), "802f1d {name}");
        }
        assert_eq!(a.len(), C_OFFSETS.len());
        // The commit's one change: only `parent` and the fields after it in v5.11 moved.
        let moved: alloc::vec::Vec<&str> = C_OFFSETS
            .iter()
            .filter(|(_, x, y)| x != y)
            .map(|(n, ..)| *n)
            .collect();
        assert_eq!(
            moved,
            [
                "parent",
                "emin",
                "min_usage",
                "children_min_usage",
                "elow",
                "low_usage",
                "children_low_usage",
                "watermark",
                "failcnt"
            ]
        );
    }

    fn chain<L: PageCounterLayout>(max: u64) -> (Box<L>, Box<L>) {
        // SAFETY: no parent.
        let root = Box::new(unsafe { L::new(None, u64::MAX / 2) });
        // SAFETY: `root` is boxed (a stable address) and outlives `child` in every test.
        let child = Box::new(unsafe { L::new(Some(NonNull::from(&*root)), max) });
        (root, child)
    }

    fn walks<L: PageCounterLayout>() {
        let (root, child) = chain::<L>(10);
        let mut w = Walk::watching(&*root);
        try_charge(&*child, 4, &mut w).unwrap();
        assert_eq!((w.usage_writes, w.watched_writes), (2, 1));
        // Up from the child and the root, and propagate_protected_usage() at both.
        assert_eq!(w.parent_reads, 4);
        assert_eq!(
            (
                child.usage().load(Ordering::Relaxed),
                root.usage().load(Ordering::Relaxed)
            ),
            (4, 4)
        );
        // Above the child's max: refused at the child, nothing left charged anywhere.
        let fail = try_charge(&*child, 7, &mut w).unwrap_err();
        assert!(core::ptr::eq(fail, &*child));
        assert_eq!(child.failcnt().load(Ordering::Relaxed), 1);
        assert_eq!(root.usage().load(Ordering::Relaxed), 4);
        assert_eq!(child.watermark().load(Ordering::Relaxed), 4);
        uncharge(&*child, 4, &mut w);
        assert_eq!(
            (
                child.usage().load(Ordering::Relaxed),
                root.usage().load(Ordering::Relaxed)
            ),
            (0, 0)
        );
        // A refusal at the root unwinds the child.
        root.max().store(2, Ordering::Relaxed);
        let fail = try_charge(&*child, 3, &mut w).unwrap_err();
        assert!(core::ptr::eq(fail, &*root));
        assert_eq!(child.usage().load(Ordering::Relaxed), 0);
        // Protected usage moves to the parent.
        root.max().store(100, Ordering::Relaxed);
        child.min().store(2, Ordering::Relaxed);
        try_charge(&*child, 5, &mut w).unwrap();
        assert_eq!(root.children_min_usage().load(Ordering::Relaxed), 2);
        uncharge(&*child, 5, &mut w);
        assert_eq!(root.children_min_usage().load(Ordering::Relaxed), 0);
    }

    #[test]
    fn both_layouts_walk_like_page_counter_try_charge() {
        walks::<PageCounterV511>();
        walks::<PageCounter802f1d>();
    }

    #[test]
    fn the_line_placement_follows_the_layout_at_run_time() {
        let (_r, a) = chain::<PageCounterV511>(10);
        let (_s, b) = chain::<PageCounter802f1d>(10);
        assert!(usage_shares_line_with_parent(&*a));
        assert!(!usage_shares_line_with_parent(&*b));
    }

    #[test]
    fn the_report_names_the_line_of_parent_in_both_layouts() {
        let mut s = String::new();
        report(&mut s).unwrap();
        assert!(
            s.contains("struct page_counter (v5.11, parent on usage's line) {"),
            "{s}"
        );
        assert!(s.contains("usage on line 0, max on line 0, parent on line 0: parent shares"));
        assert!(s.contains("usage on line 0, max on line 0, parent on line 1: parent is off"));
    }
}
