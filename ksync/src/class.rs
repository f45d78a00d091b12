//! Lock classes: what Linux's `lock_class_key` is to lockdep and lock_stat.
//!
//! Every lock belongs to a class, named after the field it protects (`lruvec->lru_lock`,
//! `zone->lock`, ...). The class is a zero-sized type parameter of [`crate::TicketLock`], so
//! the lock word stays four bytes; the class's data ([`ClassData`]: its name, its index in
//! the class registry, its per-CPU statistics) is a `static`, reached through
//! [`LockClass::data`]. Classes register themselves on first use; [`classes`] lists them
//! for reports.
//!
//! [`lock_class!`](crate::lock_class) defines a class. Each crate declares the classes of the
//! locks it owns (`mm::lock_classes`, `memcg::lock_classes`, `lru::lock_classes`): this crate
//! knows none of its users' locks, and a new lock is added next to the code that takes it.
//!
//! Whether a class records its statistics is one byte of its data ([`ClassData::records`]),
//! so that every acquisition asks it with one load and one compare, as Linux's lock_stat
//! asks its one `lock_stat` switch: the byte holds the class's own switch
//! ([`ClassData::set_recording`]) and a copy of the switch for every class
//! ([`crate::stat::set_enabled`]), which that switch writes into every registered class. A
//! class gets its copy when it is first asked (out of line: it registers then); until then,
//! and for a class the full registry cannot list, the answer comes from both switches.
//!
//! Unsafe code here, and why: the class registry stores `&'static ClassData` as raw
//! pointers in atomics, and turns them back into references.
#![allow(unsafe_code)]

use crate::stat::{ClassStats, LockStatSnapshot};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};

/// Most classes that can be registered (lockdep keeps one bit per class).
pub const MAX_CLASSES: usize = 64;

/// A lock class: a name and its static data.
pub trait LockClass: 'static + Send + Sync {
    /// The name reports and lockdep messages use.
    const NAME: &'static str;
    /// The class's static data.
    fn data() -> &'static ClassData;
}

/// The data of one class: name, registry index, per-CPU statistics and whether they are
/// recorded for this class alone.
pub struct ClassData {
    name: &'static str,
    /// Registry index + 1 (0 = not yet registered).
    id: AtomicUsize,
    /// Whether the class records: [`MIRRORED`] once [`ALL`] follows the switch for every
    /// class, [`OWN`] for its own switch. Read on every acquisition ([`ClassData::records`]).
    flags: AtomicU8,
    pub(crate) stats: &'static ClassStats,
}

impl core::fmt::Debug for ClassData {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClassData")
            .field("name", &self.name)
            .field("id", &self.id.load(Ordering::Relaxed))
            .field("recording", &self.recording())
            .finish()
    }
}

static REGISTRY: [AtomicPtr<ClassData>; MAX_CLASSES] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_CLASSES];
static NR_CLASSES: AtomicUsize = AtomicUsize::new(0);

/// [`ClassData::flags`]: [`ALL`] is the switch for every class as this class last saw it,
/// kept so by [`crate::stat::set_enabled`] (the class is registered).
const MIRRORED: u8 = 1;
/// [`ClassData::flags`]: the class's own switch ([`ClassData::set_recording`]).
const OWN: u8 = 2;
/// [`ClassData::flags`]: statistics are on for every class ([`crate::stat::set_enabled`]).
const ALL: u8 = 4;

/// Held while the switch for every class is written into the registered classes
/// ([`set_all`]) and while a class takes its first copy of it ([`ClassData::mirror`]), so
/// that no class misses a change. A plain flag, not a [`crate::TicketLock`]: a lock of a
/// class would ask this very switch whether to record its acquisition.
static SWITCHING: AtomicBool = AtomicBool::new(false);

/// Writes the switch for every class: `store(on)` under [`SWITCHING`], then `on` into every
/// registered class's [`ALL`] bit (waits for a class taking its first copy).
pub(crate) fn set_all(store: impl FnOnce(bool), on: bool) {
    while SWITCHING
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
    store(on);
    for c in classes() {
        if on {
            c.flags.fetch_or(ALL, Ordering::Relaxed);
        } else {
            c.flags.fetch_and(!ALL, Ordering::Relaxed);
        }
    }
    SWITCHING.store(false, Ordering::Release);
}

impl ClassData {
    /// Data for a class called `name` whose per-CPU counters are `stats` (used by
    /// [`crate::lock_class!`], which gives each class a zero-initialised table of its own,
    /// so the table lands in `.bss`).
    #[must_use]
    pub const fn new(name: &'static str, stats: &'static ClassStats) -> Self {
        ClassData {
            name,
            id: AtomicUsize::new(0),
            flags: AtomicU8::new(0),
            stats,
        }
    }

    /// Records this class's statistics whether or not they are on for every class
    /// ([`crate::stat::set_enabled`]), or stops doing so: a benchmark switches on only the
    /// classes its premises read, so that the other locks on its measured path cost no
    /// more than an uninstrumented kernel's (`CONFIG_LOCK_STAT` is all or nothing; this is
    /// the part of it a premise needs). Registers the class, so that [`classes`] lists it
    /// from now on even if it is never taken.
    pub fn set_recording(&'static self, on: bool) {
        let _ = self.id();
        if on {
            self.flags.fetch_or(OWN, Ordering::Relaxed);
        } else {
            self.flags.fetch_and(!OWN, Ordering::Relaxed);
        }
    }

    /// Whether this class records by itself ([`ClassData::set_recording`]).
    #[inline]
    #[must_use]
    pub fn recording(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & OWN != 0
    }

    /// Whether acquisitions of this class are recorded: while statistics are on for every
    /// class ([`crate::stat::set_enabled`]) or for this one ([`ClassData::set_recording`]).
    /// One load and one compare for a class that has its copy of the switch for every class
    /// and does not record; the first question registers the class and takes that copy.
    #[inline(always)]
    #[must_use]
    pub fn records(&'static self) -> bool {
        let f = self.flags.load(Ordering::Relaxed);
        if f == MIRRORED {
            return false;
        }
        if f & MIRRORED != 0 {
            return true;
        }
        self.records_first()
    }

    /// [`Self::records`] for a class without its copy of the switch for every class:
    /// registers it and takes the copy, or, where that cannot be done now (the registry is
    /// full, or the switch is being written: an interrupt on the CPU writing it must not
    /// wait for it), answers from both switches.
    #[cold]
    #[inline(never)]
    fn records_first(&'static self) -> bool {
        if self.id().is_some() {
            self.mirror();
        }
        let f = self.flags.load(Ordering::Relaxed);
        if f & MIRRORED != 0 {
            f & (OWN | ALL) != 0
        } else {
            crate::stat::enabled() || f & OWN != 0
        }
    }

    /// Copies the switch for every class into this registered class, unless it is being
    /// written right now (then a later question copies it).
    fn mirror(&'static self) {
        if SWITCHING
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        if crate::stat::enabled() {
            self.flags.fetch_or(MIRRORED | ALL, Ordering::Relaxed);
        } else {
            self.flags.fetch_and(!ALL, Ordering::Relaxed);
            self.flags.fetch_or(MIRRORED, Ordering::Relaxed);
        }
        SWITCHING.store(false, Ordering::Release);
    }

    /// The class name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The class's registry index, registering it on first use. `None` once
    /// [`MAX_CLASSES`] classes exist (such a class is neither listed nor order-checked,
    /// but its statistics still count).
    pub fn id(&'static self) -> Option<usize> {
        let id = self.id.load(Ordering::Acquire);
        if id != 0 {
            return Some(id - 1);
        }
        self.register()
    }

    #[cold]
    fn register(&'static self) -> Option<usize> {
        let me = core::ptr::from_ref(self).cast_mut();
        loop {
            let id = self.id.load(Ordering::Acquire);
            if id != 0 {
                return Some(id - 1);
            }
            let slot = NR_CLASSES.load(Ordering::Acquire);
            if slot >= MAX_CLASSES {
                return None;
            }
            // Claim the registry slot first, then publish our id; a loser retries.
            if REGISTRY[slot]
                .compare_exchange(
                    core::ptr::null_mut(),
                    me,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_err()
            {
                let _ = NR_CLASSES.compare_exchange(
                    slot,
                    slot + 1,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
                continue;
            }
            let _ =
                NR_CLASSES.compare_exchange(slot, slot + 1, Ordering::AcqRel, Ordering::Acquire);
            match self
                .id
                .compare_exchange(0, slot + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(slot),
                // Registered twice concurrently: the other slot won; ours stays a duplicate
                // entry that `classes` skips.
                Err(won) => return Some(won - 1),
            }
        }
    }

    /// This class's statistics, summed over all CPUs.
    #[must_use]
    pub fn snapshot(&self) -> LockStatSnapshot {
        let mut s = LockStatSnapshot::default();
        for c in self.stats.cpus() {
            s.add(&c.read());
        }
        s
    }

    /// Zeroes this class's statistics (only meaningful while nobody takes its locks).
    pub fn reset(&self) {
        for c in self.stats.cpus() {
            c.reset();
        }
    }
}

/// Every registered class, in registration order.
pub fn classes() -> impl Iterator<Item = &'static ClassData> {
    let n = NR_CLASSES.load(Ordering::Acquire).min(MAX_CLASSES);
    (0..n).filter_map(|i| {
        let p = REGISTRY[i].load(Ordering::Acquire);
        // SAFETY: only `register` stores into the registry, and it stores the address of a
        // `&'static ClassData`.
        let d = unsafe { p.as_ref() }?;
        (d.id.load(Ordering::Acquire) == i + 1).then_some(d)
    })
}

/// The class registered at index `id`.
#[must_use]
pub fn class_by_id(id: usize) -> Option<&'static ClassData> {
    classes().find(|d| d.id.load(Ordering::Acquire) == id + 1)
}

/// Defines a lock class: a unit struct implementing [`LockClass`] with its own static data.
///
/// ```
/// ksync::lock_class!(
///     /// The lock of my widget.
///     pub WidgetLock, "widget->lock"
/// );
/// let lock = ksync::TicketLock::<WidgetLock>::new();
/// # let _ = lock;
/// ```
#[macro_export]
macro_rules! lock_class {
    ($(#[$meta:meta])* $vis:vis $name:ident, $str:expr) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default)]
        $vis struct $name;
        impl $crate::class::LockClass for $name {
            const NAME: &'static str = $str;
            fn data() -> &'static $crate::class::ClassData {
                static STATS: $crate::stat::ClassStats = $crate::stat::ClassStats::new();
                static DATA: $crate::class::ClassData =
                    $crate::class::ClassData::new($str, &STATS);
                &DATA
            }
        }
    };
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    crate::lock_class!(Busy, "test.class.busy");

    #[test]
    fn a_class_asked_while_the_switch_is_written_answers_from_the_switches() {
        // The unit tests of this binary switch statistics on for every class and never off.
        crate::stat::set_enabled(true);
        let data = <Busy as LockClass>::data();
        while SWITCHING
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            core::hint::spin_loop();
        }
        // As an interrupt on the CPU writing the switch would: no wait, no copy taken.
        assert!(data.records(), "on for every class");
        assert_eq!(
            data.flags.load(Ordering::Relaxed),
            0,
            "no copy while it is written"
        );
        SWITCHING.store(false, Ordering::Release);
        assert!(data.records());
        assert_eq!(
            data.flags.load(Ordering::Relaxed),
            MIRRORED | ALL,
            "the copy, taken once the switch is free"
        );
    }
}
