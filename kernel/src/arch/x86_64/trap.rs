//! Interrupt and exception entry: the IDT, 256 assembly entry stubs and the Rust dispatcher.
//!
//! `abi_x86_interrupt` is nightly-only, so entry is hand-written: each vector's stub (16
//! bytes, generated with `.rept`) pushes a zero error code when the CPU does not push one and
//! its vector number, then jumps to `trap_common`, a naked function that saves the general
//! registers and, unless the trap came from the touch routines, the sixteen XMM registers
//! (the compiler uses SSE for floats and for moving data, and an interrupted computation must
//! not see its registers change), calls [`trap_dispatch`] with a pointer to the
//! [`TrapFrame`], restores and `iretq`s. Only the XMM registers are saved, not the whole
//! `fxsave64` image: the kernel is built for the x86_64 baseline (SSE2, no AVX, so no upper
//! YMM halves), never executes x87 instructions (Rust's `f32`/`f64` are SSE) and never
//! changes MXCSR, so the rest of the FPU state cannot differ between the interrupted code and
//! the handler. Under TCG `fxsave64`/`fxrstor64` are helpers that copy 512 bytes each.
//!
//! A trap whose RIP lies in the touch routines' code ([`super::touch`], the only code that
//! accesses the address-space slot, so every region fault) skips the 32 `movdqa`: those
//! routines are C-ABI functions that use no vector register, and the System V ABI makes all
//! sixteen XMM registers caller-saved, so no caller keeps a value in one across the call and
//! none is live when the routine faults. That is the page-fault entry Linux has for user
//! faults (whose vector state the kernel never touches): the general registers, the frame and
//! `iretq`. It costs a range check on RIP (7 instructions) on every trap. Stubs are
//! installed with the `x86_64` crate's `set_handler_addr`.
//!
//! A vector with a registered handler ([`register`]) returns to the interrupted code; any
//! other vector is fatal: it is printed (vector, error code, RIP, CR2 for #PF) and the kernel
//! exits with [`abi::ExitCode::Exception`]. #PF gets its handler from [`super::fault`], which
//! resolves faults on registered regions and sends every other fault to the same [`fatal`]
//! report.
//!
//! Unsafe code here, and why: the entry stubs and the register save and restore are
//! assembly (`global_asm!`, a naked function), and a handler is stored as a `usize` and
//! turned back into its `fn` pointer.
#![allow(unsafe_code)]

use super::gdt;
use core::fmt;
use core::sync::atomic::{AtomicUsize, Ordering};
use spin::Once;
use x86_64::VirtAddr;
use x86_64::structures::idt::InterruptDescriptorTable;

/// Register state saved on entry, lowest address first.
#[repr(C)]
#[derive(Debug)]
#[allow(missing_docs)]
pub struct TrapFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    /// Vector number (pushed by the stub).
    pub vector: u64,
    /// Error code (pushed by the CPU, or 0 by the stub).
    pub error_code: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

/// Vectors 0..32 by name.
pub const EXCEPTION_NAMES: [&str; 32] = [
    "divide error",
    "debug",
    "non-maskable interrupt",
    "breakpoint",
    "overflow",
    "bound range exceeded",
    "invalid opcode",
    "device not available",
    "double fault",
    "coprocessor segment overrun",
    "invalid TSS",
    "segment not present",
    "stack-segment fault",
    "general protection fault",
    "page fault",
    "reserved",
    "x87 floating-point",
    "alignment check",
    "machine check",
    "SIMD floating-point",
    "virtualization",
    "control protection",
    "reserved",
    "reserved",
    "reserved",
    "reserved",
    "reserved",
    "reserved",
    "hypervisor injection",
    "VMM communication",
    "security",
    "reserved",
];

/// Vector numbers.
pub mod vector {
    /// #BP.
    pub const BREAKPOINT: u8 = 3;
    /// #DF.
    pub const DOUBLE_FAULT: u8 = 8;
    /// #PF.
    pub const PAGE_FAULT: u8 = 14;
    /// NMI.
    pub const NMI: u8 = 2;
    /// #MC.
    pub const MACHINE_CHECK: u8 = 18;
}

/// A handler that resolves a trap and returns to the interrupted code.
pub type Handler = fn(&mut TrapFrame);

static HANDLERS: [AtomicUsize; 256] = [const { AtomicUsize::new(0) }; 256];

/// Installs `handler` for `vector` (replacing any previous one).
pub fn register(vector: u8, handler: Handler) {
    HANDLERS[usize::from(vector)].store(handler as usize, Ordering::Release);
}

/// Removes the handler for `vector`: it becomes fatal again.
pub fn unregister(vector: u8) {
    HANDLERS[usize::from(vector)].store(0, Ordering::Release);
}

core::arch::global_asm!(
    r#"
    .section .text.trap_stubs, "ax"
    .balign 16
    .global trap_stubs_start
trap_stubs_start:
    .set vec, 0
    .rept 256
    .balign 16
    .if (vec == 8) || (vec >= 10 && vec <= 14) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
    .else
    push 0
    .endif
    push vec
    jmp {common}
    .set vec, vec + 1
    .endr
    "#,
    common = sym trap_common,
);

unsafe extern "C" {
    static trap_stubs_start: u8;
    // The bounds of the touch routines' code, labels that `super::touch` defines around them
    // (a link-level contract, as Linux's entry code reads linker-defined section bounds):
    // only the addresses are used.
    static kx_touch_text_start: u8;
    static kx_touch_text_end: u8;
}

#[unsafe(naked)]
unsafe extern "C" fn trap_common() {
    core::arch::naked_asm!(
        "push rax",
        "push rbx",
        "push rcx",
        "push rdx",
        "push rsi",
        "push rdi",
        "push rbp",
        "push r8",
        "push r9",
        "push r10",
        "push r11",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "mov rbx, rsp",
        // The interrupted RIP (above the 15 registers, the vector and the error code):
        // inside the touch routines no vector register is live, go to 3.
        "mov rax, [rbx + 136]",
        "lea rcx, [rip + {touch_start}]",
        "sub rax, rcx",
        "lea rdx, [rip + {touch_end}]",
        "sub rdx, rcx",
        "cmp rax, rdx",
        "jb 3f",
        "sub rsp, 256",
        "and rsp, -16",
        "movdqa [rsp + 0], xmm0",
        "movdqa [rsp + 16], xmm1",
        "movdqa [rsp + 32], xmm2",
        "movdqa [rsp + 48], xmm3",
        "movdqa [rsp + 64], xmm4",
        "movdqa [rsp + 80], xmm5",
        "movdqa [rsp + 96], xmm6",
        "movdqa [rsp + 112], xmm7",
        "movdqa [rsp + 128], xmm8",
        "movdqa [rsp + 144], xmm9",
        "movdqa [rsp + 160], xmm10",
        "movdqa [rsp + 176], xmm11",
        "movdqa [rsp + 192], xmm12",
        "movdqa [rsp + 208], xmm13",
        "movdqa [rsp + 224], xmm14",
        "movdqa [rsp + 240], xmm15",
        "mov rdi, rbx",
        "cld",
        "call {dispatch}",
        "movdqa xmm0, [rsp + 0]",
        "movdqa xmm1, [rsp + 16]",
        "movdqa xmm2, [rsp + 32]",
        "movdqa xmm3, [rsp + 48]",
        "movdqa xmm4, [rsp + 64]",
        "movdqa xmm5, [rsp + 80]",
        "movdqa xmm6, [rsp + 96]",
        "movdqa xmm7, [rsp + 112]",
        "movdqa xmm8, [rsp + 128]",
        "movdqa xmm9, [rsp + 144]",
        "movdqa xmm10, [rsp + 160]",
        "movdqa xmm11, [rsp + 176]",
        "movdqa xmm12, [rsp + 192]",
        "movdqa xmm13, [rsp + 208]",
        "movdqa xmm14, [rsp + 224]",
        "movdqa xmm15, [rsp + 240]",
        "jmp 4f",
        "3:",
        "and rsp, -16",
        "mov rdi, rbx",
        "cld",
        "call {dispatch}",
        "4:",
        "mov rsp, rbx",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop r11",
        "pop r10",
        "pop r9",
        "pop r8",
        "pop rbp",
        "pop rdi",
        "pop rsi",
        "pop rdx",
        "pop rcx",
        "pop rbx",
        "pop rax",
        "add rsp, 16",
        "iretq",
        dispatch = sym trap_dispatch,
        touch_start = sym kx_touch_text_start,
        touch_end = sym kx_touch_text_end,
    );
}

extern "C" fn trap_dispatch(frame: &mut TrapFrame) {
    let v = frame.vector as usize;
    let h = HANDLERS[v & 0xff].load(Ordering::Acquire);
    if h != 0 {
        // SAFETY: only `register` stores non-zero values, and it stores `Handler`s.
        let handler: Handler = unsafe { core::mem::transmute::<usize, Handler>(h) };
        handler(frame);
        return;
    }
    fatal(frame, None, None);
}

/// Reports a trap that nothing resolved and exits with [`abi::ExitCode::Exception`]: the
/// vector, error code, RIP and RSP, for a #PF the faulting address and what the error code
/// says about it, then `note` if given. `cr2` is the #PF address as the handler read it on
/// entry (`None`: read CR2 now, which is right when nothing could have faulted since).
pub(crate) fn fatal(frame: &TrapFrame, cr2: Option<u64>, note: Option<fmt::Arguments<'_>>) -> ! {
    x86_64::instructions::interrupts::disable();
    let v = frame.vector as usize;
    let name = EXCEPTION_NAMES
        .get(v)
        .copied()
        .unwrap_or("unexpected interrupt");
    let cpu = crate::arch::x86_64::cpu_index();
    crate::console::emergency_write(format_args!(
        "\nEXCEPTION on cpu {cpu}: {name} (vector {v}) error={:#x} rip={:#018x} rsp={:#018x}\n",
        frame.error_code, frame.rip, frame.rsp
    ));
    if v == usize::from(vector::PAGE_FAULT) {
        let cr2 = cr2.unwrap_or_else(x86_64::registers::control::Cr2::read_raw);
        crate::console::emergency_write(format_args!(
            "  CR2={cr2:#x} ({} {} access{})\n",
            if frame.error_code & 1 != 0 {
                "protection violation on"
            } else {
                "not-present page on"
            },
            if frame.error_code & 2 != 0 {
                "write"
            } else {
                "read"
            },
            if frame.error_code & 16 != 0 {
                ", instruction fetch"
            } else {
                ""
            },
        ));
    }
    if let Some(note) = note {
        crate::console::emergency_write(format_args!("  {note}\n"));
    }
    if v == usize::from(vector::DOUBLE_FAULT) {
        crate::console::emergency_write(format_args!(
            "  double fault: most likely a kernel stack overflow into its guard page\n"
        ));
    }
    crate::exit::exit(abi::ExitCode::Exception)
}

static IDT: Once<InterruptDescriptorTable> = Once::new();

fn build_idt() -> InterruptDescriptorTable {
    let mut idt = InterruptDescriptorTable::new();
    let base = &raw const trap_stubs_start as u64;
    let ist = |v: u8| match v {
        vector::PAGE_FAULT => None,
        vector::DOUBLE_FAULT => Some(gdt::IST_DOUBLE_FAULT),
        vector::NMI => Some(gdt::IST_NMI),
        vector::MACHINE_CHECK => Some(gdt::IST_MACHINE_CHECK),
        _ => Some(gdt::IST_OTHER),
    };
    macro_rules! set {
        ($entry:expr, $v:expr) => {{
            let addr = VirtAddr::new(base + 16 * u64::from($v));
            // SAFETY: `addr` is the entry stub for this vector, which follows the interrupt
            // frame conventions (error code handled per vector) and ends in `iretq`; the IST
            // index names a stack installed in every CPU's TSS.
            unsafe {
                let opts = $entry.set_handler_addr(addr);
                if let Some(i) = ist($v) {
                    opts.set_stack_index(i);
                }
            }
        }};
    }
    set!(idt.divide_error, 0u8);
    set!(idt.debug, 1u8);
    set!(idt.non_maskable_interrupt, 2u8);
    set!(idt.breakpoint, 3u8);
    set!(idt.overflow, 4u8);
    set!(idt.bound_range_exceeded, 5u8);
    set!(idt.invalid_opcode, 6u8);
    set!(idt.device_not_available, 7u8);
    set!(idt.double_fault, 8u8);
    set!(idt.invalid_tss, 10u8);
    set!(idt.segment_not_present, 11u8);
    set!(idt.stack_segment_fault, 12u8);
    set!(idt.general_protection_fault, 13u8);
    set!(idt.page_fault, 14u8);
    set!(idt.x87_floating_point, 16u8);
    set!(idt.alignment_check, 17u8);
    set!(idt.machine_check, 18u8);
    set!(idt.simd_floating_point, 19u8);
    set!(idt.virtualization, 20u8);
    set!(idt.cp_protection_exception, 21u8);
    set!(idt.hv_injection_exception, 28u8);
    set!(idt.vmm_communication_exception, 29u8);
    set!(idt.security_exception, 30u8);
    for v in 32..=255u8 {
        set!(idt[v], v);
    }
    idt
}

/// Loads the IDT on this CPU (building it on first use).
pub fn load_idt() {
    IDT.call_once(build_idt).load();
}
