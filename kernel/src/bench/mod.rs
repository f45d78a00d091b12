//! `run=bench`: the benchmark engine ([`bench::engine`]) on this kernel's CPUs.
//!
//! The kernel side is small: a [`platform::KernelPlatform`] (the chosen CPUs through
//! `on_cpus` behind a spin barrier, the TSC, serial and framebuffer, the `machine` record
//! from CPUID and the boot information), the `limit` floor that needs real page faults
//! ([`limit::TrapFloor`]), the fault core the seeds' scenarios run on
//! ([`vmhost::KernelVmHost`]: real page faults in the address-space slot), and the table of
//! scenarios ([`bench::scenarios::registry`], the same one the host runs). The command line's `run=bench` keys become a request; a CPU count
//! above the online CPUs is a bad command line. Scenarios that are not built yet are
//! reported and skipped by the engine. The exit is success when the benchmark completed
//! with every invariant holding, the test-failure code otherwise (a violated invariant, or a
//! scenario error that stopped it). At the end, when `qr=` asks for it (always on a real
//! machine), the records are shown as QR codes on the screen ([`crate::console::qr`]).

pub mod limit;
pub mod platform;
pub mod vmhost;
pub mod window;

use crate::boot_info::BootInfo;
use crate::percpu;
use crate::println;
use abi::{BenchConfig, ExitCode};
use alloc::boxed::Box;
use bench::engine::{self, Request};

/// Runs the benchmark the command line asks for and returns the exit code.
pub fn run(cfg: &BenchConfig<'_>, bi: &BootInfo) -> ExitCode {
    let online = percpu::nr_cpu_ids() as u32;
    let request = match Request::from_config(cfg, online) {
        Ok(r) => r,
        Err(e) => {
            println!("bad command line: {e}");
            return ExitCode::BadCmdline;
        }
    };
    let platform = platform::KernelPlatform::new(bi, online);
    let host = vmhost::KernelVmHost;
    let registry = bench::scenarios::registry(Box::new(limit::TrapFloor), &host);
    let qr = crate::console::qr::Display::for_boot(bi);
    let report = engine::run(&platform, &registry, &request);
    if let Some(qr) = qr {
        qr.show();
    }
    if report.passed() {
        ExitCode::Success
    } else {
        ExitCode::TestFailure
    }
}
