//! `local_lock_t`: per-CPU data that only its own CPU touches, without an atomic.
//!
//! Linux guards per-CPU data such as `cpu_fbatches` (mm/swap.c) and `memcg_stock`
//! (mm/memcontrol.c) with a local lock: on a non-RT kernel `local_lock()` disables
//! preemption (`local_lock_irqsave()` interrupts too) and nothing else, so the owning CPU
//! takes it without a locked read-modify-write; another CPU never takes it, but asks the
//! owner to do the work (`lru_add_drain_all()` queues a drain on each CPU and waits;
//! `drain_all_stock()` queues one and does not).
//!
//! [`LocalLock`] has both behaviours, chosen when it is built:
//!
//! - **owned** ([`LocalLock::owned`]): the data belongs to one CPU, and only code running on
//!   that CPU ([`crate::this_cpu`]) may lock it; locking is a check of the running CPU and
//!   of a "held" flag that only the owner reads and writes (plain loads and stores), plus
//!   lockdep's bookkeeping. Building one needs a [`LocalCpus`], the platform's promise that
//!   its CPU ids are CPUs: one context runs on a CPU at a time, and a context that
//!   interrupts another finishes before it resumes (the kernel: no scheduler, no
//!   preemption). Work on another CPU's data goes through [`LocalCpus::on_each_cpu`].
//! - **locked** ([`LocalLock::locked`]): the data sits behind a lock of class `C`, so any
//!   thread may name any CPU: host tests drive many CPUs' data from one thread, and loom
//!   models interleave them. This is what every per-CPU lock here was before owned locks.
//!
//! A lock in owned mode refuses the wrong CPU and a nested acquisition with an error
//! ([`LocalLockError`]) instead of handing out a second `&mut`: a caller that names a CPU
//! other than the one it runs on is a bug the error makes visible.
//!
//! Unsafe code here, and why: the data is an `UnsafeCell` shared between CPUs
//! (`unsafe impl Sync`), handed out mutably by the guard once the mode's exclusion holds:
//! the lock in locked mode, the owning CPU and the held flag in owned mode; and building a
//! [`LocalCpus`] is the platform's unchecked promise about its CPUs.
#![allow(unsafe_code)]

use crate::class::LockClass;
use crate::family::{Lock, LockFamily};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

/// Runs a function on every CPU (each call on its own CPU, with its id) and returns once
/// all have finished, `false` when that could not be done (nothing, or not everything,
/// ran): the kernel's `on_each_cpu`.
pub type OnEachCpu = fn(&(dyn Fn(usize) + Sync)) -> bool;

/// The platform's promise that its CPU ids are CPUs, which owned [`LocalLock`]s rely on,
/// and its way to run work on each of them.
#[derive(Clone, Copy)]
pub struct LocalCpus {
    on_each_cpu: OnEachCpu,
}

impl core::fmt::Debug for LocalCpus {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("LocalCpus")
    }
}

impl LocalCpus {
    /// The platform's CPUs, with `on_each_cpu` to run work on each.
    ///
    /// # Safety
    ///
    /// For as long as any lock built with this value exists: [`crate::this_cpu`] returns,
    /// in every context that may lock one, the id of the CPU it runs on; two contexts with
    /// one id never run at once, except that one may interrupt another and then finishes
    /// before the other resumes; and `on_each_cpu(f)` runs `f(cpu)` on CPU `cpu` itself
    /// (with [`crate::this_cpu`] returning `cpu`) and returns only after every call it
    /// started has returned.
    #[must_use]
    pub const unsafe fn new(on_each_cpu: OnEachCpu) -> Self {
        LocalCpus { on_each_cpu }
    }

    /// Runs `f(cpu)` on every CPU, each on its own; `false` when not every CPU could.
    pub fn on_each_cpu(&self, f: &(dyn Fn(usize) + Sync)) -> bool {
        (self.on_each_cpu)(f)
    }
}

/// An [`OnEachCpu`] for host tests: `f(cpu)` on `N` threads at once, each pinned to its id
/// `0..N` ([`crate::cpu::set_this_thread_cpu`]). A [`LocalCpus`] built on it keeps its
/// promise while no other thread with one of those ids takes the locks during a call.
#[cfg(any(test, feature = "std"))]
pub fn pinned_threads<const N: usize>(f: &(dyn Fn(usize) + Sync)) -> bool {
    std::thread::scope(|s| {
        for cpu in 0..N {
            s.spawn(move || {
                crate::cpu::set_this_thread_cpu(cpu);
                f(cpu);
            });
        }
    });
    true
}

/// Why [`LocalLock::lock`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalLockError {
    /// An owned lock was taken on another CPU than its owner.
    NotOwner {
        /// The owning CPU.
        owner: usize,
        /// The CPU that tried.
        cpu: usize,
    },
    /// An owned lock was taken while its CPU already held it (an interrupted holder).
    Held,
}

/// Per-CPU data of class `C` behind a local lock (see the module documentation).
pub struct LocalLock<F: LockFamily, C: LockClass, T> {
    /// `Some(cpu)`: owned by `cpu`; `None`: locked mode.
    owner: Option<usize>,
    /// Owned mode: a guard exists. Only the owning CPU touches it.
    held: AtomicBool,
    /// Locked mode: the lock.
    lock: lock_api::Mutex<Lock<F, C>, ()>,
    data: UnsafeCell<T>,
}

// SAFETY: the data is reached only through a guard: in locked mode with the lock held, in
// owned mode only on the owning CPU with the held flag clear, which `LocalCpus::new`'s
// contract makes one context at a time (an interrupting context sees the flag set and is
// refused). So `&LocalLock` shared between threads hands out at most one `&mut T` at a
// time, and `T` may move between threads with it.
unsafe impl<F: LockFamily, C: LockClass, T: Send> Sync for LocalLock<F, C, T> {}

impl<F: LockFamily, C: LockClass, T: core::fmt::Debug> core::fmt::Debug for LocalLock<F, C, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LocalLock")
            .field("class", &C::data().name())
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl<F: LockFamily, C: LockClass, T> LocalLock<F, C, T> {
    /// `value` behind a lock of class `C`: any thread may take it.
    pub fn locked(value: T) -> Self {
        LocalLock {
            owner: None,
            held: AtomicBool::new(false),
            lock: lock_api::Mutex::new(()),
            data: UnsafeCell::new(value),
        }
    }

    /// `value` owned by CPU `cpu` of the platform's `cpus`: only `cpu` may take it.
    pub fn owned(cpu: usize, cpus: &LocalCpus, value: T) -> Self {
        let _ = cpus;
        LocalLock {
            owner: Some(cpu),
            held: AtomicBool::new(false),
            lock: lock_api::Mutex::new(()),
            data: UnsafeCell::new(value),
        }
    }

    /// The owning CPU, in owned mode.
    #[must_use]
    pub fn owner(&self) -> Option<usize> {
        self.owner
    }

    /// Takes the lock: in locked mode waits for it; in owned mode checks that this is the
    /// owning CPU and that it does not hold the lock already (`local_lock()`).
    ///
    /// The owned path is inlined into the caller (a load of the running CPU's id, two
    /// compares and a store); the locked one stays out of line, so that its registers are
    /// not saved on the owned path.
    #[inline(always)]
    pub fn lock(&self) -> Result<LocalLockGuard<'_, F, C, T>, LocalLockError> {
        let Some(owner) = self.owner else {
            return Ok(self.lock_locked());
        };
        let cpu = crate::this_cpu();
        if cpu != owner {
            return Err(LocalLockError::NotOwner { owner, cpu });
        }
        // Only this CPU reads and writes the flag, and a context that interrupts between
        // the load and the store has finished (its guard dropped) before the store: plain
        // accesses suffice, as `local_lock()` needs no atomic.
        if self.held.load(Ordering::Relaxed) {
            return Err(LocalLockError::Held);
        }
        self.held.store(true, Ordering::Relaxed);
        crate::lockdep::acquire(C::data());
        Ok(LocalLockGuard {
            lock: self,
            held: None,
        })
    }

    /// Cold: the owned mode is the kernel's; the locked one serves host tests and models.
    #[cold]
    #[inline(never)]
    fn lock_locked(&self) -> LocalLockGuard<'_, F, C, T> {
        LocalLockGuard {
            lock: self,
            held: Some(self.lock.lock()),
        }
    }

    /// The data, through exclusive access to the lock.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

/// A held [`LocalLock`]: the data, exclusively.
#[must_use = "the lock is released when the guard is dropped"]
pub struct LocalLockGuard<'a, F: LockFamily, C: LockClass, T> {
    lock: &'a LocalLock<F, C, T>,
    /// Locked mode: the lock's guard.
    held: Option<lock_api::MutexGuard<'a, Lock<F, C>, ()>>,
}

impl<F: LockFamily, C: LockClass, T> core::ops::Deref for LocalLockGuard<'_, F, C, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard is the one way to the data and exists once at a time (see the
        // `Sync` impl); the shared borrow of the guard keeps it alive.
        unsafe { &*self.lock.data.get() }
    }
}

impl<F: LockFamily, C: LockClass, T> core::ops::DerefMut for LocalLockGuard<'_, F, C, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`, and the guard is borrowed mutably.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<F: LockFamily, C: LockClass, T> Drop for LocalLockGuard<'_, F, C, T> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.held.take().is_none() {
            crate::lockdep::release(C::data());
            self.lock.held.store(false, Ordering::Relaxed);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::family::Ticket;

    crate::lock_class!(TestLocal, "test-local");

    fn cpus() -> LocalCpus {
        // SAFETY: in these tests only the threads `pinned_threads` starts (one per id) and
        // the test thread, pinned to id 0 and taking no lock while they run, take the locks.
        unsafe { LocalCpus::new(pinned_threads::<2>) }
    }

    #[test]
    fn an_owned_lock_is_taken_on_its_cpu_only() {
        crate::cpu::set_this_thread_cpu(0);
        let c = cpus();
        let l: LocalLock<Ticket, TestLocal, u32> = LocalLock::owned(1, &c, 7);
        assert_eq!(
            l.lock().err(),
            Some(LocalLockError::NotOwner { owner: 1, cpu: 0 })
        );
        assert!(c.on_each_cpu(&|cpu| {
            let r = l.lock();
            if cpu == 1 {
                let mut g = r.expect("the owner takes it");
                *g += 1;
                assert_eq!(l.lock().err(), Some(LocalLockError::Held));
            } else {
                assert!(r.is_err());
            }
        }));
        assert!(c.on_each_cpu(&|cpu| {
            if cpu == 1 {
                assert_eq!(*l.lock().expect("released after the first guard"), 8);
            }
        }));
    }

    #[test]
    fn a_locked_lock_is_taken_anywhere() {
        let l: LocalLock<Ticket, TestLocal, u32> = LocalLock::locked(1);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        *l.lock().expect("locked mode never refuses") += 1;
                    }
                });
            }
        });
        assert_eq!(*l.lock().unwrap(), 4001);
    }
}
