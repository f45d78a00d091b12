//! A reusable sense-reversing spin barrier.
//!
//! The centralised barrier of Mellor-Crummey and Scott ("Algorithms for Scalable
//! Synchronization on Shared-Memory Multiprocessors", 1991), the shape of Linux's
//! `cpu_rendezvous`-style loops: a count of CPUs still to arrive and a global *sense* bit. Each
//! arriving CPU reads the sense first (it cannot flip before this CPU arrives, since this CPU is
//! one of those it waits for), decrements the count, and spins until the sense differs from
//! what it read. The last to arrive re-arms the count and then flips the sense with `Release`,
//! so a CPU that races ahead into the next round finds a full count. Because the sense flips
//! each round, nothing has to be reset between rounds and the barrier can be reused forever.
//!
//! Waiters spin on a read-only load of the sense word, so they share its cache line until the
//! flip invalidates it once.

use core::num::NonZeroU32;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// A barrier for a fixed number of participants.
#[derive(Debug)]
pub struct Barrier {
    remaining: AtomicU32,
    sense: AtomicBool,
    parties: u32,
}

impl Barrier {
    /// A barrier that releases its waiters when `parties` of them have arrived.
    #[must_use]
    pub const fn new(parties: NonZeroU32) -> Self {
        Barrier {
            remaining: AtomicU32::new(parties.get()),
            sense: AtomicBool::new(false),
            parties: parties.get(),
        }
    }

    /// How many participants each round waits for.
    #[must_use]
    pub fn parties(&self) -> u32 {
        self.parties
    }

    /// Waits until every participant has called `wait` for this round. Returns `true` on
    /// exactly one participant per round (the last to arrive), like `std`'s `is_leader`.
    ///
    /// Everything a participant wrote before `wait` is visible to every participant after it.
    pub fn wait(&self) -> bool {
        let sense = self.sense.load(Ordering::Acquire);
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.remaining.store(self.parties, Ordering::Relaxed);
            self.sense.store(!sense, Ordering::Release);
            true
        } else {
            while self.sense.load(Ordering::Acquire) == sense {
                core::hint::spin_loop();
            }
            false
        }
    }
}
