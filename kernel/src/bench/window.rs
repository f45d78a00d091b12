//! The edges of a worker's measured window, as two functions an emulator's trace can find and
//! as stores to the page the coherence plugin watches.
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
//! Inside the window, untimed work (pft's unmap, done with the worker's clock paused) runs
//! between [`kx_measured_window_pause`] and [`kx_measured_window_resume`]: the counter
//! leaves out what executes between the two, as the engine leaves its time out.
//!
//! The same four functions, and [`run_begins`]/[`run_ends`] around each run, store to
//! [`KX_COHERENCE_MARK`], the page whose physical address the runner passes to the
//! coherence plugin (`kx bench --coherence`): which offset was written says which mark it
//! is (`abi::coherence`), and the storing vCPU is the one the mark is about. Without the
//! plugin the stores are writes to a page nobody reads.
//!
//! The window functions are exported under fixed names and never inlined, so the release
//! kernel (fat LTO) keeps one copy of each at its own symbol; their bodies differ (the
//! window's state word is set and cleared; the marks are different offsets), so no pass
//! merges two of them into one address.
//! Their cost, a call and two stores each, falls outside or at the very edge of the window.
//!
//! Unsafe code here, and why: the measured-window markers are `#[unsafe(no_mangle)]`
//! symbols that the instruction counter and the coherence plugin find by name.
#![allow(unsafe_code)]

use abi::coherence::{MARK_SIZE, Mark};
use core::sync::atomic::{AtomicU8, AtomicU32, Ordering};

/// 1 + the CPU whose window is open, 0 when none (what a debugger reads).
static OPEN: AtomicU32 = AtomicU32::new(0);

/// The coherence plugin's mark page (see `abi::coherence`): page-aligned, in the kernel
/// image, whose link address is its physical address.
#[repr(C, align(4096))]
pub struct MarkPage([AtomicU8; MARK_SIZE as usize]);

/// The mark page, exported under `abi::coherence::MARK_SYMBOL` for the runner to find.
///
/// Its bytes start non-zero so that it lands in `.data`: the boot stub zeroes `.bss` with
/// stores, and a zeroed mark page would be a run the plugin sees before the kernel starts.
#[unsafe(no_mangle)]
pub static KX_COHERENCE_MARK: MarkPage =
    MarkPage([const { AtomicU8::new(0xff) }; MARK_SIZE as usize]);

/// Stores mark `m` from this CPU.
pub fn mark(m: Mark) {
    KX_COHERENCE_MARK.0[m.offset() as usize].store(1, Ordering::Relaxed);
}

/// A run begins: marked once, before its workers start.
pub fn run_begins() {
    mark(Mark::RunBegin);
}

/// The run ended: every worker returned.
pub fn run_ends() {
    mark(Mark::RunEnd);
}

/// A worker's measured window opens on `cpu`.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn kx_measured_window_begin(cpu: u32) {
    OPEN.store(cpu.wrapping_add(1), Ordering::Relaxed);
    mark(Mark::WindowBegin);
}

/// Untimed work starts inside the measured window of `cpu`: nothing until
/// [`kx_measured_window_resume`] counts.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn kx_measured_window_pause(cpu: u32) {
    let _ = cpu;
    mark(Mark::WindowPause);
}

/// The untimed work of `cpu` is done: its window counts again.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn kx_measured_window_resume(cpu: u32) {
    let _ = cpu;
    mark(Mark::WindowResume);
}

/// The measured window of `cpu` closes.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn kx_measured_window_end(cpu: u32) {
    mark(Mark::WindowEnd);
    let _ = OPEN.compare_exchange(cpu.wrapping_add(1), 0, Ordering::Relaxed, Ordering::Relaxed);
}
