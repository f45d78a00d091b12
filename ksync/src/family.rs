//! Lock families: how code generic over its locks names "the lock of class `C`".
//!
//! lru, memcg and the page allocator take a `F: LockFamily` parameter and declare each lock
//! as `F::Lock<SomeClass>`. The kernel and the host (tests and the host benchmark) use
//! [`Ticket`], so every lock is a [`TicketLock`] of its own class, with the same size and the
//! same statistics everywhere; loom models plug in a family of loom-aware locks.

use crate::class::LockClass;
#[cfg(not(loom))]
use crate::ticket::TicketLock;

/// A way of making a raw lock for each lock class.
pub trait LockFamily: 'static + Send + Sync {
    /// The raw lock of class `C`.
    type Lock<C: LockClass>: lock_api::RawMutex + Send + Sync + 'static;
}

/// The raw lock of class `C` in family `F`, for the fields that declare one
/// (`lock_api::Mutex<Lock<F, C>, T>`).
pub type Lock<F, C> = <F as LockFamily>::Lock<C>;

/// The kernel's family: [`TicketLock`]s.
#[cfg(not(loom))]
#[derive(Debug, Clone, Copy, Default)]
pub struct Ticket;

#[cfg(not(loom))]
impl LockFamily for Ticket {
    type Lock<C: LockClass> = TicketLock<C>;
}
