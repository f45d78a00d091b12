//! The running CPU's id (`smp_processor_id()`), from a hook the platform installs.
//!
//! The kernel installs a function that reads its per-CPU area through GS
//! ([`set_cpu_id_fn`]) and, once that area exists, tells where in it the id lies
//! ([`set_cpu_id_gs_offset`], x86_64): then the id is one `mov` from GS, without a call
//! through the hook on every per-CPU statistic and lock. A kernel built with
//! `--cfg ksync_gs_cpu_id` promises more: GS points at an area with the id at
//! [`GS_CPU_ID_OFFSET`] on every CPU from its first instruction of Rust code, so the id is
//! that one `movzx` and nothing else (Linux's `raw_smp_processor_id()`, a `%gs` load with no
//! test before it); host threads that stand in for CPUs say which CPU they are with
//! `set_this_thread_cpu` (feature `std`), and any other host thread gets a dense id of its
//! own on first use. Without a hook and without `std`, every caller is CPU 0 (early boot:
//! only the boot CPU runs).
//!
//! Ids are below [`MAX_CPUS`]; per-CPU statistics and the lockdep held-lock stacks are
//! indexed by them.
//!
//! Unsafe code here, and why: reading the CPU id goes through the GS segment (`unsafe fn
//! set_cpu_id_gs_offset`) or a platform hook stored as a function address, both set up once
//! at boot.
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicUsize, Ordering};

/// Most CPUs anything indexed by CPU id supports (the kernel's `cpus=` limit).
pub const MAX_CPUS: usize = 256;

// `this_cpu` reads the low byte of the id's word from GS: the id modulo `MAX_CPUS`.
const _: () = assert!(MAX_CPUS == 256, "this_cpu's GS read is one byte");

/// Where the CPU id lies in the per-CPU area GS points at, in a kernel built with
/// `--cfg ksync_gs_cpu_id` (the platform lays its area out to match).
pub const GS_CPU_ID_OFFSET: usize = 8;

/// The installed hook, as an address (0 = none).
static CPU_ID_FN: AtomicUsize = AtomicUsize::new(0);

/// One more than the offset of the running CPU's id in the per-CPU area GS points at
/// (0 = none): [`set_cpu_id_gs_offset`].
#[cfg(all(target_arch = "x86_64", not(loom)))]
static CPU_ID_GS: AtomicUsize = AtomicUsize::new(0);

/// Tells [`this_cpu`] that every running CPU's GS base points at a per-CPU area holding the
/// CPU's id as a 64-bit word at `offset` (Linux's `this_cpu_read(cpu_number)`): from then
/// on the id is one `mov` from `gs:[offset]`, with no call through the hook (which stays
/// the fallback). The kernel calls this once the boot CPU's area is installed, before any
/// other CPU starts (each installs its own before running anything else).
///
/// # Safety
///
/// From now on, on every thread that calls [`this_cpu`] without a pinned host id, GS must
/// point at such an area (so never on a host whose threads use GS otherwise).
#[cfg(all(target_arch = "x86_64", not(loom)))]
pub unsafe fn set_cpu_id_gs_offset(offset: usize) {
    CPU_ID_GS.store(offset + 1, Ordering::Release);
}

/// Installs the function that returns the running CPU's id. The kernel calls this once per
/// boot, before any other CPU starts.
pub fn set_cpu_id_fn(f: fn() -> usize) {
    CPU_ID_FN.store(f as usize, Ordering::Release);
}

/// `cpu` folded into `0..nr` (`nr` 0 counts as 1): `cpu % nr`, without the division when
/// `cpu` is already in range, as it is on every hot path (a division is tens of cycles, and
/// a helper call under an emulator).
#[inline]
#[must_use]
pub fn fold(cpu: usize, nr: usize) -> usize {
    if cpu < nr { cpu } else { cpu % nr.max(1) }
}

/// Whether the platform installed a CPU-id hook ([`set_cpu_id_fn`]): only then does
/// [`this_cpu`] tell CPUs apart in a no_std build.
#[inline]
#[must_use]
pub fn hook_installed() -> bool {
    CPU_ID_FN.load(Ordering::Acquire) != 0
}

/// The running CPU's id, below [`MAX_CPUS`]: one `movzx` from GS (`--cfg ksync_gs_cpu_id`).
#[cfg(all(
    target_arch = "x86_64",
    ksync_gs_cpu_id,
    not(any(loom, test, feature = "std"))
))]
#[inline(always)]
#[must_use]
pub fn this_cpu() -> usize {
    let id: usize;
    // SAFETY: `--cfg ksync_gs_cpu_id` is the platform's promise (module doc) that GS
    // points at the running CPU's area, its id a word at `GS_CPU_ID_OFFSET`, from the first
    // Rust instruction on; a read with no other effect, whose low byte is the id.
    unsafe {
        core::arch::asm!(
            "movzx {id:e}, byte ptr gs:[{off}]",
            id = out(reg) id,
            off = const GS_CPU_ID_OFFSET,
            options(nostack, preserves_flags, readonly),
        );
    }
    // SAFETY: `movzx` from a byte leaves a value below 256 = `MAX_CPUS`.
    unsafe { core::hint::assert_unchecked(id < MAX_CPUS) };
    id
}

/// The running CPU's id, below [`MAX_CPUS`].
#[cfg(not(all(
    target_arch = "x86_64",
    ksync_gs_cpu_id,
    not(any(loom, test, feature = "std"))
)))]
#[inline]
#[must_use]
pub fn this_cpu() -> usize {
    #[cfg(any(test, feature = "std"))]
    if let Some(cpu) = thread::pinned() {
        return cpu;
    }
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    {
        let gs = CPU_ID_GS.load(Ordering::Relaxed);
        if gs != 0 {
            let id: usize;
            // SAFETY: `set_cpu_id_gs_offset`'s contract: GS points at this CPU's area, with
            // its id as a word at `gs - 1`. A read with no other effect. The low byte of
            // the little-endian word is the id modulo `MAX_CPUS` (256), so one `movzx`
            // with the `- 1` in its displacement is the whole lookup.
            unsafe {
                core::arch::asm!(
                    "movzx {id:e}, byte ptr gs:[{off} - 1]",
                    id = out(reg) id,
                    off = in(reg) gs,
                    options(nostack, preserves_flags, readonly),
                );
            }
            // SAFETY: `movzx` from a byte leaves a value below 256 = `MAX_CPUS`; telling the
            // compiler so drops the bounds checks of arrays indexed by the id.
            unsafe { core::hint::assert_unchecked(id < MAX_CPUS) };
            return id;
        }
    }
    let f = CPU_ID_FN.load(Ordering::Acquire);
    if f != 0 {
        // SAFETY: only `set_cpu_id_fn` stores a non-zero value, and it stores a
        // `fn() -> usize`; function pointers and `usize` have the same size on every
        // target this crate builds for.
        let f: fn() -> usize = unsafe { core::mem::transmute::<usize, fn() -> usize>(f) };
        return f() % MAX_CPUS;
    }
    // No hook: a host thread's own id, or early boot's only CPU.
    #[cfg(any(test, feature = "std"))]
    let cpu = thread::own_id();
    #[cfg(not(any(test, feature = "std")))]
    let cpu = 0;
    cpu
}

#[cfg(any(test, feature = "std"))]
pub use thread::set_this_thread_cpu;

#[cfg(any(test, feature = "std"))]
mod thread {
    use super::MAX_CPUS;
    use core::cell::Cell;
    use core::sync::atomic::{AtomicUsize, Ordering};

    static NEXT: AtomicUsize = AtomicUsize::new(0);

    std::thread_local! {
        static PINNED: Cell<Option<usize>> = const { Cell::new(None) };
        static OWN: Cell<Option<usize>> = const { Cell::new(None) };
    }

    /// Declares that the calling thread runs as CPU `cpu` (host-thread mode: one thread per
    /// pinned core). Ids at or above [`MAX_CPUS`] wrap.
    pub fn set_this_thread_cpu(cpu: usize) {
        PINNED.with(|p| p.set(Some(cpu % MAX_CPUS)));
    }

    pub(super) fn pinned() -> Option<usize> {
        PINNED.with(Cell::get)
    }

    /// A dense id for a thread that never declared one: handed out in first-use order.
    pub(super) fn own_id() -> usize {
        OWN.with(|o| match o.get() {
            Some(id) => id,
            None => {
                let id = NEXT.fetch_add(1, Ordering::Relaxed) % MAX_CPUS;
                o.set(Some(id));
                id
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_is_the_remainder_without_dividing_in_range() {
        for nr in 0..5 {
            for cpu in 0..12 {
                assert_eq!(fold(cpu, nr), cpu % nr.max(1), "fold({cpu}, {nr})");
            }
        }
    }

    #[test]
    fn pinned_thread_reports_its_cpu() {
        std::thread::spawn(|| {
            set_this_thread_cpu(7);
            assert_eq!(this_cpu(), 7);
            set_this_thread_cpu(MAX_CPUS + 3);
            assert_eq!(this_cpu(), 3);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn unpinned_threads_get_distinct_ids() {
        let a = std::thread::spawn(this_cpu).join().unwrap();
        let b = std::thread::spawn(this_cpu).join().unwrap();
        assert_ne!(a, b);
        assert!(a < MAX_CPUS && b < MAX_CPUS);
    }
}
