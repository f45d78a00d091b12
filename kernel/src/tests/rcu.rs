//! RCU tests: a `call_rcu` callback runs only after every online CPU has passed a
//! quiescent state, at the point the kernel says callbacks run; `synchronize_rcu` from an
//! AP completes while the other CPUs report.

use crate::ensure;
use crate::ktest::TestResult;
use crate::percpu::{self, CpuSet, on_cpus, on_each_cpu};
use crate::rcu;
use crate::sync::Barrier;
use alloc::format;
use alloc::sync::Arc;
use core::num::NonZeroU32;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use ktest::ktest;

/// A callback queued straight on the domain (as the memcg tree queues its frees, not
/// through [`rcu::call_rcu`]) is counted and runs; afterwards a quiescent point with
/// nothing queued takes no lock of the callback queue. (The kernel once counted only its own
/// wrapper's callbacks: running the tree's wrapped the count, and every quiescent point of
/// every CPU took the queue's lock for the rest of the boot.)
#[ktest]
fn rcu_idle_quiescent_points_leave_the_queue_alone() -> TestResult {
    use ksync::LockClass;
    let r = rcu::get().ok_or("RCU is not running")?;
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    r.call_rcu(move || flag.store(true, Ordering::Release));
    ensure!(
        r.has_callbacks(),
        "a directly queued callback is not counted"
    );
    let mut rounds = 0;
    while !ran.load(Ordering::Acquire) {
        ensure!(rounds < 100_000, "the callback never ran");
        let _ = rcu::synchronize_rcu();
        rcu::quiescent();
        rounds += 1;
    }
    ensure!(
        !r.has_callbacks() && rcu::pending() == 0,
        "callbacks left after the only one ran: {}",
        rcu::pending()
    );
    ksync::stat::set_enabled(true);
    let class = <ksync::rcu::RcuCallbackLock as LockClass>::data();
    let before = class.snapshot();
    for _ in 0..100 {
        rcu::quiescent();
    }
    let took = class.snapshot().since(&before).acquisitions;
    ksync::stat::set_enabled(false);
    ensure!(
        took == 0,
        "100 idle quiescent points took the queue's lock {took} times"
    );
    Ok(())
}

/// A cookie from `start_poll_synchronize_rcu` (the memcg reaper's way of waiting) completes
/// at the CPUs' quiescent points alone, with no callback queued to drive a grace period: a
/// plain `get_state_synchronize_rcu` cookie would wait for someone else's. Every CPU reports
/// in a loop until the cookie completes; a bounded number of rounds, so a cookie that never
/// completes fails the test instead of hanging it.
#[ktest]
fn rcu_polled_cookie_completes_without_callbacks() -> TestResult {
    let r = rcu::get().ok_or("RCU is not running")?;
    ensure!(
        rcu::pending() == 0,
        "callbacks already queued: {}",
        rcu::pending()
    );
    let cookie = r.start_poll_synchronize_rcu();
    ensure!(
        r.gp_needed(),
        "a started poll is not reported as needing a grace period"
    );
    let n = percpu::nr_cpu_ids();
    let b = Barrier::new(NonZeroU32::new(n as u32).unwrap_or(NonZeroU32::MIN));
    let done = AtomicBool::new(false);
    on_each_cpu(&|_| {
        b.wait();
        for _ in 0..100_000 {
            rcu::quiescent();
            if r.poll_state_synchronize_rcu(cookie) {
                done.store(true, Ordering::Release);
            }
            if done.load(Ordering::Acquire) {
                break;
            }
            core::hint::spin_loop();
        }
        b.wait();
    })
    .map_err(|e| format!("on_each_cpu: {e}"))?;
    ensure!(
        r.poll_state_synchronize_rcu(cookie),
        "cookie {cookie} never completed (completed {})",
        r.completed()
    );
    ensure!(
        !r.gp_needed(),
        "still needing a grace period after it completed"
    );
    Ok(())
}

/// The boot CPU queues a callback and then asks for it at its quiescent point, which drives
/// a grace period; each AP, one at a time, checks that the callback has not run, counts
/// itself, and reports. The callback records how many APs had reported when it ran: all of
/// them, or it ran too early. On one CPU the callback runs at the boot CPU's own report.
#[ktest]
fn rcu_callback_after_every_cpu() -> TestResult {
    ensure!(rcu::get().is_some(), "RCU is not running");
    let n = percpu::nr_cpu_ids();
    let b = Barrier::new(NonZeroU32::new(n as u32).unwrap_or(NonZeroU32::MIN));
    let reported = Arc::new(AtomicU64::new(0));
    let ran_at = Arc::new(AtomicU64::new(u64::MAX));
    let ran_on = Arc::new(AtomicU64::new(u64::MAX));
    let queued = AtomicBool::new(false);
    let early = AtomicU64::new(0);
    let pending_before = rcu::pending();
    on_each_cpu(&|cpu| {
        b.wait();
        if cpu == 0 {
            let (r, at, on) = (reported.clone(), ran_at.clone(), ran_on.clone());
            rcu::call_rcu(move || {
                at.store(r.load(Ordering::Acquire), Ordering::Release);
                on.store(percpu::cpu_id() as u64, Ordering::Release);
            });
            if ran_at.load(Ordering::Acquire) != u64::MAX {
                early.fetch_add(1, Ordering::Relaxed);
            }
            queued.store(true, Ordering::Release);
            // Drives a grace period: waits here until every AP has reported.
            while ran_at.load(Ordering::Acquire) == u64::MAX {
                rcu::quiescent();
            }
        } else {
            while !queued.load(Ordering::Acquire) {
                core::hint::spin_loop();
            }
            // One AP at a time, in CPU order.
            while reported.load(Ordering::Acquire) != (cpu - 1) as u64 {
                core::hint::spin_loop();
            }
            if ran_at.load(Ordering::Acquire) != u64::MAX {
                early.fetch_add(1, Ordering::Relaxed);
            }
            reported.fetch_add(1, Ordering::AcqRel);
            // Keep reporting until the callback ran: a report made before the grace period
            // started does not count for it.
            while ran_at.load(Ordering::Acquire) == u64::MAX {
                rcu::quiescent();
                core::hint::spin_loop();
            }
        }
    })
    .map_err(|e| format!("on_each_cpu: {e}"))?;
    let early = early.load(Ordering::Relaxed);
    ensure!(
        early == 0,
        "the callback ran before {early} CPU(s) reported"
    );
    let at = ran_at.load(Ordering::Acquire);
    ensure!(
        at == (n - 1) as u64,
        "the callback ran when {at} of {} APs had reported",
        n - 1
    );
    let on = ran_on.load(Ordering::Acquire);
    ensure!(on < n as u64, "the callback ran on cpu {on}");
    ensure!(
        rcu::pending() == pending_before,
        "{} callbacks pending, {pending_before} before",
        rcu::pending()
    );
    crate::println!("  callback ran on cpu {on} after {at} AP reports");
    Ok(())
}

/// An AP (or the boot CPU alone) waits for a grace period while the others report; a
/// callback queued before it runs at the next quiescent point of a CPU that sees the
/// grace period completed.
#[ktest]
fn rcu_synchronize_from_any_cpu() -> TestResult {
    ensure!(rcu::get().is_some(), "RCU is not running");
    let n = percpu::nr_cpu_ids();
    let waiter = n - 1;
    let done = AtomicBool::new(false);
    let gp = AtomicU64::new(0);
    let ran = Arc::new(AtomicBool::new(false));
    let b = Barrier::new(NonZeroU32::new(n as u32).unwrap_or(NonZeroU32::MIN));
    on_each_cpu(&|cpu| {
        b.wait();
        if cpu == waiter {
            let r = ran.clone();
            rcu::call_rcu(move || r.store(true, Ordering::Release));
            if let Ok(g) = rcu::synchronize_rcu() {
                gp.store(g, Ordering::Relaxed);
            }
            // The grace period covers the callback: this CPU's quiescent point runs it.
            rcu::quiescent();
            done.store(true, Ordering::Release);
        } else {
            while !done.load(Ordering::Acquire) {
                rcu::quiescent();
                core::hint::spin_loop();
            }
        }
    })
    .map_err(|e| format!("on_each_cpu: {e}"))?;
    ensure!(
        done.load(Ordering::Acquire),
        "synchronize_rcu did not return"
    );
    ensure!(gp.load(Ordering::Relaxed) > 0, "synchronize_rcu failed");
    ensure!(
        ran.load(Ordering::Acquire),
        "the callback did not run after its grace period"
    );
    let completed = rcu::completed();
    ensure!(
        completed >= gp.load(Ordering::Relaxed),
        "completed {completed} < waited-for gp"
    );
    Ok(())
}

/// The last CPU waits for a grace period inside a cross-CPU call while its caller, the
/// boot CPU, only waits for the call to return: the caller is in an extended quiescent
/// state meanwhile, so the grace period completes (this would hang otherwise).
#[ktest]
fn rcu_synchronize_inside_a_call() -> TestResult {
    let target = percpu::nr_cpu_ids() - 1;
    let mut set = CpuSet::new();
    set.insert(target);
    let gp = AtomicU64::new(0);
    let before = rcu::completed();
    on_cpus(&set, &|_| {
        if let Ok(g) = rcu::synchronize_rcu() {
            gp.store(g, Ordering::Relaxed);
        }
    })
    .map_err(|e| format!("on_cpus: {e}"))?;
    let g = gp.load(Ordering::Relaxed);
    ensure!(g > before, "grace period {g}, {before} completed before");
    Ok(())
}
