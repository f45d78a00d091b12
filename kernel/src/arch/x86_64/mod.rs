//! x86_64: boot stub, CPU tables, traps, paging, serial, the page-fault path's platform
//! side (address-space slot, PTE encoding, touch routines, exception table, #PF dispatch,
//! TLB shootdown), the APIC-timer sampling profiler, and the instructions the rest of the kernel needs by name.
//!
//! Unsafe code here, and why: switching to a new stack is assembly that never returns.
#![allow(unsafe_code)]

pub mod acpi;
pub mod apic;
pub mod aspace;
pub mod boot;
pub mod clear_page;
pub mod cpu;
pub mod extable;
pub mod fault;
pub mod gdt;
pub mod intrinsics;
pub mod mmu;
pub mod msr;
pub mod multiboot;
pub mod numa;
pub mod paging;
pub mod percpu;
pub mod pic;
pub mod pmu;
pub mod profile;
pub mod pte;
pub mod serial;
pub mod smp;
pub mod srat;
pub mod tlb;
pub mod touch;
pub mod trap;
pub mod tsc;
pub mod vmlayout;

/// Installs the page-fault and TLB-shootdown handlers, masks the legacy PICs and enables
/// interrupts on the boot CPU, which from then on serves IPIs like every other CPU (the APs
/// run with interrupts enabled from their idle loop). A region fault needs IF set, and a
/// CPU that never takes IPIs would stall every shootdown aimed at it. Boot CPU, once, after
/// SMP bring-up.
pub fn start_interrupts() {
    fault::init();
    tlb::init();
    pic::disable();
    ::x86_64::instructions::interrupts::enable();
}

/// Runs `f` with interrupts disabled on this CPU, restoring the previous state after.
pub fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
    ::x86_64::instructions::interrupts::without_interrupts(f)
}

/// Index of the executing CPU (0 = the boot CPU).
#[must_use]
pub fn cpu_index() -> usize {
    percpu::cpu_id()
}

/// Moves execution to a new stack: calls `f(arg)` with `rsp = top`. Never returns.
///
/// # Safety
/// `top` must be the 16-byte aligned top of a mapped, unused stack, and nothing on the
/// current stack may be used afterwards (it is abandoned).
pub unsafe fn switch_stack(top: u64, f: extern "C" fn(usize) -> !, arg: usize) -> ! {
    // SAFETY: per the contract, `top` is a valid empty stack; `f` never returns, so the
    // abandoned stack is never popped into.
    unsafe {
        core::arch::asm!(
            "mov rsp, {top}",
            "xor ebp, ebp",
            "call {f}",
            "ud2",
            top = in(reg) top,
            f = in(reg) f,
            in("rdi") arg,
            options(noreturn),
        )
    }
}
