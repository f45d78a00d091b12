//! GS-base glue for per-CPU data: where `gs:[0]` points on each CPU.
//!
//! Models Linux's `setup_per_cpu_areas` / `load_percpu_segment` (x86_64): each CPU's
//! IA32_GS_BASE MSR holds the address of its own [`crate::percpu::CpuArea`], whose first
//! word points at itself and whose second word is the CPU id. Reading the id is then one
//! `mov reg, gs:[8]`, with no table lookup and no shared cache line. The kernel never runs
//! user code, so it never executes `swapgs` and KERNEL_GS_BASE stays unused.
//!
//! [`counter_inc`] is Linux's `this_cpu_inc` for event counters that one CPU writes and
//! others only read: one `inc` instruction without `lock`.
//!
//! Unsafe code here, and why: each CPU's area is reached through GS, whose base is an MSR
//! write.
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use x86_64::VirtAddr;
use x86_64::registers::model_specific::GsBase;

/// Set once the boot CPU's GS base is valid; before that only the boot CPU runs.
static READY: AtomicBool = AtomicBool::new(false);

/// Points this CPU's GS base at `area`.
///
/// # Safety
/// `area` must point to a `CpuArea` that lives forever, is never moved, and belongs to this
/// CPU alone (its first word its own address, its second word this CPU's id).
pub unsafe fn set_gs_base(area: *const u8) {
    GsBase::write(VirtAddr::from_ptr(area));
}

/// What GS points at on the boot CPU until its real area exists: a zero self pointer and id
/// 0 at [`CPU_ID_OFFSET`], so that the CPU id is a GS load from the first instruction of Rust
/// code on (`ksync::this_cpu` reads it without a test in a kernel built with
/// `--cfg ksync_gs_cpu_id`; the APs' trampoline installs their own areas before Rust code).
#[repr(C, align(128))]
struct BootArea {
    self_ptr: usize,
    cpu: usize,
}

const _: () = assert!(core::mem::offset_of!(BootArea, cpu) == CPU_ID_OFFSET);
const _: () = assert!(CPU_ID_OFFSET == ksync::cpu::GS_CPU_ID_OFFSET);

static BOOT_AREA: BootArea = BootArea {
    self_ptr: 0,
    cpu: 0,
};

/// Points the boot CPU's GS base at the static boot area (id 0) until `init_boot_cpu`
/// installs its real one.
///
/// # Safety
/// Boot CPU only, before any other CPU runs and before its real area is installed (this
/// would replace it).
pub unsafe fn install_boot_area() {
    GsBase::write(VirtAddr::from_ptr(&raw const BOOT_AREA));
}

/// Marks GS base usable (after the boot CPU's [`set_gs_base`]).
pub fn mark_ready() {
    READY.store(true, Ordering::Release);
}

/// Whether per-CPU areas are installed.
#[must_use]
pub fn ready() -> bool {
    READY.load(Ordering::Acquire)
}

/// Offset of the CPU id in every CPU's area (`gs:[8]`; [`crate::percpu::CpuArea`] is laid
/// out to match).
pub const CPU_ID_OFFSET: usize = 8;

/// The id of the running CPU (0 before per-CPU areas exist, when only the boot CPU runs):
/// one `mov reg, gs:[8]` (`raw_smp_processor_id()`).
#[inline]
#[must_use]
pub fn cpu_id() -> usize {
    gs_word::<CPU_ID_OFFSET>() as usize
}

/// Reads the word at `gs:[offset]` (0 before the boot CPU's area is installed).
#[inline]
#[must_use]
pub fn gs_word<const OFFSET: usize>() -> u64 {
    if !READY.load(Ordering::Relaxed) {
        return 0;
    }
    let v: u64;
    // SAFETY: once READY is set every running CPU has installed its area (APs do it before
    // anything else on their way in), and OFFSET is a field offset inside `CpuArea`.
    unsafe {
        core::arch::asm!(
            "mov {v}, gs:[{off}]",
            v = out(reg) v,
            off = const OFFSET,
            options(nostack, preserves_flags, readonly)
        );
    }
    v
}

/// Adds one to `counter`, a per-CPU event counter that only the running CPU writes (Linux's
/// `this_cpu_inc`). One `inc` on memory, without `lock`: an interrupt lands before or after
/// it, never in the middle, so counts from thread context, the page-fault handler and IPI
/// handlers of the same CPU are never lost; other CPUs read the counter with plain loads and
/// see the old or the new value. Cheaper than `fetch_add`, whose `lock` prefix drains the
/// store buffer on every event.
#[inline]
pub fn counter_inc(counter: &AtomicU64) {
    // SAFETY: `counter` is a valid, aligned u64 (an AtomicU64), and the aligned 8-byte store
    // of `inc` is single-copy atomic, so concurrent atomic loads on other CPUs are sound. A
    // second writer on another CPU would only lose counts (the RMW is not locked), never
    // corrupt memory.
    unsafe {
        core::arch::asm!(
            "inc qword ptr [{0}]",
            in(reg) counter.as_ptr(),
            options(nostack)
        );
    }
}
