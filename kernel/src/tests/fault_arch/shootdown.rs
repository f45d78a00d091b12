//! TLB shootdown tests: a remapped page is seen everywhere after a shootdown (and, without
//! one, whether TCG keeps the stale translation), two CPUs shooting down at once while every
//! CPU faults, and a shootdown into a CPU that waits inside its own fault handler.
//!
//! Unsafe code here, and why: the shootdown tests write frames through the direct map while
//! other CPUs hold them mapped.
#![allow(unsafe_code)]

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::num::NonZeroU32;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use ktest::ktest;

use super::harness::{Ctx, Space, map_fresh, pte_slot, wait_until};
use crate::arch::fault::{self, FaultError};
use crate::arch::pte::{PMD_SIZE, Pte, PteProt};
use crate::arch::tlb::{self, TlbFlush};
use crate::arch::touch;
use crate::ensure;
use crate::ktest::TestResult;
use crate::mm::frame_pool::{recycle, zeroed_frame};
use crate::mm::phys_to_virt;
use crate::percpu::{self, CpuSet, PerCpuShared, on_cpus, on_each_cpu};
use crate::sync::{Barrier, KernelLock, SpinMutex};
use x86_64::PhysAddr;

/// Each CPU reads the u64 at `addr` into its slot of `out` (u64::MAX on a touch error).
fn read_everywhere(addr: u64, out: &PerCpuShared<AtomicU64>) -> TestResult {
    on_each_cpu(&|cpu| {
        let v = touch::touch_read_u64(addr).unwrap_or(u64::MAX);
        if let Some(s) = out.get(cpu) {
            s.store(v, Ordering::SeqCst);
        }
    })
    .map_err(|e| format!("on_each_cpu: {e}"))
}

#[ktest]
pub(super) fn fault_tlb_shootdown_replaces_translation() -> TestResult {
    const X: u64 = 0xaaaa_0000_0000_0001;
    const Y: u64 = 0xbbbb_0000_0000_0002;
    let ctx = Ctx::new();
    let sp = Space::new(&ctx)?;
    let p = sp.start() + 0x5000;
    // Any fault on P would remap it behind the test's back: make it fail instead.
    ctx.fail(p, FaultError::Injected);
    let x = zeroed_frame().ok_or("out of frames")?;
    let y = zeroed_frame().ok_or("out of frames")?;
    for (f, v) in [(x, X), (y, Y)] {
        // SAFETY: fresh frames owned by the test, written through the direct map.
        unsafe { phys_to_virt(f).as_mut_ptr::<u64>().write_volatile(v) };
    }
    map_fresh(sp.start()).map_err(|e| format!("map: {e}"))?; // links the page table
    let slot = pte_slot(p)?;
    let map = |f: PhysAddr| {
        let pte = Pte::new(f, PteProt::read_write()).map_err(|e| format!("{e}"))?;
        Ok::<Pte, String>(Pte::from_raw(slot.swap(pte.raw(), Ordering::AcqRel)))
    };
    map(x)?;
    let n = percpu::nr_cpu_ids();
    let seen: PerCpuShared<AtomicU64> = PerCpuShared::new(|_| AtomicU64::new(0));
    let me = percpu::cpu_id();
    let mut others = CpuSet::new();
    for c in (0..n).filter(|&c| c != me) {
        others.insert(c);
    }

    // Every CPU caches P -> X.
    read_everywhere(p, &seen)?;
    for c in 0..n {
        let v = seen.get(c).map_or(0, |s| s.load(Ordering::SeqCst));
        ensure!(v == X, "cpu {c} read {v:#x} through P -> X");
    }
    // P -> Y with a shootdown: every CPU must see Y.
    let before: Vec<_> = (0..n).map(tlb::stats).collect();
    map(y)?;
    tlb::flush_tlb_local(p);
    tlb::flush_tlb_others(&others, &TlbFlush::Pages(&[p])).map_err(|e| format!("{e}"))?;
    read_everywhere(p, &seen)?;
    for c in 0..n {
        let v = seen.get(c).map_or(0, |s| s.load(Ordering::SeqCst));
        ensure!(
            v == Y,
            "cpu {c} read {v:#x} after the shootdown, expected Y {Y:#x}"
        );
    }
    let mine = tlb::stats(me).since(&before[me]);
    ensure!(
        mine.shootdowns == u64::from(n > 1) && mine.ipis_sent == n as u64 - 1,
        "sender counted {mine:?}"
    );
    for c in others.iter() {
        let d = tlb::stats(c).since(&before[c]);
        ensure!(d.requests_served == 1, "cpu {c} served {d:?}");
    }
    // P -> X again, flushing only this CPU: the others may keep the stale Y.
    map(x)?;
    tlb::flush_tlb_local(p);
    read_everywhere(p, &seen)?;
    let mut stale = 0;
    for c in 0..n {
        let v = seen.get(c).map_or(0, |s| s.load(Ordering::SeqCst));
        if c == me {
            ensure!(v == X, "the flushing cpu read {v:#x}, expected X");
        } else {
            ensure!(v == X || v == Y, "cpu {c} read {v:#x}");
            stale += usize::from(v == Y);
        }
    }
    crate::println!(
        "  tlb: without a shootdown {stale} of {} other CPUs still read the old frame",
        n - 1
    );
    tlb::flush_tlb_cpus(&CpuSet::online(), &TlbFlush::Pages(&[p])).map_err(|e| format!("{e}"))?;
    slot.store(0, Ordering::Release);
    tlb::flush_tlb_cpus(&CpuSet::online(), &TlbFlush::Pages(&[p])).map_err(|e| format!("{e}"))?;
    recycle(x);
    recycle(y);
    sp.teardown(1)
}

#[ktest]
pub(super) fn fault_tlb_concurrent_shootdowns() -> TestResult {
    let n = percpu::nr_cpu_ids();
    let rounds = (240 / n as u64).max(40);
    let ctx = Ctx::new();
    let sp = Space::new(&ctx)?;
    let base = sp.start();
    // CPUs 0 and 1 shoot down at each other and at everyone else; every CPU faults
    // meanwhile, each in its own 2 MiB (the first faults race to create the PD). On odd
    // rounds both senders line up and shoot down with interrupts disabled: neither can take
    // the other's IPI, so each finishes only by serving the other's request while it waits.
    let senders = n.min(2);
    let pair = Barrier::new(NonZeroU32::new(senders as u32).unwrap_or(NonZeroU32::MIN));
    let before: Vec<_> = (0..n).map(tlb::stats).collect();
    let fbefore: Vec<_> = (0..n).map(fault::stats).collect();
    let errors = AtomicUsize::new(0);
    let first_error: SpinMutex<KernelLock, Option<String>> = SpinMutex::new(None);
    let fail = |e: String| {
        errors.fetch_add(1, Ordering::SeqCst);
        first_error.lock().get_or_insert(e);
    };
    let b = Barrier::new(NonZeroU32::new(n as u32).unwrap_or(NonZeroU32::MIN));
    on_each_cpu(&|cpu| {
        b.wait();
        let mine = base + cpu as u64 * PMD_SIZE;
        for r in 0..rounds {
            let page = mine + (r % 512) * 4096;
            let v = (cpu as u64) << 32 | r;
            match touch::touch_write_u64(page, v).and_then(|()| touch::touch_read_u64(page)) {
                Ok(got) if got == v => {}
                other => fail(format!("cpu {cpu} round {r}: {other:?}")),
            }
            if let Ok(slot) = pte_slot(page) {
                let old = Pte::from_raw(slot.swap(0, Ordering::AcqRel));
                tlb::flush_tlb_local(page);
                if old.present() {
                    recycle(old.frame());
                }
            }
            if cpu < senders {
                let mut others = CpuSet::new();
                for c in (0..n).filter(|&c| c != cpu) {
                    others.insert(c);
                }
                let flush = TlbFlush::Pages(&[page]);
                let res = if r % 2 == 1 {
                    pair.wait();
                    x86_64::instructions::interrupts::without_interrupts(|| {
                        tlb::flush_tlb_others(&others, &flush)
                    })
                } else {
                    tlb::flush_tlb_others(&others, &flush)
                };
                if let Err(e) = res {
                    fail(format!("cpu {cpu} round {r}: shootdown {e}"));
                }
            }
        }
    })
    .map_err(|e| format!("on_each_cpu: {e}"))?;
    if let Some(e) = first_error.lock().take() {
        return Err(format!(
            "{} errors, first: {e}",
            errors.load(Ordering::SeqCst)
        ));
    }
    let d: Vec<_> = (0..n).map(|c| tlb::stats(c).since(&before[c])).collect();
    let want_served = rounds * (n as u64 - 1) * senders as u64;
    let served: u64 = d.iter().map(|s| s.requests_served).sum();
    let sent: u64 = d.iter().map(|s| s.ipis_sent).sum();
    let received: u64 = d.iter().map(|s| s.ipis_received).sum();
    for (c, s) in d.iter().enumerate().take(senders) {
        let want = if n > 1 { rounds } else { 0 };
        ensure!(
            s.shootdowns == want && s.ipis_sent == want * (n as u64 - 1),
            "cpu {c} sent {s:?}, expected {want} shootdowns"
        );
    }
    ensure!(
        served == want_served,
        "{served} requests served, {want_served} sent"
    );
    ensure!(received <= sent, "{received} IPIs received, {sent} sent");
    for (c, fb) in fbefore.iter().enumerate() {
        let resolved = fault::stats(c).resolved - fb.resolved;
        ensure!(
            resolved == rounds,
            "cpu {c} resolved {resolved} faults, expected {rounds}"
        );
    }
    crate::println!(
        "  tlb: {senders} senders x {rounds} rounds on {n} CPUs: {sent} IPIs sent, {received} \
         taken, {served} requests served"
    );
    sp.teardown(n as u64)
}

#[ktest]
pub(super) fn fault_handler_serves_shootdown() -> TestResult {
    let n = percpu::nr_cpu_ids();
    if n < 2 {
        crate::println!("  one CPU: no other CPU to shoot down from");
        return Ok(());
    }
    for (faulter, shooter) in [(0usize, 1usize), (1, 0)] {
        let ctx = Ctx::new();
        let sp = Space::new(&ctx)?;
        ctx.wait.store(true, Ordering::SeqCst);
        let p = sp.start() + 0x2000;
        let touched = SpinMutex::<KernelLock, _>::new(None);
        let shot = SpinMutex::<KernelLock, _>::new(None);
        let mut set = CpuSet::new();
        set.insert(faulter);
        set.insert(shooter);
        on_cpus(&set, &|cpu| {
            if cpu == faulter {
                *touched.lock() = Some(touch::touch_write_u64(p, 42));
            } else {
                let entered = wait_until(10_000, || ctx.in_handler.load(Ordering::SeqCst));
                let before = tlb::stats(faulter);
                let mut target = CpuSet::new();
                target.insert(faulter);
                let r = entered.then(|| tlb::flush_tlb_others(&target, &TlbFlush::Pages(&[p])));
                let served = tlb::stats(faulter).since(&before).requests_served;
                ctx.release.store(true, Ordering::SeqCst);
                *shot.lock() = Some((r, served));
            }
        })
        .map_err(|e| format!("on_cpus: {e}"))?;
        let touched = touched.lock().take();
        let shot = shot.lock().take();
        ensure!(
            touched == Some(Ok(())),
            "cpu {faulter}: touch returned {touched:?}"
        );
        ensure!(
            ctx.saw_if.load(Ordering::SeqCst),
            "cpu {faulter}'s handler ran with interrupts disabled"
        );
        match shot {
            Some((Some(Ok(())), served)) if served >= 1 => {}
            other => {
                return Err(format!(
                    "cpu {shooter} shooting down cpu {faulter} in its handler: {other:?}"
                ));
            }
        }
        sp.teardown(1)?;
    }
    Ok(())
}
