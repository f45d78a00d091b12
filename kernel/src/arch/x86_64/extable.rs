//! The exception table: kernel instructions allowed to fault, and where each one resumes.
//!
//! Models Linux's `_ASM_EXTABLE` (`arch/x86/include/asm/asm.h`) and `fixup_exception` /
//! `search_exception_tables` (`arch/x86/mm/extable.c`, `kernel/extable.c`). Every access
//! instruction of the touch routines ([`super::touch`]) emits one entry into the `__ex_table`
//! section: the instruction's address and its fixup's address. The linker script gathers the
//! section into `.rodata` between `__start___ex_table` and `__stop___ex_table`.
//!
//! When the page-fault handler cannot resolve a fault ([`super::fault`]) it looks up the
//! faulting RIP here. Found: the handler rewrites the trap frame so that `iretq` resumes at the
//! fixup with the error code in `rdx` (the touch routines' convention, like `getuser.S`
//! returning `-EFAULT` in `%rax`). Not found: the fault is fatal.
//!
//! Entries are absolute 64-bit addresses (the kernel is linked static, non-PIE), 16 bytes
//! each, where Linux stores 32-bit offsets relative to the entry to halve the table and keep
//! it position independent. Linux sorts its table at build time and searches it with
//! `bsearch`; this table holds one entry per touch routine, a few in all, so a linear scan
//! is as fast as a search and cannot be broken by an unsorted table.
//!
//! Unsafe code here, and why: the exception table is a linker section read as a slice
//! between its start and stop symbols.
#![allow(unsafe_code)]

/// One entry: `insn` may fault, and then resumes at `fixup`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExceptionTableEntry {
    /// Address of the instruction that may fault.
    pub insn: u64,
    /// Where execution resumes when its fault cannot be resolved.
    pub fixup: u64,
}

unsafe extern "C" {
    static __start___ex_table: ExceptionTableEntry;
    static __stop___ex_table: ExceptionTableEntry;
}

/// The whole table, in link order.
#[must_use]
pub fn entries() -> &'static [ExceptionTableEntry] {
    let start = &raw const __start___ex_table;
    let stop = &raw const __stop___ex_table;
    let n = (stop as usize - start as usize) / core::mem::size_of::<ExceptionTableEntry>();
    // SAFETY: the linker script places every `__ex_table` input section, 8-aligned, between
    // the two symbols, and only the `EXTABLE` assembler macro emits into that section, always
    // a pair of quads; the section is in `.rodata`, never written.
    unsafe { core::slice::from_raw_parts(start, n) }
}

/// The fixup for a fault at `rip` (Linux's `search_exception_tables`), if it may fault.
#[must_use]
pub fn search(rip: u64) -> Option<u64> {
    entries().iter().find(|e| e.insn == rip).map(|e| e.fixup)
}
