//! `ksync`: the synchronisation layer every other crate of the kernel builds on, platform
//! neutral so that the same code runs in the kernel and on host threads.
//!
//! - [`ticket`]: [`TicketLock<C>`], Linux's pre-qspinlock x86 ticket spinlock: one 32-bit
//!   word, exactly the size of a `spinlock_t` without debugging, so every struct that embeds
//!   a lock has the same offsets in the kernel, in host tests and in the host benchmark.
//! - [`class`]: lock classes ([`LockClass`]), Linux's `lock_class_key`: a zero-sized type
//!   parameter of the lock, so the class costs no byte in the lock word. Statistics and
//!   lock-order checking are kept per class, out of line.
//! - [`stat`]: `CONFIG_LOCK_STAT` reduced to acquisitions, contended acquisitions and wait
//!   cycles, per class and per CPU (each CPU writes only its own 128-byte slot), summed when
//!   read: collecting them adds no traffic to the lock's own line.
//! - [`handoff`]: whether a shared word (a lock's, a counter's) was written by another CPU
//!   between two writes of this one, seen in the old value its read-modify-write returns:
//!   the cross-CPU event a seed's premise needs, counted per class without a shared line.
//! - [`lockdep`]: a small lockdep: records which class was held when another was taken and
//!   reports an inversion (A then B somewhere, B then A elsewhere) with both class names.
//! - [`family`]: [`LockFamily`], how generic code names "the lock of class C" so that loom
//!   models can substitute their own lock while the kernel and the host use [`TicketLock`].
//! - [`local_lock`]: [`LocalLock`], Linux's `local_lock_t`: per-CPU data that, on a
//!   platform whose CPU ids are CPUs ([`local_lock::LocalCpus`]), only its own CPU takes,
//!   without an atomic; elsewhere (host tests, loom) a lock of its class.
//! - [`percpu`]: [`PerCpu<T>`], one `T` per CPU, each on its own 128-byte pair (the unit the
//!   adjacent-line prefetcher fetches), and [`CachePadded`].
//! - [`cpu`]: the running CPU's id, from a hook the platform installs (the kernel reads GS,
//!   host threads use a thread-local id).
//! - [`rcu`]: QSBR RCU ([`Rcu`]): free-after-grace-period for the lockless readers above
//!   (the memcg FIFO, memcg's id table, the per-VMA lookups), with its callback queue's
//!   lock class.
//! - [`race`]: injected delays in race windows (`race_delay=`), a stress aid that is off
//!   (one relaxed load) unless a test sets it.
//! - [`warn`]: `WARN_ON_ONCE` ([`warn_on_once!`]): errors that cannot happen and have no
//!   caller to go to are counted per call site, and the invariant checker fails on any.
#![cfg_attr(not(any(test, any(test, feature = "std"))), no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod class;
pub mod cpu;
pub mod family;
pub mod handoff;
pub mod hint;
pub mod local_lock;
pub mod lockdep;
pub mod percpu;
pub mod race;
pub mod rcu;
pub mod stat;
pub mod ticket;
pub mod warn;

pub use class::{ClassData, LockClass, classes};
pub use cpu::{MAX_CPUS, this_cpu};
pub use family::LockFamily;
#[cfg(not(loom))]
pub use family::Ticket;
pub use local_lock::LocalLock;
pub use percpu::{CachePadded, PerCpu};
pub use rcu::{Rcu, RcuError, RcuReadGuard};
pub use stat::LockStatSnapshot;
pub use ticket::TicketLock;

/// A `lock_api::Mutex` protected by a [`TicketLock`] of class `C`.
#[cfg(not(loom))]
pub type SpinMutex<C, T> = lock_api::Mutex<TicketLock<C>, T>;
