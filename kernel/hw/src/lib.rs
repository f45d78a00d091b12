//! The x86 hardware and firmware interfaces the kernel decodes or encodes, as pure functions.
//!
//! The kernel's arch code (`kernel/src/arch/x86_64`) executes the instructions (`cpuid`,
//! `rdmsr`/`wrmsr`) and maps the firmware's tables; what the values *mean* is decided here,
//! from plain integers and byte slices, so that the host runs the same decoding against inputs
//! recorded on machines and CPU models this project cannot boot on (`fixtures` in the
//! tests: CPUID dumps and ACPI tables, each with its origin).
//!
//! - [`pmu`]: the architectural performance-monitoring unit (CPUID leaf 0xA; the
//!   `IA32_PERFEVTSELx`, `IA32_FIXED_CTR_CTRL` and `IA32_PERF_GLOBAL_CTRL` encodings of the
//!   SDM, Vol. 3B, ch. 20 "Performance Monitoring").
//! - [`acpi`]: the SRAT and SLIT, from their bytes.
//! - [`cpuid`]: the CPUID leaves the kernel decides on (x2APIC, TSC frequency, invariant
//!   TSC, hypervisor), from recorded values.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod acpi;
pub mod cpuid;
pub mod pmu;
