//! The edges of a worker's measured window as two functions an emulator's trace can find.
//!
//! `scripts/guest-insn-count.py` counts the instructions, calls, locked read-modify-writes
//! and divisions the kernel's own machine code executes per operation: it boots the kernel
//! under QEMU's TCG with every translated block's disassembly and every block execution
//! logged (`-d in_asm,exec,nochain`) and sums the blocks run between an execution of
//! [`kx_measured_window_begin`] and the next of [`kx_measured_window_end`]. The engine's
//! platform calls them where it starts and stops a CPU's hardware counters (right before
//! the worker's first batch and after its last), so the window is the one a PMU would
//! count on real hardware; the run record of the same run gives its operations.
//!
//! Both are exported under fixed names and never inlined, so the release kernel (fat LTO)
//! keeps one copy of each at its own symbol; their bodies differ (the window's state word
//! is set and cleared), so no pass merges the two into one address. Their cost, a call and
//! a store each, falls outside or at the very edge of the window.

use core::sync::atomic::{AtomicU32, Ordering};

/// 1 + the CPU whose window is open, 0 when none (what a debugger reads).
static OPEN: AtomicU32 = AtomicU32::new(0);

/// A worker's measured window opens on `cpu`.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn kx_measured_window_begin(cpu: u32) {
    OPEN.store(cpu.wrapping_add(1), Ordering::Relaxed);
}

/// The measured window of `cpu` closes.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn kx_measured_window_end(cpu: u32) {
    let _ = OPEN.compare_exchange(cpu.wrapping_add(1), 0, Ordering::Relaxed, Ordering::Relaxed);
}
