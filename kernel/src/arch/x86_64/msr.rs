//! `rdmsr` and `wrmsr` that may raise #GP: an MSR the CPU does not implement, or a value it
//! refuses, makes them return an error instead of killing the kernel.
//!
//! Models Linux's `rdmsr_safe()` / `wrmsr_safe()` (arch/x86/include/asm/msr.h), whose access
//! instructions carry `_ASM_EXTABLE_TYPE(..., EX_TYPE_RDMSR_SAFE / EX_TYPE_WRMSR_SAFE)` and
//! whose #GP is resolved by `ex_handler_msr()` (arch/x86/mm/extable.c). Here the two
//! instructions are the only kernel code allowed to #GP, so instead of a second exception
//! table the #GP handler compares RIP with their two addresses: at either one it resumes at
//! `kx_msr_fixup` with `rdx = 1` (the routines return `{value, error}` in `rax`/`rdx`, as the
//! touch routines do, [`super::touch`]); any other #GP stays fatal, reported as before.
//!
//! The probe matters where a CPU or hypervisor *says* it has an MSR (a PMU in CPUID leaf
//! 0xA) but faults on it: a hypervisor that passes the leaf through without emulating the
//! counters, or QEMU's TCG with a CPU model whose CPUID it was told to copy. The first
//! access to a PMU MSR therefore goes through here, never through a bare `rdmsr`.
//!
//! Unsafe code here, and why: MSR reads and writes are privileged instructions; the probing
//! read recovers from #GP through an assembly stub in the exception table.
#![allow(unsafe_code)]

use super::trap::{self, TrapFrame};
use core::sync::atomic::{AtomicU64, Ordering};

/// The #GP vector.
const GENERAL_PROTECTION: u8 = 13;

core::arch::global_asm!(
    r#"
    .section .text.kx_msr, "ax"
    .balign 16

    // MsrRet kx_rdmsr_safe(u32 msr)
    .global kx_rdmsr_safe
kx_rdmsr_safe:
    mov ecx, edi
    .global kx_rdmsr_safe_insn
kx_rdmsr_safe_insn:
    rdmsr
    shl rdx, 32
    or rax, rdx
    xor edx, edx
    ret

    // MsrRet kx_wrmsr_safe(u32 msr, u64 value)
    .global kx_wrmsr_safe
kx_wrmsr_safe:
    mov ecx, edi
    mov eax, esi
    mov rdx, rsi
    shr rdx, 32
    .global kx_wrmsr_safe_insn
kx_wrmsr_safe_insn:
    wrmsr
    xor eax, eax
    xor edx, edx
    ret

    // Both routines resume here after a #GP; the handler has put 1 in rdx.
    .global kx_msr_fixup
kx_msr_fixup:
    xor eax, eax
    ret
    .text
    "#
);

/// What both routines return: `rax`, `rdx`.
#[repr(C)]
struct MsrRet {
    value: u64,
    error: u64,
}

unsafe extern "C" {
    fn kx_rdmsr_safe(msr: u32) -> MsrRet;
    fn kx_wrmsr_safe(msr: u32, value: u64) -> MsrRet;
    static kx_rdmsr_safe_insn: u8;
    static kx_wrmsr_safe_insn: u8;
    static kx_msr_fixup: u8;
}

/// #GPs resolved by the fixup, every CPU together.
static FIXED_UP: AtomicU64 = AtomicU64::new(0);

/// An MSR access raised #GP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsrFault {
    /// The MSR.
    pub msr: u32,
    /// Whether it was a write.
    pub write: bool,
}

impl core::fmt::Display for MsrFault {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let op = if self.write { "wrmsr" } else { "rdmsr" };
        write!(f, "{op} {:#x} raised #GP", self.msr)
    }
}

fn general_protection(frame: &mut TrapFrame) {
    let rd = &raw const kx_rdmsr_safe_insn as u64;
    let wr = &raw const kx_wrmsr_safe_insn as u64;
    if frame.rip == rd || frame.rip == wr {
        frame.rip = &raw const kx_msr_fixup as u64;
        frame.rdx = 1;
        FIXED_UP.fetch_add(1, Ordering::Relaxed);
        return;
    }
    trap::fatal(frame, None, None);
}

/// Installs the #GP handler (boot CPU, once, before the first safe access; the IDT is shared
/// by every CPU, so the APs' accesses are covered too). Every #GP but the two instructions'
/// is still fatal.
pub fn init() {
    trap::register(GENERAL_PROTECTION, general_protection);
}

/// Reads `msr`; a #GP is an error.
pub fn read_safe(msr: u32) -> Result<u64, MsrFault> {
    // SAFETY: `rdmsr` has no memory effects; a #GP resumes at the fixup through the handler
    // `init` installed (the caller's module calls it first). The routine follows the C ABI.
    let r = unsafe { kx_rdmsr_safe(msr) };
    if r.error == 0 {
        Ok(r.value)
    } else {
        Err(MsrFault { msr, write: false })
    }
}

/// Writes `value` to `msr`; a #GP is an error.
///
/// Only for MSRs whose every accepted value leaves memory safety alone (counters, event
/// selects): the caller picks the MSR, this function cannot check what a write does.
pub fn write_safe(msr: u32, value: u64) -> Result<(), MsrFault> {
    // SAFETY: as in `read_safe`; callers write only performance-monitoring MSRs, which
    // change what is counted, nothing the kernel's memory or control flow depends on.
    let r = unsafe { kx_wrmsr_safe(msr, value) };
    if r.error == 0 {
        Ok(())
    } else {
        Err(MsrFault { msr, write: true })
    }
}

/// How many #GPs the fixup has resolved since boot.
#[must_use]
pub fn faults_fixed_up() -> u64 {
    FIXED_UP.load(Ordering::Relaxed)
}
