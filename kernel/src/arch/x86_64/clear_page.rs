//! `clear_page`: zeroing one 4 KiB page, as Linux's `arch/x86/lib/clear_page_64.S` does.
//!
//! Linux has three versions and picks one at boot with `alternative_call_2`:
//! `clear_page_erms` (`rep stosb` over 4096 bytes) on CPUs with Enhanced REP MOVSB/STOSB
//! (CPUID 7.EBX bit 9), `clear_page_rep` (`rep stosq` over 512 words) on CPUs where string
//! instructions are fast (`X86_FEATURE_REP_GOOD`, which Linux sets for Intel family 6 and
//! for AMD K8 from revision F on, QEMU's `qemu64` model included), and `clear_page_orig` (an
//! unrolled loop of eight 8-byte stores per 64-byte line) elsewhere.
//!
//! [`chosen`] makes Linux's choice on real hardware (ERMS, else `rep stosq`) and picks
//! `clear_page_orig` under QEMU's TCG, where a string instruction is emulated one element
//! per loop trip: measured here in the benchmark's `limit` floor (one #PF, a 4 KiB clear,
//! PTE install and clear, `invlpg`), TCG on 2 vCPUs gave about 590k ops/s per vCPU without
//! any clear, 440k with `clear_page_orig`, 260k-360k with `clear_page_rep` and 100k with
//! `clear_page_erms`. Linux in the same emulator uses `clear_page_rep`, so a fault path that
//! clears with [`clear_page`] saves about a microsecond per fault over Linux there; the
//! benchmark says which version ran.
//!
//! Unsafe code here, and why: zeroing a page is a raw write of 4096 bytes (`rep stos` or an
//! unrolled loop of stores) to a frame the caller owns.
#![allow(unsafe_code)]

use core::arch::asm;
use core::sync::atomic::{AtomicU8, Ordering};

/// One of Linux's `clear_page` versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClearPage {
    /// `clear_page_erms`: `rep stosb`, 4096 bytes.
    Erms,
    /// `clear_page_rep`: `rep stosq`, 512 words.
    Rep,
    /// `clear_page_orig`: eight `mov qword` per 64 bytes, 64 times.
    Orig,
}

impl ClearPage {
    /// Linux's name for it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            ClearPage::Erms => "clear_page_erms",
            ClearPage::Rep => "clear_page_rep",
            ClearPage::Orig => "clear_page_orig",
        }
    }
}

/// 0: not chosen yet; 1 + `ClearPage as u8` after.
static CHOSEN: AtomicU8 = AtomicU8::new(0);

/// The version this CPU uses: `clear_page_orig` under TCG, else `clear_page_erms` with
/// ERMS and `clear_page_rep` without (see the module doc).
#[must_use]
pub fn chosen() -> ClearPage {
    match CHOSEN.load(Ordering::Relaxed) {
        1 => ClearPage::Erms,
        2 => ClearPage::Rep,
        3 => ClearPage::Orig,
        _ => {
            let erms = raw_cpuid::CpuId::new()
                .get_extended_feature_info()
                .is_some_and(|f| f.has_rep_movsb_stosb());
            let c = match (super::cpu::platform(), erms) {
                (super::cpu::Platform::QemuTcg, _) => ClearPage::Orig,
                (_, true) => ClearPage::Erms,
                (_, false) => ClearPage::Rep,
            };
            CHOSEN.store(1 + c as u8, Ordering::Relaxed);
            c
        }
    }
}

/// Zeroes the 4 KiB page at `page` with [`chosen`]'s version.
///
/// # Safety
/// `page` must be 4 KiB aligned and valid for writes of 4096 bytes that no live reference
/// covers.
pub unsafe fn clear_page(page: *mut u8) {
    // SAFETY: forwarded contract.
    unsafe { clear_page_with(chosen(), page) }
}

/// Zeroes the 4 KiB page at `page` with `how`.
///
/// # Safety
/// As [`clear_page`].
pub unsafe fn clear_page_with(how: ClearPage, page: *mut u8) {
    // SAFETY: for each of the three forms: the caller guarantees 4096 writable bytes at
    // `page`; the direction flag is clear at every call boundary (the ABI); only the named registers
    // change.
    unsafe {
        match how {
            ClearPage::Erms => asm!(
                "rep stosb",
                inout("rcx") 4096usize => _,
                inout("rdi") page => _,
                in("al") 0u8,
                options(nostack, preserves_flags)
            ),
            ClearPage::Rep => asm!(
                "rep stosq",
                inout("rcx") 512usize => _,
                inout("rdi") page => _,
                in("rax") 0u64,
                options(nostack, preserves_flags)
            ),
            ClearPage::Orig => asm!(
                // The loop (39 bytes) starts on a 64-byte boundary, so it never spans two
                // 4 KiB pages: TCG chains a jump only within one guest page, and a loop
                // that straddled a page boundary would leave its block through the
                // emulator's lookup twice per trip (126 times per page) wherever a build
                // happened to place it. One jump over the padding, so that every build
                // runs the same instructions (Linux's `clear_page_orig` pads its 16-byte
                // aligned loop with `nop`s instead).
                "jmp 2f",
                ".p2align 6",
                "2:",
                "mov qword ptr [rdi], rax",
                "mov qword ptr [rdi + 8], rax",
                "mov qword ptr [rdi + 16], rax",
                "mov qword ptr [rdi + 24], rax",
                "mov qword ptr [rdi + 32], rax",
                "mov qword ptr [rdi + 40], rax",
                "mov qword ptr [rdi + 48], rax",
                "mov qword ptr [rdi + 56], rax",
                "add rdi, 64",
                "dec ecx",
                "jnz 2b",
                inout("ecx") 64u32 => _,
                inout("rdi") page => _,
                in("rax") 0u64,
                options(nostack)
            ),
        }
    }
}
