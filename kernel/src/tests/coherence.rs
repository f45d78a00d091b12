//! Known-answer workloads for the coherence model (`coherence`, `kx bench --coherence`).
//!
//! Each test is one marked run (`abi::coherence`) on CPUs 0 and 1 whose cache-line traffic
//! is known in advance, because the two CPUs take strict turns: a CPU acts only after the
//! other acted, so whatever the host's timing, every hand-over moves the line the same way.
//! The test itself checks that the work completed; the *counts* are judged on the host
//! (tests/tests/suite/coherence.rs), which boots these tests under the plugin and compares what
//! it counted on each line with the answer below. Each test prints a
//! `KCOHERENCE test=<name> ops=<n> <line>=<physical address> ...` line naming the lines it
//! used (statics in the kernel image, whose link address is its physical address).
//!
//! | test | per operation, on the named lines (64-byte units) |
//! |---|---|
//! | `coherence_one_counter` | `counter`: one read HITM (the waiter sees the other's increment) and one upgrade (its locked increment invalidates the other's copy) |
//! | `coherence_false_sharing` | `data`: one RFO HITM (each CPU stores to its own field of one line) |
//! | `coherence_separate_lines` | `data`, `other`: none with 64-byte units; one RFO HITM on the pair with 128-byte units |
//! | `coherence_one_cpu` | none (CPU 0 alone does both CPUs' work) |
//! | `coherence_ticket_lock` | `lock`: one RFO HITM per acquisition (the lock word was last written by the other CPU's unlock) |
//!
//! The hand-over itself goes through `turn`, on its own 128-byte pair, which the host does
//! not judge. Without the plugin these are ordinary SMP tests.
//!
//! Unsafe code here, and why: the lock tests release a raw lock that `lock_api` marks
//! unsafe to unlock.
#![allow(unsafe_code)]

use alloc::format;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::bench::window;
use crate::ktest::TestResult;
use crate::percpu::{self, CpuSet};
use crate::sync::TicketLock;
use crate::{ensure, println};
use ktest::ktest;
use lock_api::RawMutex;

ksync::lock_class!(
    /// The lock `coherence_ticket_lock` passes between two CPUs.
    pub PassedLock, "test-coherence-passed"
);

/// Hand-overs per test: enough that the first (cold) accesses are noise, few enough for a
/// second under TCG.
const OPS: u64 = 1000;

/// Four fields at known distances: `a` and `b` share a line, `c` is the other line of their
/// 128-byte pair, `turn` sits on a pair of its own.
#[repr(C, align(256))]
struct Lines {
    a: AtomicU64,
    b: AtomicU64,
    _pad0: [u64; 6],
    c: AtomicU64,
    _pad1: [u64; 7],
    turn: AtomicU64,
    _pad2: [u64; 15],
}

const _: () = {
    assert!(core::mem::offset_of!(Lines, b) == 8);
    assert!(core::mem::offset_of!(Lines, c) == 64);
    assert!(core::mem::offset_of!(Lines, turn) == 128);
    assert!(core::mem::size_of::<Lines>() == 256);
};

impl Lines {
    const fn new() -> Lines {
        Lines {
            a: AtomicU64::new(0),
            b: AtomicU64::new(0),
            _pad0: [0; 6],
            c: AtomicU64::new(0),
            _pad1: [0; 7],
            turn: AtomicU64::new(0),
            _pad2: [0; 15],
        }
    }

    fn reset(&self) {
        for f in [&self.a, &self.b, &self.c, &self.turn] {
            f.store(0, Ordering::Relaxed);
        }
    }
}

static LINES: Lines = Lines::new();

/// The lock word alone on its pair, the data it protects on the next.
#[repr(C, align(256))]
struct LockLines {
    lock: TicketLock<PassedLock>,
    _pad: [u8; 124],
    count: AtomicU64,
}

const _: () = assert!(core::mem::offset_of!(LockLines, count) == 128);

static LOCK_LINES: LockLines = LockLines {
    lock: TicketLock::new(),
    _pad: [0; 124],
    count: AtomicU64::new(0),
};

fn addr<T>(x: &T) -> u64 {
    x as *const T as u64
}

/// One marked run: `work(cpu)` on CPUs 0 and 1, each inside its window.
fn marked_run(work: &(dyn Fn(usize) + Sync)) -> TestResult {
    ensure!(
        percpu::nr_cpu_ids() >= 2,
        "needs 2 CPUs, {} online",
        percpu::nr_cpu_ids()
    );
    let mut set = CpuSet::new();
    set.insert(0);
    set.insert(1);
    window::run_begins();
    let ran = percpu::on_cpus(&set, &|cpu| {
        window::kx_measured_window_begin(cpu as u32);
        work(cpu);
        window::kx_measured_window_end(cpu as u32);
    });
    window::run_ends();
    ran.map_err(|e| format!("on_cpus: {e}"))
}

/// Waits until `turn` is `mine`.
fn wait_for(turn: &AtomicU64, mine: u64) {
    while turn.load(Ordering::Acquire) != mine {
        core::hint::spin_loop();
    }
}

#[ktest(slow)]
fn coherence_one_counter() -> TestResult {
    let l = &LINES;
    l.reset();
    marked_run(&|cpu| {
        // CPU c increments when the count's parity is c: the count itself is the turn.
        let mine = cpu as u64;
        loop {
            let v = l.a.load(Ordering::Acquire);
            if v >= 2 * OPS {
                break;
            }
            if v % 2 == mine {
                l.a.fetch_add(1, Ordering::AcqRel);
            } else {
                core::hint::spin_loop();
            }
        }
    })?;
    let got = l.a.load(Ordering::Relaxed);
    ensure!(got == 2 * OPS, "count {got}, expected {}", 2 * OPS);
    println!(
        "KCOHERENCE test=coherence_one_counter ops={} counter={:#x}",
        2 * OPS,
        addr(&l.a)
    );
    Ok(())
}

/// CPU 0 stores to `first`, CPU 1 to `second`, taking turns through `turn`.
fn alternate(cpu: usize, first: &AtomicU64, second: &AtomicU64, turn: &AtomicU64) {
    let (mine, field) = if cpu == 0 { (0, first) } else { (1, second) };
    for i in 0..OPS {
        wait_for(turn, 2 * i + mine);
        field.store(i + 1, Ordering::Relaxed);
        turn.store(2 * i + mine + 1, Ordering::Release);
    }
}

/// CPU 0 stores to `LINES.a`, CPU 1 to `second`, in turns; the line names `a` as `data`
/// and `second` as `other` when it sits on another line.
fn two_writers(test: &str, second: &AtomicU64) -> TestResult {
    let l = &LINES;
    l.reset();
    marked_run(&|cpu| alternate(cpu, &l.a, second, &l.turn))?;
    ensure!(
        l.a.load(Ordering::Relaxed) == OPS && second.load(Ordering::Relaxed) == OPS,
        "stores lost"
    );
    let other = if addr(second) / 64 == addr(&l.a) / 64 {
        alloc::string::String::new()
    } else {
        format!(" other={:#x}", addr(second))
    };
    println!(
        "KCOHERENCE test={test} ops={} data={:#x}{other} turn={:#x}",
        2 * OPS,
        addr(&l.a),
        addr(&l.turn)
    );
    Ok(())
}

#[ktest(slow)]
fn coherence_false_sharing() -> TestResult {
    two_writers("coherence_false_sharing", &LINES.b)
}

#[ktest(slow)]
fn coherence_separate_lines() -> TestResult {
    two_writers("coherence_separate_lines", &LINES.c)
}

#[ktest(slow)]
fn coherence_one_cpu() -> TestResult {
    let l = &LINES;
    l.reset();
    marked_run(&|cpu| {
        if cpu == 0 {
            for i in 0..OPS {
                l.a.store(i + 1, Ordering::Relaxed);
                l.turn.store(2 * i + 1, Ordering::Release);
                l.b.store(i + 1, Ordering::Relaxed);
                l.turn.store(2 * i + 2, Ordering::Release);
            }
        }
    })?;
    ensure!(l.turn.load(Ordering::Relaxed) == 2 * OPS, "stores lost");
    println!(
        "KCOHERENCE test=coherence_one_cpu ops={} data={:#x} turn={:#x}",
        2 * OPS,
        addr(&l.a),
        addr(&l.turn)
    );
    Ok(())
}

#[ktest(slow)]
fn coherence_ticket_lock() -> TestResult {
    let l = &LOCK_LINES;
    let turn = &LINES.turn;
    turn.store(0, Ordering::Relaxed);
    l.count.store(0, Ordering::Relaxed);
    marked_run(&|cpu| {
        let mine = cpu as u64;
        for i in 0..OPS {
            wait_for(turn, 2 * i + mine);
            l.lock.lock();
            l.count.fetch_add(1, Ordering::Relaxed);
            // SAFETY: this CPU took the lock just above.
            unsafe { l.lock.unlock() };
            turn.store(2 * i + mine + 1, Ordering::Release);
        }
    })?;
    let got = l.count.load(Ordering::Relaxed);
    ensure!(got == 2 * OPS, "count {got}, expected {}", 2 * OPS);
    println!(
        "KCOHERENCE test=coherence_ticket_lock ops={} lock={:#x} count={:#x} turn={:#x}",
        2 * OPS,
        addr(&l.lock),
        addr(&l.count),
        addr(turn)
    );
    Ok(())
}
