//! The C memory functions that compiled Rust code calls, and the unwinding personality stub.
//!
//! There is no libc: the compiler emits calls to `memcpy`, `memset`, `memmove`, `memcmp`,
//! `bcmp` and `strlen`, and we provide them. The copies use `rep movsb`/`rep stosb` (fast on
//! every CPU with ERMSB and, unlike a Rust loop, never turned back into a call to itself by
//! LLVM's idiom recognition). `panic = "abort"` means `rust_eh_personality` is never called,
//! but precompiled libcore still references it.
//!
//! Unsafe code here, and why: `memcpy`, `memset`, `memmove` and `memcmp` are the compiler's
//! own symbols (`#[unsafe(no_mangle)]`), over raw pointers.
#![allow(unsafe_code)]

use core::arch::asm;

/// # Safety
/// `dst` and `src` must be valid for `n` bytes and must not overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: the caller guarantees both ranges are valid and disjoint; the direction flag is
    // clear (the ABI requires it at every call boundary).
    unsafe {
        asm!("rep movsb", inout("rcx") n => _, inout("rdi") dst => _, inout("rsi") src => _,
             options(nostack, preserves_flags));
    }
    dst
}

/// # Safety
/// `dst` must be valid for `n` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memset(dst: *mut u8, c: i32, n: usize) -> *mut u8 {
    // SAFETY: the caller guarantees `dst..dst+n` is writable.
    unsafe {
        asm!("rep stosb", inout("rcx") n => _, inout("rdi") dst => _, in("al") c as u8,
             options(nostack, preserves_flags));
    }
    dst
}

/// # Safety
/// `dst` and `src` must be valid for `n` bytes; they may overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memmove(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    if (dst as usize).wrapping_sub(src as usize) >= n {
        // dst is below src, or the ranges do not overlap: a forward copy is safe.
        // SAFETY: forwarded contract; forward copying never reads a byte already written.
        return unsafe { memcpy(dst, src, n) };
    }
    // SAFETY: dst lies inside (src, src+n): copy backwards from the last byte with the
    // direction flag set, and clear it again before returning (the ABI requires DF = 0).
    unsafe {
        asm!("std", "rep movsb", "cld",
             inout("rcx") n => _, inout("rdi") dst.add(n - 1) => _, inout("rsi") src.add(n - 1) => _,
             options(nostack));
    }
    dst
}

/// # Safety
/// `a` and `b` must be valid for `n` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    for i in 0..n {
        // SAFETY: i < n and both ranges are valid for n bytes. Volatile reads keep LLVM from
        // recognising the loop as a memcmp idiom and calling this function recursively.
        let (x, y) = unsafe { (a.add(i).read_volatile(), b.add(i).read_volatile()) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
    }
    0
}

/// # Safety
/// `a` and `b` must be valid for `n` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: same contract.
    unsafe { memcmp(a, b, n) }
}

/// # Safety
/// `s` must point to a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strlen(s: *const u8) -> usize {
    let mut n = 0;
    // SAFETY: the caller guarantees a terminating NUL, so every byte up to it is readable.
    // Volatile for the same reason as in `memcmp`.
    while unsafe { s.add(n).read_volatile() } != 0 {
        n += 1;
    }
    n
}

/// Never called with `panic = "abort"`; libcore references the symbol.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}

/// Never called with `panic = "abort"`; precompiled liballoc's landing pads reference it.
#[unsafe(no_mangle)]
pub extern "C" fn _Unwind_Resume() -> ! {
    super::cpu::halt_forever()
}
