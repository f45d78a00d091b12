//! Architecture support: the one facade the rest of the kernel uses (as hawkw/mycelium's
//! `arch` module is).
//!
//! Only x86_64 exists. Its module is private to `arch`: code outside names `crate::arch::X`,
//! never `crate::arch::x86_64::X`, so the compiler refuses an import that reaches past the
//! facade, and a second architecture would be a second private module behind the same
//! names. What the facade offers is what `x86_64` makes public: CPU and interrupt control
//! (`without_interrupts`, `cpu_index`, ...), trap registration (`trap`, the bottom of the
//! architecture: the IDT and the handlers every other part installs through it), paging
//! and the address space (`paging`, `aspace`, `mmu`, `pte`, `tlb`, `touch`, `fault`), SMP
//! bring-up and per-CPU registers (`smp`, `percpu`), and the platform's tables and timers
//! (`numa`, `tsc`, `apic`, `pmu`, `serial`, `multiboot`).

mod x86_64;

pub use self::x86_64::*;
