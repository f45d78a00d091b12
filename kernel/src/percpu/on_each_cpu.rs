//! Running a function on every online CPU, or a chosen set, and waiting for all of them.
//!
//! Models Linux's `on_each_cpu` / `on_each_cpu_mask` / `smp_call_function_many`
//! (`kernel/smp.c`) for a kernel without a scheduler. The caller publishes a [`CallData`]
//! (the function and a count of CPUs still to finish) in each target's [`CpuArea`] mailbox,
//! sends each remote target an IPI on [`CALL_VECTOR`], runs the function itself if it is a
//! target, and spins until the count reaches zero, so the `CallData` on its stack outlives
//! every use. Targets run the function from their idle loop ([`idle_loop`]): an AP sleeps in
//! `sti; hlt` and the IPI wakes it (the handler only acknowledges it; the work runs in thread
//! context, with interrupts enabled, on the AP's own stack).
//!
//! One call is in flight at a time (a global lock). A CPU that waits for that lock keeps
//! serving its own mailbox, so two CPUs calling each other cannot deadlock. The boot CPU runs
//! `kmain` and is never idle, so it can only be a target of its own calls
//! ([`CallError::BootCpuBusy`] otherwise), and a function running inside a call may not make
//! another one ([`CallError::Nested`]): its caller would wait for it forever.
//!
//! Unsafe code here, and why: the function run on every CPU is borrowed, not `'static`: its
//! lifetime is erased for the other CPUs, which the caller outwaits.
#![allow(unsafe_code)]

use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::{CpuArea, area, cpu_id, nr_cpu_ids, this_area};
use crate::arch::apic;

/// Vector of the "look at your mailbox" IPI.
pub const CALL_VECTOR: u8 = 0xf0;

/// A set of CPU ids.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuSet {
    bits: [u64; super::MAX_CPUS / 64],
}

impl CpuSet {
    /// No CPUs.
    #[must_use]
    pub const fn new() -> Self {
        CpuSet {
            bits: [0; super::MAX_CPUS / 64],
        }
    }

    /// Every online CPU.
    #[must_use]
    pub fn online() -> Self {
        let mut s = Self::new();
        for c in 0..nr_cpu_ids() {
            s.insert(c);
        }
        s
    }

    /// Adds `cpu` (ignored past [`super::MAX_CPUS`]).
    pub fn insert(&mut self, cpu: usize) {
        if let Some(w) = self.bits.get_mut(cpu / 64) {
            *w |= 1 << (cpu % 64);
        }
    }

    /// Whether `cpu` is in the set.
    #[must_use]
    pub fn contains(&self, cpu: usize) -> bool {
        self.bits
            .get(cpu / 64)
            .is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }

    /// The CPUs in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..super::MAX_CPUS).filter(|&c| self.contains(c))
    }

    /// Number of CPUs in the set.
    #[must_use]
    pub fn len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// Why a cross-CPU call was refused. Nothing ran when an error is returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    /// A target CPU is not online.
    NotOnline(usize),
    /// The boot CPU was a target of a call made by another CPU.
    BootCpuBusy,
    /// Called from inside a function run by a cross-CPU call.
    Nested,
    /// The IPI to a target could not be sent.
    Ipi(usize),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::NotOnline(c) => write!(f, "cpu {c} is not online"),
            CallError::BootCpuBusy => write!(f, "cpu 0 runs kmain and cannot be called"),
            CallError::Nested => write!(f, "cross-CPU call made from inside one"),
            CallError::Ipi(c) => write!(f, "cannot send the call IPI to cpu {c}"),
        }
    }
}

/// One call in flight: lives on the caller's stack until `remaining` is zero.
pub struct CallData {
    func: &'static (dyn Fn(usize) + Sync),
    remaining: AtomicUsize,
}

/// Serialises calls.
static CALL_LOCK: AtomicBool = AtomicBool::new(false);

/// Runs `f(cpu)` on every online CPU and returns when all have finished.
pub fn on_each_cpu(f: &(dyn Fn(usize) + Sync)) -> Result<(), CallError> {
    on_cpus(&CpuSet::online(), f)
}

/// Runs `f(cpu)` on each CPU in `set` and returns when all have finished.
pub fn on_cpus(set: &CpuSet, f: &(dyn Fn(usize) + Sync)) -> Result<(), CallError> {
    let me = cpu_id();
    let mine = this_area();
    if mine.is_some_and(|a| a.in_call.load(Ordering::Relaxed)) {
        return Err(CallError::Nested);
    }
    let mut targets: Vec<&'static CpuArea> = Vec::with_capacity(set.len());
    for c in set.iter() {
        if c == me {
            continue;
        }
        if c == 0 {
            return Err(CallError::BootCpuBusy);
        }
        targets.push(area(c).ok_or(CallError::NotOnline(c))?);
    }
    // SAFETY: the `'static` is a lie told only to the mailbox: we do not return before
    // `remaining` is zero, and no target touches the `CallData` after its decrement.
    let func: &'static (dyn Fn(usize) + Sync) = unsafe { core::mem::transmute(f) };
    let data = CallData {
        func,
        remaining: AtomicUsize::new(targets.len()),
    };

    while CALL_LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        poll_mailbox();
        core::hint::spin_loop();
    }
    let mut result = Ok(());
    for t in &targets {
        t.call
            .store(&data as *const CallData as *mut CallData, Ordering::Release);
        if apic::send_ipi(
            t.apic_id(),
            apic::icr::FIXED | apic::icr::ASSERT | u32::from(CALL_VECTOR),
        )
        .is_err()
        {
            // Take the mailbox back; it cannot have been seen without the IPI unless the CPU
            // happened to poll, in which case it will finish and decrement as usual.
            if !t
                .call
                .swap(core::ptr::null_mut(), Ordering::AcqRel)
                .is_null()
            {
                data.remaining.fetch_sub(1, Ordering::Release);
            }
            result = Err(CallError::Ipi(t.cpu()));
            continue;
        }
    }
    if result.is_ok() && set.contains(me) {
        run(mine, func, me);
    }
    // Waiting on the targets is an extended quiescent state: a target may wait for a grace
    // period (synchronize_rcu in the called function).
    crate::rcu::extended_qs(|| {
        while data.remaining.load(Ordering::Acquire) != 0 {
            core::hint::spin_loop();
        }
    });
    CALL_LOCK.store(false, Ordering::Release);
    result
}

fn run(area: Option<&CpuArea>, func: &(dyn Fn(usize) + Sync), cpu: usize) {
    if let Some(a) = area {
        a.in_call.store(true, Ordering::Relaxed);
    }
    func(cpu);
    if let Some(a) = area {
        a.in_call.store(false, Ordering::Relaxed);
    }
}

/// The kernel's CPUs for per-CPU data that only its own CPU takes (`ksync::LocalLock`,
/// Linux's `local_lock`), with [`on_each_cpu`] to run work on each.
///
/// The kernel keeps `LocalCpus`'s promise: `ksync::this_cpu` reads the running CPU's id
/// from its per-CPU area (GS); there is no scheduler and no preemption, so one context
/// runs on a CPU at a time, and an interrupt handler returns before the code it
/// interrupted resumes; `on_each_cpu` runs `f(cpu)` on CPU `cpu` itself (the caller's own
/// call, or the target's mailbox) and waits for every call it started, also on failure.
#[must_use]
pub fn local_cpus() -> ksync::local_lock::LocalCpus {
    fn run(f: &(dyn Fn(usize) + Sync)) -> bool {
        on_each_cpu(f).is_ok()
    }
    // SAFETY: CPU ids are CPUs and `run` is `on_each_cpu` (see the function's documentation).
    unsafe { ksync::local_lock::LocalCpus::new(run) }
}

/// Runs the call waiting in this CPU's mailbox, if any. Returns whether one ran.
pub fn poll_mailbox() -> bool {
    let Some(a) = this_area() else { return false };
    let p = a.call.swap(core::ptr::null_mut(), Ordering::Acquire);
    if p.is_null() {
        return false;
    }
    // SAFETY: a non-null mailbox points at the caller's `CallData`, which stays alive until
    // `remaining` reaches zero, i.e. until after our decrement below.
    let data = unsafe { &*p };
    run(Some(a), data.func, a.cpu());
    data.remaining.fetch_sub(1, Ordering::Release);
    // A quiescent point: the function has returned (refused inside a read section).
    crate::rcu::after_call();
    true
}

/// The call IPI's handler: the wake-up is all it is for.
pub fn call_ipi_handler(_frame: &mut crate::arch::trap::TrapFrame) {
    apic::eoi();
}

/// Where an AP spends its life once it is up: sleep until a call arrives, run it, repeat.
/// Asleep, the CPU is in an RCU extended quiescent state (offline); it comes online before
/// it runs a call.
pub fn idle_loop() -> ! {
    use x86_64::instructions::interrupts;
    loop {
        interrupts::disable();
        if this_area().is_some_and(|a| !a.call.load(Ordering::Acquire).is_null()) {
            interrupts::enable();
            crate::rcu::idle_exit();
            poll_mailbox();
            continue;
        }
        crate::rcu::idle_enter();
        // `sti; hlt`: an IPI that arrived while interrupts were off is taken right after the
        // `sti` shadow, ending the `hlt`, so no wake-up is lost.
        interrupts::enable_and_hlt();
    }
}
