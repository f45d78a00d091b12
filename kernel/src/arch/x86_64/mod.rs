//! x86_64: boot stub, CPU tables, traps, paging, serial, and the instructions the rest of the
//! kernel needs by name.

pub mod acpi;
pub mod apic;
pub mod boot;
pub mod cpu;
pub mod gdt;
pub mod intrinsics;
pub mod multiboot;
pub mod numa;
pub mod paging;
pub mod percpu;
pub mod serial;
pub mod smp;
pub mod srat;
pub mod trap;
pub mod tsc;

/// Runs `f` with interrupts disabled on this CPU, restoring the previous state after.
pub fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
    ::x86_64::instructions::interrupts::without_interrupts(f)
}

/// Index of the executing CPU (0 = the boot CPU).
#[must_use]
pub fn cpu_index() -> usize {
    crate::percpu::cpu_id()
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
