//! Handoffs: a shared word written by another CPU between two writes of this one.
//!
//! Every seed is about a cache line that moves between CPUs. Under an emulator the move
//! costs almost nothing, so a timing cannot show whether it happened; but whether it
//! *had to* happen is a fact of the program's order of writes, and a CPU can see it
//! without touching any shared line of its own: when it writes a shared word with a
//! read-modify-write (a ticket lock's `lock xadd`, a page counter's `fetch_add`, a
//! refcount's `cmpxchg`) the old value it gets back tells whether anyone wrote the word
//! since this CPU last did. If the old value is not what this CPU left there, another CPU
//! wrote the word in between, so the word's line went to that CPU and came back: at least
//! two transfers of the line, the event `perf c2c` reports as a HITM. A handoff needs two
//! CPUs; at one CPU there is none, whatever the workload.
//!
//! Each CPU remembers, per class, what it left in the last [`WAYS`] words it wrote (their
//! addresses and values) in its own slot of the class's statistics ([`crate::stat`]), with
//! relaxed loads and stores only its CPU makes. A write to a word the CPU does not
//! remember (its first in the run, or one evicted by [`WAYS`] others) cannot be judged and
//! counts as `untracked`, never as a handoff: the count is a lower bound, and
//! `untracked` says how much it could miss. Recording is on with the class's lock
//! statistics ([`crate::stat::recording`]).
//!
//! A ticket lock notes its `next` half at each acquisition ([`crate::TicketLock`]): this CPU
//! left `ticket + 1` there, and finding anything else means another CPU took a ticket in
//! between, i.e. the lock (and the line it sits on) was held elsewhere. A shared word that
//! is not a lock gets a class of its own ([`crate::word_class!`]) and notes its writes with
//! [`note_write`].

use crate::class::LockClass;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Words each CPU remembers per class.
pub const WAYS: usize = 4;

/// One CPU's memory of the words it wrote, and its counts (in its class slot).
#[derive(Debug)]
pub(crate) struct HandoffTable {
    addr: [AtomicUsize; WAYS],
    left: [AtomicU64; WAYS],
    /// The way the next unknown word replaces.
    victim: AtomicUsize,
    handoffs: AtomicU64,
    untracked: AtomicU64,
}

/// What one write found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// The word held what this CPU left: nobody wrote it in between.
    Same,
    /// Another CPU wrote the word since this CPU last did.
    Handoff,
    /// This CPU does not remember the word (first write, or evicted).
    Untracked,
}

impl HandoffTable {
    pub(crate) const fn new() -> Self {
        HandoffTable {
            addr: [const { AtomicUsize::new(0) }; WAYS],
            left: [const { AtomicU64::new(0) }; WAYS],
            victim: AtomicUsize::new(0),
            handoffs: AtomicU64::new(0),
            untracked: AtomicU64::new(0),
        }
    }

    /// Records a write to the word at `addr` that found `old` and left `new`. Only the
    /// CPU owning this table calls it.
    #[inline]
    pub(crate) fn note(&self, addr: usize, old: u64, new: u64) -> Seen {
        for way in 0..WAYS {
            if self.addr[way].load(Relaxed) == addr {
                let seen = if self.left[way].load(Relaxed) == old {
                    Seen::Same
                } else {
                    crate::stat::bump(&self.handoffs, 1);
                    Seen::Handoff
                };
                self.left[way].store(new, Relaxed);
                return seen;
            }
        }
        let way = self.victim.load(Relaxed) % WAYS;
        self.victim.store(way + 1, Relaxed);
        self.addr[way].store(addr, Relaxed);
        self.left[way].store(new, Relaxed);
        crate::stat::bump(&self.untracked, 1);
        Seen::Untracked
    }

    /// (handoffs, untracked writes).
    pub(crate) fn read(&self) -> (u64, u64) {
        (self.handoffs.load(Relaxed), self.untracked.load(Relaxed))
    }

    /// Forgets every word and zeroes the counts (between runs: the next write to each word
    /// is untracked, so a run never judges a write against a value left in another run).
    pub(crate) fn reset(&self) {
        for way in 0..WAYS {
            self.addr[way].store(0, Relaxed);
            self.left[way].store(0, Relaxed);
        }
        self.victim.store(0, Relaxed);
        self.handoffs.store(0, Relaxed);
        self.untracked.store(0, Relaxed);
    }
}

/// Records, while class `C` records ([`crate::stat::recording`]), that the running CPU
/// wrote the shared word at `addr` of the class with a read-modify-write that returned
/// `old` and stored `new`: counted as one write of the class (its `acquisitions`) and as a
/// handoff when another CPU wrote the word since this CPU's last write. Returns what the
/// write found (`None` while the class does not record).
#[inline]
pub fn note_write<C: LockClass>(addr: usize, old: u64, new: u64) -> Option<Seen> {
    if !crate::stat::recording(C::data()) {
        return None;
    }
    Some(crate::stat::record_write(C::data(), addr, old, new))
}

/// Records, while class `C` records, that the running CPU's compare-and-swap on a shared
/// word of class `C` failed because another CPU wrote the word after this one read it, and
/// is retried: counted as a contended acquisition of the class.
#[inline]
pub fn note_retry<C: LockClass>() {
    if crate::stat::recording(C::data()) {
        crate::stat::record_retry(C::data());
    }
}

/// Defines the class of a shared word that is not a lock (a page counter's `usage`, a
/// VMA's `vm_refcnt`): a [`crate::lock_class!`] whose statistics count the word's writes
/// ([`note_write`]) as acquisitions, and their handoffs. No lock of the class exists.
#[macro_export]
macro_rules! word_class {
    ($(#[$meta:meta])* $vis:vis $name:ident, $str:expr) => {
        $crate::lock_class!($(#[$meta])* $vis $name, $str);
    };
}

#[cfg(all(test, not(loom)))]
#[allow(unsafe_code)] // Releases the ticket lock a test took (`TicketLock::release`).
mod tests {
    use super::*;

    #[test]
    fn a_write_by_another_cpu_in_between_is_a_handoff() {
        let t = HandoffTable::new();
        assert_eq!(t.note(0x1000, 0, 1), Seen::Untracked);
        assert_eq!(t.note(0x1000, 1, 2), Seen::Same);
        // Someone else moved it from 2 to 3.
        assert_eq!(t.note(0x1000, 3, 4), Seen::Handoff);
        assert_eq!(t.note(0x1000, 4, 5), Seen::Same);
        assert_eq!(t.read(), (1, 1));
    }

    crate::lock_class!(HandoffTestLock, "test.handoff_lock");
    crate::word_class!(HandoffTestWord, "test.handoff_word");

    /// Runs `f` on a host thread that stands in for CPU `cpu`, to the end.
    fn on_cpu(cpu: usize, f: impl FnOnce() + Send) {
        std::thread::scope(|s| {
            s.spawn(|| {
                crate::cpu::set_this_thread_cpu(cpu);
                f();
            });
        });
    }

    #[test]
    fn a_lock_taken_on_another_cpu_in_between_is_handed_off() {
        crate::stat::set_enabled(true);
        let data = <HandoffTestLock as LockClass>::data();
        let lock = crate::TicketLock::<HandoffTestLock>::new();
        let take = || {
            lock.acquire();
            // SAFETY: held by this thread.
            unsafe { lock.release() };
        };
        let before = data.snapshot();
        on_cpu(3, || {
            take();
            take();
        });
        on_cpu(4, take);
        on_cpu(3, take);
        on_cpu(3, take);
        let d = data.snapshot().since(&before);
        assert_eq!((d.acquisitions, d.handoffs, d.untracked), (5, 1, 2));
        // A word: CPU 5 adds twice, CPU 6 once in between.
        static WORD: AtomicU64 = AtomicU64::new(0);
        let add = || {
            let old = WORD.fetch_add(1, Relaxed);
            note_write::<HandoffTestWord>(core::ptr::from_ref(&WORD) as usize, old, old + 1)
        };
        let w = <HandoffTestWord as LockClass>::data();
        let before = w.snapshot();
        on_cpu(5, || assert_eq!(add(), Some(Seen::Untracked)));
        on_cpu(5, || assert_eq!(add(), Some(Seen::Same)));
        on_cpu(6, || assert_eq!(add(), Some(Seen::Untracked)));
        on_cpu(5, || assert_eq!(add(), Some(Seen::Handoff)));
        let d = w.snapshot().since(&before);
        assert_eq!((d.acquisitions, d.handoffs, d.untracked), (4, 1, 2));
    }

    #[test]
    fn words_are_told_apart_and_the_oldest_is_forgotten() {
        let t = HandoffTable::new();
        for w in 0..WAYS {
            assert_eq!(t.note(0x40 * (w + 1), 0, 10), Seen::Untracked);
        }
        for w in 0..WAYS {
            assert_eq!(t.note(0x40 * (w + 1), 10, 11), Seen::Same);
        }
        // A fifth word evicts the first.
        assert_eq!(t.note(0x1000, 0, 1), Seen::Untracked);
        assert_eq!(t.note(0x40, 11, 12), Seen::Untracked);
        assert_eq!(t.read(), (0, WAYS as u64 + 2));
        t.reset();
        assert_eq!(t.read(), (0, 0));
        assert_eq!(t.note(0x80, 11, 12), Seen::Untracked, "reset forgets");
    }
}
