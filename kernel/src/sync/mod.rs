//! Synchronisation primitives for kernel code that runs on every CPU at once.
//!
//! The kernel has no scheduler, so every lock here spins. [`ticket`] is the fair ticket
//! spinlock (Linux's pre-qspinlock `arch_spinlock_t`) that implements [`lock_api::RawMutex`]:
//! the `lru` and `memcg` crates are generic over that trait, so `lruvec->lru_lock` and the
//! memcg FIFO lock become ticket locks in the kernel and `std`-backed locks on the host.
//! [`lock_stat`] is the switchable contention accounting (Linux's `CONFIG_LOCK_STAT`,
//! `/proc/lock_stat`), and [`barrier`] the reusable sense-reversing barrier that lines CPUs up
//! between benchmark phases.

pub mod barrier;
pub mod lock_stat;
pub mod ticket;

pub use barrier::Barrier;
pub use lock_stat::{LockStat, LockStatSnapshot, NoStat, StatMode};
pub use ticket::{PlainTicketLock, RawTicketLock, TicketLock};

/// A mutex protected by a [`TicketLock`] (statistics available, off until switched on).
pub type SpinMutex<T> = lock_api::Mutex<TicketLock, T>;
/// The guard of a [`SpinMutex`].
pub type SpinMutexGuard<'a, T> = lock_api::MutexGuard<'a, TicketLock, T>;
