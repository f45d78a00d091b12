//! Lock-order checking: a small lockdep (kernel/locking/lockdep.c, reduced to class order).
//!
//! Every acquisition of a lock of class B while locks of classes A1..An are held records the
//! edges A1 -> B .. An -> B in a global order graph (one bit per class pair). If B -> Ai was
//! recorded before (somewhere, B was held when Ai was taken), the two orders can deadlock:
//! the inversion is reported with both class names. Only direct inversions are found (A->B
//! against B->A), not longer cycles; that covers the pairs this kernel nests.
//!
//! Taking a lock of a class already held (two lruvec locks while reparenting, or nested
//! lru_locks under seed 004's shared variant) is not an inversion by itself and records no
//! edge, as lockdep's `spin_lock_nested` annotations would allow.
//!
//! The check runs in debug builds and with feature `lockdep`; release builds compile it
//! away. With feature `std` (host tests) an inversion panics the thread that found it, so
//! the test fails; in the kernel it is recorded ([`take_inversion`]) and printed, and the
//! in-kernel test framework fails the running test.
//!
//! The held-lock stack is per thread on the host and per CPU in the kernel (indexed by
//! [`crate::this_cpu`]; the kernel takes these locks in thread context and in the
//! page-fault handler only, and the handler releases all it takes before returning).
//!
//! Unsafe code here, and why: lockdep's per-CPU held-lock stacks are `UnsafeCell`s each
//! touched only by its own CPU, the discipline `this_cpu` gives.
#![allow(unsafe_code)]

use crate::class::{ClassData, MAX_CLASSES, class_by_id};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Whether lock-order checking is compiled in.
pub const ENABLED: bool = cfg!(any(debug_assertions, feature = "lockdep"));

/// Deepest nesting tracked per CPU; deeper acquisitions are not order-checked.
pub const MAX_HELD: usize = 16;

/// `ORDER[a]` bit `b`: a lock of class `a` was held when one of class `b` was taken.
static ORDER: [AtomicU64; MAX_CLASSES] = [const { AtomicU64::new(0) }; MAX_CLASSES];

/// The first inversion found: `(held + 1) << 8 | (taken + 1)`, 0 = none.
static INVERSION: AtomicUsize = AtomicUsize::new(0);

/// Records an acquisition of class `data` by the running CPU (thread on the host).
#[inline]
pub(crate) fn acquire(data: &'static ClassData) {
    if !ENABLED {
        return;
    }
    let Some(id) = data.id() else { return };
    let _ = held::with(|held| {
        for &h in held.iter() {
            if h == id {
                continue;
            }
            if ORDER[id].load(Ordering::Relaxed) & (1 << h) != 0 {
                report(h, id);
            }
            if ORDER[h].load(Ordering::Relaxed) & (1 << id) == 0 {
                ORDER[h].fetch_or(1 << id, Ordering::Relaxed);
            }
        }
        held.push(id);
    });
}

/// Records a release of class `data` (the most recent acquisition of that class).
#[inline]
pub(crate) fn release(data: &'static ClassData) {
    if !ENABLED {
        return;
    }
    let Some(id) = data.id() else { return };
    let _ = held::with(|held| held.remove_last(id));
}

#[cold]
fn report(held: usize, taken: usize) {
    let code = (held + 1) << 8 | (taken + 1);
    let _ = INVERSION.compare_exchange(0, code, Ordering::AcqRel, Ordering::Acquire);
    #[cfg(any(test, feature = "std"))]
    {
        let (a, b) = (name(held), name(taken));
        panic!(
            "lockdep: lock order inversion: `{b}` taken while holding `{a}`, but `{a}` was \
             taken while holding `{b}` before"
        );
    }
}

fn name(id: usize) -> &'static str {
    class_by_id(id).map_or("?", ClassData::name)
}

/// The first inversion found since the last call, as `(held class, taken class)`, and
/// forgets it.
pub fn take_inversion() -> Option<(&'static str, &'static str)> {
    let code = INVERSION.swap(0, Ordering::AcqRel);
    (code != 0).then(|| (name((code >> 8) - 1), name((code & 0xff) - 1)))
}

/// Whether `a` has been seen held while `b` was taken.
#[must_use]
pub fn seen_before(a: &'static ClassData, b: &'static ClassData) -> bool {
    match (a.id(), b.id()) {
        (Some(a), Some(b)) => ORDER[a].load(Ordering::Relaxed) & (1 << b) != 0,
        _ => false,
    }
}

/// Classes the running CPU holds right now, outermost first (for assertions).
pub fn held_classes() -> alloc::vec::Vec<&'static str> {
    let mut v = alloc::vec::Vec::new();
    let _ = held::with(|h| v.extend(h.iter().map(|&id| name(id))));
    v
}

/// A small stack of held class ids.
pub(crate) struct Held {
    ids: [u8; MAX_HELD],
    n: usize,
    /// Acquisitions beyond `MAX_HELD` not tracked, so their releases are ignored too.
    overflow: usize,
}

impl Held {
    const fn new() -> Self {
        Held {
            ids: [0; MAX_HELD],
            n: 0,
            overflow: 0,
        }
    }

    fn iter(&self) -> impl Iterator<Item = &usize> + '_ {
        // ids are < MAX_CLASSES (64), stored as u8; map to usize on the fly.
        self.ids[..self.n].iter().map(|&i| &IDS[i as usize])
    }

    fn push(&mut self, id: usize) {
        if self.n == MAX_HELD {
            self.overflow += 1;
        } else {
            self.ids[self.n] = id as u8;
            self.n += 1;
        }
    }

    fn remove_last(&mut self, id: usize) {
        if let Some(pos) = self.ids[..self.n].iter().rposition(|&i| i as usize == id) {
            self.ids.copy_within(pos + 1..self.n, pos);
            self.n -= 1;
        } else if self.overflow > 0 {
            self.overflow -= 1;
        }
    }
}

/// `IDS[i] == i`: lets [`Held::iter`] hand out `&usize` without allocating.
static IDS: [usize; MAX_CLASSES] = {
    let mut a = [0; MAX_CLASSES];
    let mut i = 0;
    while i < MAX_CLASSES {
        a[i] = i;
        i += 1;
    }
    a
};

#[cfg(any(test, feature = "std"))]
mod held {
    use super::Held;
    use core::cell::RefCell;

    std::thread_local! {
        static HELD: RefCell<Held> = const { RefCell::new(Held::new()) };
    }

    pub(super) fn with<R>(f: impl FnOnce(&mut Held) -> R) -> Option<R> {
        Some(HELD.with(|h| f(&mut h.borrow_mut())))
    }
}

#[cfg(not(any(test, feature = "std")))]
mod held {
    use super::Held;
    use crate::cpu::MAX_CPUS;
    use crate::percpu::CachePadded;
    use core::cell::UnsafeCell;

    struct Slot(UnsafeCell<Held>);
    // SAFETY: slot `cpu` is touched only by CPU `cpu` (indexed by `this_cpu`, which is the
    // platform's real CPU id once its hook is installed; see `with`), in thread context or
    // in the page-fault handler, which never interrupts a lock operation of its own CPU (the
    // lock functions do not fault), so accesses to one slot never overlap.
    unsafe impl Sync for Slot {}

    static HELD: [CachePadded<Slot>; MAX_CPUS] =
        [const { CachePadded(Slot(UnsafeCell::new(Held::new()))) }; MAX_CPUS];

    /// Runs `f` on this CPU's stack; `None` (nothing tracked) until the platform has
    /// installed its CPU-id hook, since before that every caller would be "CPU 0".
    pub(super) fn with<R>(f: impl FnOnce(&mut Held) -> R) -> Option<R> {
        if !crate::cpu::hook_installed() {
            return None;
        }
        let slot = &HELD[crate::this_cpu()].0;
        // SAFETY: see `Slot`'s Sync impl: with the platform's hook installed, `this_cpu` is
        // the running CPU, which is the only one to use its slot, one access at a time.
        Some(f(unsafe { &mut *slot.0.get() }))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::{LockClass, TicketLock};

    crate::lock_class!(OuterA, "test-outer-a");
    crate::lock_class!(InnerB, "test-inner-b");
    crate::lock_class!(SoloC, "test-solo-c");

    #[test]
    fn inversion_is_reported_with_both_names() {
        if !ENABLED {
            return;
        }
        let a = TicketLock::<OuterA>::new();
        let b = TicketLock::<InnerB>::new();
        a.acquire();
        b.acquire();
        assert_eq!(held_classes(), ["test-outer-a", "test-inner-b"]);
        // SAFETY: both held by this thread.
        unsafe {
            b.release();
            a.release();
        }
        assert!(seen_before(OuterA::data(), InnerB::data()));
        assert!(held_classes().is_empty());
        let err = std::thread::spawn(move || {
            let a = TicketLock::<OuterA>::new();
            let b = TicketLock::<InnerB>::new();
            b.acquire();
            a.acquire();
        })
        .join()
        .unwrap_err();
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("test-outer-a") && msg.contains("test-inner-b"),
            "{msg}"
        );
        assert_eq!(take_inversion(), Some(("test-inner-b", "test-outer-a")));
    }

    #[test]
    fn same_class_nesting_is_not_an_inversion() {
        let x = TicketLock::<SoloC>::new();
        let y = TicketLock::<SoloC>::new();
        x.acquire();
        y.acquire();
        // SAFETY: held.
        unsafe {
            x.release();
            y.release();
        }
        assert!(!seen_before(SoloC::data(), SoloC::data()));
    }
}
