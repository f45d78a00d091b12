//! Synchronisation primitives for kernel code that runs on every CPU at once.
//!
//! The kernel has no scheduler, so every lock spins. The locks themselves are the
//! platform-neutral [`ksync`] ticket locks (four bytes, with their lock class as a type
//! parameter, per-class per-CPU statistics and lock-order checking), shared with the host
//! tests and the host benchmark so that every struct embedding a lock has the same layout
//! everywhere. The kernel adds the CPU-id hook ksync needs ([`init`]) and [`barrier`], the
//! reusable sense-reversing barrier that lines CPUs up between benchmark phases.

pub mod barrier;

pub use barrier::Barrier;
pub use ksync::{LockStatSnapshot, SpinMutex, TicketLock};

ksync::lock_class!(
    /// Locks of the kernel's own tests and bookkeeping that belong to no mm subsystem.
    pub KernelLock, "kernel"
);

/// Tells ksync how to find the running CPU (its per-CPU statistics and lock-order stacks
/// are indexed by it). Called on the boot CPU before any other CPU starts.
pub fn init() {
    ksync::cpu::set_cpu_id_fn(crate::percpu::cpu_id);
}
