//! SMP tests: every CPU up with its ids, per-CPU slots, cross-CPU calls, the barrier, the
//! ticket lock and its statistics, the TSC clock, and the `cpus=` limit.
//!
//! Each test runs its work on every online CPU through `on_each_cpu`, so the same test
//! checks 1, 2, 4 or 8 CPUs depending on how QEMU was started (`-smp N`). Loop counts are
//! modest: under TCG eight vCPUs share two host cores, and a ticket lock hands over only as
//! fast as the host schedules the next waiter's thread.
//!
//! Unsafe code here, and why: the race tests need a deliberately unsynchronised counter
//! (`UnsafeCell` shared between CPUs) to show what the locks prevent.
#![allow(unsafe_code)]

use alloc::format;
use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::num::NonZeroU32;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::arch::smp::{self, CpuOutcome};
use crate::arch::{apic, tsc};
use crate::ensure;
use crate::ktest::TestResult;
use crate::percpu::{self, CallError, CpuSet, PerCpu, PerCpuShared, on_cpus, on_each_cpu};
use crate::sync::{Barrier, SpinMutex, TicketLock};
use ksync::LockClass;
use ktest::ktest;
use lock_api::RawMutex;

ksync::lock_class!(
    /// The mutex of `ticket_lock_counter`, which must record nothing (statistics off).
    CounterOff, "test-counter-off"
);
ksync::lock_class!(
    /// The raw lock of `ticket_lock_counter` (statistics on).
    CounterOn, "test-counter-on"
);
ksync::lock_class!(
    /// The lock of `ticket_lock_contention`.
    Contention, "test-contention"
);

fn info() -> Result<&'static smp::SmpInfo, alloc::string::String> {
    smp::info().ok_or_else(|| "SMP bring-up did not run".into())
}

fn n_online() -> usize {
    percpu::nr_cpu_ids()
}

fn barrier() -> Barrier {
    Barrier::new(NonZeroU32::new(n_online() as u32).unwrap_or(NonZeroU32::MIN))
}

/// Every MADT processor within the limit is online, with a distinct id; each CPU reports the
/// id and APIC ID bring-up gave it.
#[ktest]
fn smp_cpus_online() -> TestResult {
    let info = info()?;
    let n = n_online();
    for (cpu, outcome) in &info.cpus {
        ensure!(
            matches!(outcome, CpuOutcome::Online(_) | CpuOutcome::Limited),
            "APIC ID {} was not brought up: {outcome:?}",
            cpu.apic_id
        );
    }
    let want = info
        .found()
        .min(info.limit.map_or(usize::MAX, |l| l as usize));
    ensure!(n == want, "{n} CPUs online, expected {want}");
    let seen: PerCpuShared<AtomicU64> = PerCpuShared::new(|_| AtomicU64::new(u64::MAX));
    on_each_cpu(&|cpu| {
        if let Some(s) = seen.get(cpu) {
            let id = percpu::cpu_id() as u64;
            s.store((id << 32) | u64::from(apic::id()), Ordering::Relaxed);
        }
    })
    .map_err(|e| format!("on_each_cpu: {e}"))?;
    let mut apic_ids = Vec::new();
    for cpu in 0..n {
        let v = seen
            .get(cpu)
            .map_or(u64::MAX, |s| s.load(Ordering::Relaxed));
        ensure!(v != u64::MAX, "cpu {cpu} did not run the call");
        let (id, apic_id) = ((v >> 32) as usize, v as u32);
        let area = percpu::area(cpu).ok_or_else(|| format!("cpu {cpu} has no area"))?;
        ensure!(id == cpu, "slot {cpu} was filled by cpu {id}");
        ensure!(
            apic_id == area.apic_id(),
            "cpu {cpu} reports APIC ID {apic_id}, bring-up started APIC ID {}",
            area.apic_id()
        );
        ensure!(!apic_ids.contains(&apic_id), "APIC ID {apic_id} twice");
        apic_ids.push(apic_id);
        crate::println!("  cpu {cpu}: apic id {apic_id}");
    }
    Ok(())
}

/// `cpus=K` is obeyed: exactly min(K, found) CPUs online, the rest reported as limited.
#[ktest]
fn smp_cpus_limit() -> TestResult {
    let info = info()?;
    let n = n_online();
    let limited = info
        .cpus
        .iter()
        .filter(|(_, o)| *o == CpuOutcome::Limited)
        .count();
    match info.limit {
        Some(k) => {
            let k = k as usize;
            ensure!(n <= k, "{n} CPUs online with cpus={k}");
            ensure!(
                n == k.min(info.found()),
                "{n} CPUs online, cpus={k}, {} found",
                info.found()
            );
            ensure!(
                limited == info.found().saturating_sub(k),
                "{limited} CPUs reported as limited, expected {}",
                info.found().saturating_sub(k)
            );
        }
        None => ensure!(limited == 0, "{limited} CPUs limited without cpus="),
    }
    Ok(())
}

/// Each CPU bumps its own non-atomic per-CPU counter; the sum is exact.
#[ktest]
fn smp_percpu_counter() -> TestResult {
    const ROUNDS: u64 = 20_000;
    let counters: PerCpu<u64> = PerCpu::new(|_| 0);
    on_each_cpu(&|_| {
        for _ in 0..ROUNDS {
            counters.with(|c| *c += 1);
        }
        // Re-entry is refused, not aliased.
        let nested = counters.with(|_| counters.try_with(|_| ()).is_err());
        if !nested {
            counters.with(|c| *c += 1_000_000);
        }
    })
    .map_err(|e| format!("on_each_cpu: {e}"))?;
    let mut counters = counters;
    let per: Vec<u64> = counters.iter_mut().map(|c| *c).collect();
    for (cpu, c) in per.iter().enumerate() {
        ensure!(*c == ROUNDS, "cpu {cpu} counted {c}, expected {ROUNDS}");
    }
    let sum: u64 = per.iter().sum();
    ensure!(
        sum == ROUNDS * n_online() as u64,
        "sum {sum} != {ROUNDS} x {} CPUs",
        n_online()
    );
    Ok(())
}

/// A call to a subset runs exactly there; nested calls and offline targets are refused.
#[ktest]
fn smp_on_cpus_subset() -> TestResult {
    let n = n_online();
    let mut set = CpuSet::new();
    set.insert(0);
    set.insert(n - 1);
    let ran: PerCpuShared<AtomicU32> = PerCpuShared::new(|_| AtomicU32::new(0));
    let nested = AtomicU32::new(0);
    on_cpus(&set, &|cpu| {
        if let Some(r) = ran.get(cpu) {
            r.fetch_add(1, Ordering::Relaxed);
        }
        if on_each_cpu(&|_| {}) == Err(CallError::Nested) {
            nested.fetch_add(1, Ordering::Relaxed);
        }
    })
    .map_err(|e| format!("on_cpus: {e}"))?;
    for cpu in 0..n {
        let got = ran.get(cpu).map_or(0, |r| r.load(Ordering::Relaxed));
        let want = u32::from(set.contains(cpu));
        ensure!(got == want, "cpu {cpu} ran {got} times, expected {want}");
    }
    let nested = nested.load(Ordering::Relaxed) as usize;
    ensure!(
        nested == set.len(),
        "{nested} nested calls refused of {}",
        set.len()
    );
    let mut bad = CpuSet::new();
    bad.insert(n);
    ensure!(
        on_cpus(&bad, &|_| {}) == Err(CallError::NotOnline(n)),
        "a call to offline cpu {n} was not refused"
    );
    Ok(())
}

/// All CPUs pass many barrier rounds; after each, every CPU sees every other CPU's write of
/// that round, and exactly one CPU per round is the leader.
#[ktest]
fn smp_barrier_rounds() -> TestResult {
    // Every round needs every vCPU scheduled on the host: fewer rounds with more CPUs.
    let rounds = (800 / n_online() as u32).max(50);
    let b = barrier();
    let stamp: PerCpuShared<AtomicU32> = PerCpuShared::new(|_| AtomicU32::new(0));
    let leaders = AtomicU32::new(0);
    let errors = AtomicU32::new(0);
    on_each_cpu(&|cpu| {
        for round in 1..=rounds {
            if let Some(s) = stamp.get(cpu) {
                s.store(round, Ordering::Relaxed);
            }
            if b.wait() {
                leaders.fetch_add(1, Ordering::Relaxed);
            }
            if stamp.iter().any(|s| s.load(Ordering::Relaxed) != round) {
                errors.fetch_add(1, Ordering::Relaxed);
            }
            b.wait();
        }
    })
    .map_err(|e| format!("on_each_cpu: {e}"))?;
    let errors = errors.load(Ordering::Relaxed);
    ensure!(
        errors == 0,
        "{errors} CPU-rounds saw a stale stamp after the barrier"
    );
    let leaders = leaders.load(Ordering::Relaxed);
    ensure!(leaders == rounds, "{leaders} leaders in {rounds} rounds");
    Ok(())
}

/// A plain counter that only a lock makes safe to share.
struct Racy(UnsafeCell<u64>);
// SAFETY: `bump` is only called with the test's ticket lock held.
unsafe impl Sync for Racy {}

impl Racy {
    /// # Safety
    /// The caller holds the lock that guards this counter.
    unsafe fn bump(&self) {
        // SAFETY: per the contract, no other CPU accesses the cell meanwhile.
        unsafe { *self.0.get() += 1 };
    }
}

/// Every CPU increments a plain (non-atomic) counter under the ticket lock; the total is
/// exact, and the statistics count every acquisition. Rounds per CPU shrink with the square
/// of the CPU count: under TCG a ticket handover waits until the host runs the
/// next waiter's vCPU thread, so overcommitted vCPUs make each handover slow.
#[ktest]
fn smp_ticket_lock_counter() -> TestResult {
    let n = n_online() as u64;
    let rounds: u64 = (2_000 / (n * n)).max(25);
    let counter: SpinMutex<CounterOff, u64> = SpinMutex::new(0);
    let racy = Racy(UnsafeCell::new(0));
    let raw_lock = TicketLock::<CounterOn>::new();
    CounterOff::data().reset();
    CounterOn::data().reset();
    let b = barrier();
    // Statistics are off while the mutex is hammered (its class must record nothing) and
    // on while the raw lock is.
    ksync::stat::set_enabled(false);
    on_each_cpu(&|_| {
        b.wait();
        for _ in 0..rounds {
            *counter.lock() += 1;
        }
    })
    .map_err(|e| format!("on_each_cpu: {e}"))?;
    ksync::stat::set_enabled(true);
    on_each_cpu(&|_| {
        b.wait();
        for _ in 0..rounds {
            raw_lock.lock();
            // SAFETY: `raw_lock` is held.
            unsafe { racy.bump() };
            // SAFETY: locked just above on this CPU.
            unsafe { raw_lock.unlock() };
        }
    })
    .map_err(|e| format!("on_each_cpu: {e}"))?;
    ksync::stat::set_enabled(false);
    let want = rounds * n_online() as u64;
    let off = CounterOff::data().snapshot();
    ensure!(
        off.acquisitions == 0,
        "statistics recorded while switched off: {off}"
    );
    let got = counter.into_inner();
    ensure!(got == want, "SpinMutex counter {got}, expected {want}");
    let racy = racy.0.into_inner();
    ensure!(
        racy == want,
        "raw ticket lock counter {racy}, expected {want}"
    );
    let s = CounterOn::data().snapshot();
    crate::println!("  lock_stat {}: {s}", CounterOn::NAME);
    ensure!(
        s.acquisitions == want,
        "{} acquisitions recorded, expected {want}",
        s.acquisitions
    );
    ensure!(
        s.contended <= s.acquisitions,
        "more contended than acquisitions: {s}"
    );
    ensure!(
        s.contended == 0 || s.wait_max_cycles > 0,
        "contended acquisitions without wait time: {s}"
    );
    if n_online() == 1 {
        ensure!(s.contended == 0, "contention on one CPU: {s}");
    }
    ensure!(!raw_lock.is_locked(), "lock still held");
    Ok(())
}

/// Contention made certain: cpu 0 holds the lock until every other CPU is queued on it.
/// The statistics then show exactly n-1 contended acquisitions with waits, and the queue is
/// served in ticket (arrival) order.
#[ktest]
fn smp_ticket_lock_contention() -> TestResult {
    let n = n_online();
    let lock = TicketLock::<Contention>::new();
    Contention::data().reset();
    ksync::stat::set_enabled(true);
    let queued = AtomicUsize::new(0);
    let order: PerCpuShared<AtomicUsize> = PerCpuShared::new(|_| AtomicUsize::new(usize::MAX));
    let served = AtomicUsize::new(0);
    let b = barrier();
    on_each_cpu(&|cpu| {
        if cpu == 0 {
            lock.lock();
            b.wait();
            while lock.waiters() < (n - 1) as u16 {
                core::hint::spin_loop();
            }
            // SAFETY: locked above on this CPU.
            unsafe { lock.unlock() };
        } else {
            b.wait();
            // Queue one at a time, in CPU order, so the expected service order is known.
            while queued.load(Ordering::Acquire) != cpu - 1 {
                core::hint::spin_loop();
            }
            queued.fetch_add(1, Ordering::Release);
            lock.lock();
            if let Some(o) = order.get(cpu) {
                o.store(served.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
            }
            // SAFETY: locked just above on this CPU.
            unsafe { lock.unlock() };
        }
    })
    .map_err(|e| format!("on_each_cpu: {e}"))?;
    ksync::stat::set_enabled(false);
    let s = Contention::data().snapshot();
    crate::println!("  lock_stat {}: {s}", Contention::NAME);
    ensure!(
        s.acquisitions == n as u64,
        "{} acquisitions, expected {n}",
        s.acquisitions
    );
    ensure!(
        s.contended == (n - 1) as u64,
        "{} contended acquisitions, expected {}",
        s.contended,
        n - 1
    );
    if n > 1 {
        ensure!(
            s.wait_total_cycles > 0 && s.wait_max_cycles > 0,
            "no wait recorded: {s}"
        );
    }
    Ok(())
}

/// The TSC has a plausible frequency and the ns clock never goes backwards on any CPU.
#[ktest]
fn smp_tsc_clock() -> TestResult {
    let info = info()?;
    let t = info
        .tsc
        .as_ref()
        .map_err(|e| format!("no TSC clock: {e:?}"))?;
    ensure!(
        (100_000_000..=20_000_000_000).contains(&t.hz),
        "implausible TSC frequency {} Hz",
        t.hz
    );
    let backwards = AtomicU32::new(0);
    on_each_cpu(&|_| {
        let mut last = tsc::now_ns();
        for _ in 0..10_000 {
            let now = tsc::now_ns();
            if now < last {
                backwards.fetch_add(1, Ordering::Relaxed);
            }
            last = now;
        }
    })
    .map_err(|e| format!("on_each_cpu: {e}"))?;
    let backwards = backwards.load(Ordering::Relaxed);
    ensure!(backwards == 0, "the clock went backwards {backwards} times");
    let (c0, n0) = (tsc::rdtsc(), tsc::now_ns());
    tsc::delay_us(1_000);
    let (c1, n1) = (tsc::rdtsc(), tsc::now_ns());
    ensure!(
        c1 > c0 && n1 > n0,
        "clock did not advance across a 1 ms delay"
    );
    ensure!(
        n1 - n0 >= 999_000,
        "delay_us(1000) returned after only {} ns",
        n1 - n0
    );
    Ok(())
}
