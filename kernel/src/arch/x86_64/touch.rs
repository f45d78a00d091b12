//! Touch routines: the only kernel code that accesses the address-space slot, each access
//! covered by an exception-table entry so that a fault that cannot be resolved returns an
//! error instead of killing the kernel.
//!
//! Models Linux's `arch/x86/lib/getuser.S` / `putuser.S` (`__get_user_8`, `__put_user_8`) and
//! `clear_user` / the `copy_user` family: small assembly routines whose access instructions
//! are listed with `_ASM_EXTABLE`. A benchmark worker faults pages in with them; the CPU raises
//! #PF on the access; [`super::fault`] resolves it through the region handler and the access
//! is retried, or the handler fails and the fault resumes at the routine's fixup.
//!
//! Calling convention (System V): `rdi` = address, `rsi` = value, and the result comes back
//! as a two-word struct in `rax` (value) and `rdx` (error code, 0 = success). Each routine
//! clears `rdx` first; the fault handler writes a non-zero [`FaultError`] code into the
//! frame's `rdx` and resumes at `kx_touch_fixup`, a bare `ret`. That works for every routine
//! because none of them pushes anything: at the faulting instruction `rsp` still points at
//! the caller's return address. `rep stosq` is restartable (on a fault the CPU leaves
//! `rcx`/`rdi` at the progress made and RIP at the instruction), and the sum loop keeps its
//! state in registers, so a resolved fault simply continues.
//!
//! The safe wrappers accept only addresses inside the address-space slot
//! ([`super::aspace::MM_SLOT_START`]..[`super::aspace::MM_SLOT_END`]), suitably aligned:
//! the slot maps only frames that the mm code owns and never lends to Rust references
//! (see [`super::aspace::link_pte_table`]'s contract), so no touch can write kernel data.
//! An address inside the slot but outside every registered region is still fatal, like any
//! kernel fault on an address nobody owns.
//!
//! The routines use no vector register, and nothing else may be placed between
//! `kx_touch_text_start` and `kx_touch_text_end`: trap entry ([`super::trap`]) saves no XMM
//! register for a trap taken there.
//!
//! The routines hold no locks and run with the caller's interrupt state; a region fault needs
//! interrupts enabled (see [`super::fault`]), so callers must touch with IF set and without
//! holding any lock the fault path takes.
//!
//! Unsafe code here, and why: the touches that may fault are assembly stubs listed in the
//! exception table, so a fault the handler cannot resolve returns an error instead of
//! killing the kernel.
#![allow(unsafe_code)]

use super::aspace::{MM_SLOT_END, MM_SLOT_START};
use super::fault::FaultError;
use core::fmt;

/// Why a touch failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TouchError {
    /// The address is outside the address-space slot or not aligned for the routine.
    BadAddress(u64),
    /// The access faulted and the region handler could not resolve it.
    Fault(FaultError),
}

impl fmt::Display for TouchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TouchError::BadAddress(a) => {
                write!(f, "{a:#x} is not an aligned address in the mm slot")
            }
            TouchError::Fault(e) => write!(f, "fault not resolved: {e}"),
        }
    }
}

/// What every routine returns: `rax`, `rdx`.
#[repr(C)]
struct TouchRet {
    value: u64,
    error: u64,
}

/// Number of exception-table entries the routines below emit (checked by the tests).
pub const EXTABLE_ENTRIES: usize = 4;

core::arch::global_asm!(
    r#"
    .macro KX_EXTABLE insn
    .pushsection __ex_table, "a"
    .balign 8
    .quad \insn, kx_touch_fixup
    .popsection
    .endm

    .section .text.kx_touch, "ax"
    .balign 16
    .global kx_touch_text_start
kx_touch_text_start:

    // TouchRet kx_touch_read_u64(u64 addr)
    .global kx_touch_read_u64
kx_touch_read_u64:
    xor edx, edx
kx_touch_read_u64_access:
    mov rax, qword ptr [rdi]
    KX_EXTABLE kx_touch_read_u64_access
    ret

    // TouchRet kx_touch_write_u64(u64 addr, u64 value)
    .global kx_touch_write_u64
kx_touch_write_u64:
    xor edx, edx
    xor eax, eax
kx_touch_write_u64_access:
    mov qword ptr [rdi], rsi
    KX_EXTABLE kx_touch_write_u64_access
    ret

    // TouchRet kx_touch_fill_page(u64 addr, u64 value): 512 x value (DF is clear on entry).
    .global kx_touch_fill_page
kx_touch_fill_page:
    xor edx, edx
    mov rax, rsi
    mov ecx, 512
kx_touch_fill_page_access:
    rep stosq
    KX_EXTABLE kx_touch_fill_page_access
    ret

    // TouchRet kx_touch_sum_page(u64 addr): wrapping sum of the page's 512 words.
    .global kx_touch_sum_page
kx_touch_sum_page:
    xor edx, edx
    xor eax, eax
    mov ecx, 512
kx_touch_sum_page_loop:
kx_touch_sum_page_access:
    add rax, qword ptr [rdi]
    KX_EXTABLE kx_touch_sum_page_access
    add rdi, 8
    dec ecx
    jnz kx_touch_sum_page_loop
    ret

    // Every routine's fixup: the fault handler has put the error code in rdx.
kx_touch_fixup:
    ret

    .global kx_touch_text_end
kx_touch_text_end:
    .text
    "#
);

unsafe extern "C" {
    fn kx_touch_read_u64(addr: u64) -> TouchRet;
    fn kx_touch_write_u64(addr: u64, value: u64) -> TouchRet;
    fn kx_touch_fill_page(addr: u64, value: u64) -> TouchRet;
    fn kx_touch_sum_page(addr: u64) -> TouchRet;
    static kx_touch_text_start: u8;
    static kx_touch_text_end: u8;
}

/// `[start, end)` of the routines' code (every exception-table entry points into it).
#[must_use]
pub fn text_range() -> (u64, u64) {
    (
        &raw const kx_touch_text_start as u64,
        &raw const kx_touch_text_end as u64,
    )
}

fn check(addr: u64, len: u64) -> Result<(), TouchError> {
    let aligned = addr.is_multiple_of(len.min(4096));
    let inside = addr >= MM_SLOT_START && addr <= MM_SLOT_END - len;
    if aligned && inside {
        Ok(())
    } else {
        Err(TouchError::BadAddress(addr))
    }
}

fn result(r: TouchRet) -> Result<u64, TouchError> {
    if r.error == 0 {
        Ok(r.value)
    } else {
        Err(TouchError::Fault(FaultError::from_code(r.error)))
    }
}

/// Reads the u64 at `addr` (8-aligned, in the slot), faulting it in if need be.
pub fn touch_read_u64(addr: u64) -> Result<u64, TouchError> {
    check(addr, 8)?;
    // SAFETY: `addr` lies in the address-space slot, which maps only mm-owned frames that
    // no Rust reference covers; the routine follows the C ABI and its one access is in the
    // exception table.
    result(unsafe { kx_touch_read_u64(addr) })
}

/// Writes `value` to the u64 at `addr` (8-aligned, in the slot), faulting it in for write.
pub fn touch_write_u64(addr: u64, value: u64) -> Result<(), TouchError> {
    check(addr, 8)?;
    // SAFETY: as in `touch_read_u64`.
    result(unsafe { kx_touch_write_u64(addr, value) }).map(|_| ())
}

/// Fills the 4 KiB page at `addr` (page-aligned, in the slot) with `value` in every word.
pub fn touch_fill_page(addr: u64, value: u64) -> Result<(), TouchError> {
    check(addr, 4096)?;
    // SAFETY: as in `touch_read_u64`; the page lies wholly inside the slot.
    result(unsafe { kx_touch_fill_page(addr, value) }).map(|_| ())
}

/// The wrapping sum of the 512 words of the 4 KiB page at `addr` (page-aligned, in the
/// slot), faulting it in for read.
pub fn touch_sum_page(addr: u64) -> Result<u64, TouchError> {
    check(addr, 4096)?;
    // SAFETY: as in `touch_fill_page`.
    result(unsafe { kx_touch_sum_page(addr) })
}
