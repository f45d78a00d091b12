//! The benchmark engine's platform in the kernel: the chosen CPUs are `0..n`, run through
//! `on_cpus` (the boot CPU, which runs the engine, is CPU 0 and works too; the others leave
//! their idle loop for the call) behind a sense-reversing spin barrier so they start
//! together; time is the TSC; the `machine` record comes from CPUID, the boot information
//! and the NUMA layout; records go to serial alone, progress lines and messages to
//! serial and screen, the wide table to serial and the 80-column one to the screen (a real
//! machine without a serial cable shows its results there); records are also kept for the
//! QR display at the end ([`crate::console::qr`]). Where the CPU has an architectural PMU
//! ([`crate::arch::pmu`]) every worker CPU starts its counters right before its
//! first batch and stops them after its last; where it has none, a note says so once.
//!
//! Every run with a record starts with every CPU's per-CPU page lists empty
//! (`drain_all_pages()` in [`KernelPlatform::run_begins`], untimed). The lists carry
//! frames from one run to the next, and how full a run found them decided how often it
//! refilled them from the buddy lists: in 128 of seed000's reads (each allocates a
//! frame, reclaim frees them in batches) its A took 0.98 frames per read from the buddy
//! lists and its B 0.49, in every boot, after different runs before each; with the
//! lists drained first both take 0.98 and count the same instructions per read to
//! 0.01%. Linux's lists carry over between runs too, but two layouts compared in one
//! boot must not inherit that state from whichever run came before.

use crate::arch::{clear_page, cpu, numa, pmu, tsc};
use crate::boot_info::{BootInfo, BootProtocol};
use crate::console::{self, Sink};
use crate::percpu::{self, CpuSet};
use crate::sync::Barrier;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use bench::engine::{BenchPlatform, Output, PlatformError};
use bench::{Machine, Platform};
use core::fmt;
use core::num::NonZeroU32;
use core::sync::atomic::{AtomicBool, Ordering};

/// This kernel as a benchmark platform.
pub struct KernelPlatform {
    cpus: u32,
    machine: Machine,
    /// What PMU detection found on the boot CPU.
    pmu: &'static pmu::Pmu,
    /// Per CPU: its counters were started for the current run.
    pmu_started: Vec<AtomicBool>,
}

/// The quiescent point a CPU passes between two benchmark batches: it holds no reference
/// into any RCU-protected structure there, so it reports a quiescent state (and runs the
/// `call_rcu` callbacks whose grace period completed, see [`crate::rcu::quiescent`]). The
/// barrier wait in [`KernelPlatform::on_cpus`] is an extended quiescent state
/// ([`crate::rcu::extended_qs`]), so a grace period driven by the boot CPU never waits for
/// a CPU that is itself waiting at the barrier.
fn rcu_quiescent() {
    crate::rcu::quiescent();
}

impl KernelPlatform {
    /// The platform for this boot, with `online` CPUs.
    #[must_use]
    pub fn new(bi: &BootInfo, online: u32) -> Self {
        let hypervisor = cpu::hypervisor_vendor();
        let platform = match cpu::platform() {
            cpu::Platform::QemuTcg => Platform::QemuTcg,
            cpu::Platform::Kvm => Platform::QemuKvm,
            cpu::Platform::OtherHypervisor => Platform::OtherHypervisor,
            cpu::Platform::BareMetal => Platform::RealHardware,
        };
        let boot_protocol = match bi.protocol {
            BootProtocol::Multiboot1 => "multiboot1",
            BootProtocol::Multiboot2 { uefi: false } => "multiboot2-bios",
            BootProtocol::Multiboot2 { uefi: true } => "multiboot2-uefi",
        };
        KernelPlatform {
            cpus: online,
            pmu: pmu::init(),
            pmu_started: (0..online).map(|_| AtomicBool::new(false)).collect(),
            machine: Machine {
                cpu_model: cpu::brand_string().unwrap_or_else(|| "unknown".into()),
                vcpus: online,
                memory_mib: bi.usable_bytes() >> 20,
                nodes: numa::info().map_or(1, |n| n.topology.nr_nodes() as u32),
                platform,
                hypervisor: hypervisor.unwrap_or_default(),
                tsc_hz: tsc::hz(),
                boot_protocol: boot_protocol.into(),
                cmdline: bi.cmdline().into(),
            },
        }
    }

    /// The counters' setup when `cpu`'s are counting the current run.
    fn pmu_running(&self, cpu: u32) -> Option<hw::pmu::Setup> {
        let started = self.pmu_started.get(cpu as usize)?;
        if started.load(Ordering::Relaxed) {
            pmu::setup()
        } else {
            None
        }
    }

    /// `cpu`'s counters faulted: its run reports no counts.
    fn pmu_failed(&self, cpu: u32) {
        if let Some(started) = self.pmu_started.get(cpu as usize) {
            started.store(false, Ordering::Relaxed);
        }
    }
}

impl BenchPlatform for KernelPlatform {
    fn cpus(&self) -> u32 {
        self.cpus
    }

    fn on_cpus(&self, n: u32, f: &(dyn Fn(u32) + Sync)) -> Result<(), PlatformError> {
        let parties = NonZeroU32::new(n).ok_or_else(|| PlatformError("no CPUs".into()))?;
        if n > self.cpus {
            return Err(PlatformError(format!(
                "{n} CPUs asked for, {} online",
                self.cpus
            )));
        }
        let mut set = CpuSet::new();
        for c in 0..n {
            set.insert(c as usize);
        }
        let barrier = Barrier::new(parties);
        percpu::on_cpus(&set, &|c| {
            crate::rcu::extended_qs(|| barrier.wait());
            f(c as u32);
        })
        .map_err(|e| PlatformError(format!("{e}")))
    }

    fn now_ns(&self) -> u64 {
        tsc::now_ns()
    }

    fn quiescent(&self, _cpu: u32) {
        rcu_quiescent();
    }

    fn output(&self, kind: Output, text: &dyn fmt::Display) {
        let line = format_args!("{text}\n");
        match kind {
            Output::Record => {
                console::print_to(Sink::Serial, line);
                console::qr::capture(text);
            }
            Output::Table(bench::Style::Wide) | Output::Object => {
                console::print_to(Sink::Serial, line)
            }
            Output::Table(bench::Style::Compact) => console::print_to(Sink::Screen, line),
            Output::Progress | Output::Message => crate::print!("{line}"),
        }
    }

    fn machine(&self) -> Machine {
        self.machine.clone()
    }

    fn phys_addr(&self, virt: usize) -> Option<u64> {
        crate::arch::paging::kernel_virt_to_phys(virt as u64)
    }

    fn run_begins(&self) {
        // Every run starts with the per-CPU page lists empty (module doc): what a run
        // before it left on them would otherwise decide how often this one refills them.
        crate::mm::page_alloc::drain_all_pages();
        super::window::run_begins();
    }

    fn run_ends(&self) {
        super::window::run_ends();
    }

    fn untimed_begins(&self, cpu: u32) {
        super::window::kx_measured_window_pause(cpu);
        if let Some(setup) = self.pmu_running(cpu)
            && pmu::pause(&setup).is_err()
        {
            // A CPU whose counters fault reports none for this run (`pmu_stop`).
            self.pmu_failed(cpu);
        }
    }

    fn untimed_ends(&self, cpu: u32) {
        if let Some(setup) = self.pmu_running(cpu)
            && pmu::resume(&setup).is_err()
        {
            self.pmu_failed(cpu);
        }
        super::window::kx_measured_window_resume(cpu);
    }

    fn pmu_start(&self, cpu: u32) {
        super::window::kx_measured_window_begin(cpu);
        let (Some(setup), Some(started)) = (pmu::setup(), self.pmu_started.get(cpu as usize))
        else {
            return;
        };
        started.store(pmu::start(&setup).is_ok(), Ordering::Relaxed);
    }

    fn pmu_stop(&self, cpu: u32) -> Option<bench::PmuCpu> {
        super::window::kx_measured_window_end(cpu);
        let setup = pmu::setup()?;
        if !self
            .pmu_started
            .get(cpu as usize)?
            .swap(false, Ordering::Relaxed)
        {
            return None;
        }
        let c = pmu::stop(&setup).ok()?;
        Some(bench::PmuCpu {
            cpu,
            cycles: c.cycles,
            instructions: c.instructions,
            llc_refs: c.llc_refs,
            llc_misses: c.llc_misses,
        })
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = alloc::vec![format!(
            "limit: one #PF per op, its frame zeroed with {} (the kernel's clear_page here)",
            clear_page::chosen().name()
        )];
        if let Some(why) = self.pmu.why_none() {
            let who = if self.machine.platform == Platform::QemuTcg {
                "no PMU (TCG)"
            } else {
                "no PMU"
            };
            notes.push(format!("{who}: no hardware counters ({why})"));
        }
        if self.machine.platform == Platform::QemuTcg {
            notes.push(String::from(
                "qemu-tcg: timings are the emulator's; compare variants as ratios within this \
                 boot, never absolute rates across runs; same-line sharing and lock contention \
                 show under TCG, the 128-byte pair effect does not",
            ));
        }
        notes
    }
}
