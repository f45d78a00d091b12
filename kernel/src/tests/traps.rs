//! Trap tests: a registered handler returns to the interrupted code with registers and SSE
//! state intact.
//!
//! Unsafe code here, and why: the trap tests raise exceptions and clobber registers with
//! inline assembly.
#![allow(unsafe_code)]

use crate::arch::trap::{self, TrapFrame, vector};
use crate::ensure;
use crate::ktest::TestResult;
use core::sync::atomic::{AtomicU64, Ordering};
use ktest::ktest;

static HITS: AtomicU64 = AtomicU64::new(0);
static SEEN_RAX: AtomicU64 = AtomicU64::new(0);

fn on_breakpoint(frame: &mut TrapFrame) {
    HITS.fetch_add(1, Ordering::SeqCst);
    SEEN_RAX.store(frame.rax, Ordering::SeqCst);
    // Use SSE in the handler so an unsaved XMM state would be visibly clobbered.
    let x = core::hint::black_box(1.5f64) * core::hint::black_box(3.25f64);
    core::hint::black_box(x / core::hint::black_box(0.75f64));
}

#[ktest]
fn trap_breakpoint_returns() -> TestResult {
    trap::register(vector::BREAKPOINT, on_breakpoint);
    let before = HITS.load(Ordering::SeqCst);
    let rax: u64;
    // SAFETY: int3 traps to the handler registered above, which returns; rax is preserved.
    unsafe { core::arch::asm!("mov rax, 0x1234abcd", "int3", out("rax") rax) };
    trap::unregister(vector::BREAKPOINT);
    ensure!(
        HITS.load(Ordering::SeqCst) == before + 1,
        "handler did not run exactly once"
    );
    ensure!(
        SEEN_RAX.load(Ordering::SeqCst) == 0x1234_abcd,
        "frame did not hold rax"
    );
    ensure!(rax == 0x1234_abcd, "rax changed across the trap: {rax:#x}");
    Ok(())
}

#[ktest]
fn trap_sse_preserved() -> TestResult {
    trap::register(vector::BREAKPOINT, on_breakpoint);
    let lo: u64;
    // SAFETY: loads a pattern into xmm0, traps (handler uses SSE and returns), reads xmm0 back.
    unsafe {
        core::arch::asm!(
            "mov rax, 0x0123456789abcdef",
            "movq xmm0, rax",
            "int3",
            "movq {lo}, xmm0",
            lo = out(reg) lo,
            out("rax") _,
            out("xmm0") _,
        )
    };
    trap::unregister(vector::BREAKPOINT);
    ensure!(
        lo == 0x0123_4567_89ab_cdef,
        "xmm0 clobbered by the trap: {lo:#x}"
    );
    Ok(())
}
