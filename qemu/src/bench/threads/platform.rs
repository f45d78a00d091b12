//! The benchmark engine's platform on host threads (`kx bench --host`).
//!
//! Engine CPU `i` is a thread pinned with `sched_setaffinity` to the `i`-th host CPU of the
//! placement ([`crate::placement`]: one per physical core unless `--smt`, spread over the
//! NUMA nodes), which declares itself CPU `i` to ksync
//! (`ksync::cpu::set_this_thread_cpu`) so that per-CPU statistics and slots index the same
//! way as in the kernel. A run's threads are spawned for the run, pinned, lined up at a spin
//! barrier and joined after (thread creation is outside the timed part, which starts behind
//! the barrier). The clock is `CLOCK_MONOTONIC`, one clock for every thread and for the
//! Linux reference's worker processes. Records and progress lines are kept in a log, from
//! which the results directory is made exactly as from a kernel's serial log, and drive the
//! same progress bar as `kx bench`; the table is printed from the results at the end. Each
//! thread's quiescent points go to the RCU of the fault core the seeds' scenarios run on
//! ([`SoftHost`]).

use super::sys;
use crate::bench::run::ProgressView;
use bench::Machine;
use bench::engine::{BenchPlatform, Output, PlatformError};
use bench::vm::soft::SoftHost;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The host as a benchmark platform.
pub struct HostPlatform {
    cores: Vec<usize>,
    machine: Machine,
    notes: Vec<String>,
    log: Mutex<String>,
    view: Mutex<ProgressView>,
    /// The fault core the seeds' scenarios run on: told of each thread's quiescent points.
    soft: Option<&'static SoftHost>,
}

impl HostPlatform {
    /// The platform over `cores` (engine CPU `i` on `cores[i]`).
    #[must_use]
    pub fn new(cores: Vec<usize>, machine: Machine, notes: Vec<String>, quiet: bool) -> Self {
        HostPlatform {
            cores,
            machine,
            notes,
            log: Mutex::new(String::new()),
            view: Mutex::new(ProgressView::new(quiet)),
            soft: None,
        }
    }

    /// Reports every thread's quiescent points to `soft`'s RCU.
    #[must_use]
    pub fn with_soft_host(mut self, soft: &'static SoftHost) -> Self {
        self.soft = Some(soft);
        self
    }

    /// Every record and progress line printed so far, one per line.
    #[must_use]
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Removes the progress bar.
    pub fn finish(&self) {
        self.view.lock().unwrap_or_else(|p| p.into_inner()).finish();
    }
}

impl BenchPlatform for HostPlatform {
    fn cpus(&self) -> u32 {
        self.cores.len() as u32
    }

    fn on_cpus(&self, n: u32, f: &(dyn Fn(u32) + Sync)) -> Result<(), PlatformError> {
        let n = n as usize;
        if n == 0 || n > self.cores.len() {
            return Err(PlatformError(format!(
                "{n} CPUs asked for, {} cores available",
                self.cores.len()
            )));
        }
        let arrived = AtomicUsize::new(0);
        let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for (cpu, &core) in self.cores[..n].iter().enumerate() {
                let (arrived, errors) = (&arrived, &errors);
                s.spawn(move || {
                    if let Err(e) = sys::pin_this_thread(core) {
                        errors
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(format!("cannot pin cpu {cpu} to core {core}: {e}"));
                    }
                    ksync::cpu::set_this_thread_cpu(cpu);
                    arrived.fetch_add(1, Ordering::AcqRel);
                    while arrived.load(Ordering::Acquire) < n {
                        std::hint::spin_loop();
                    }
                    f(cpu as u32);
                });
            }
        });
        let errors = errors.into_inner().unwrap_or_else(|p| p.into_inner());
        match errors.first() {
            None => Ok(()),
            Some(e) => Err(PlatformError(e.clone())),
        }
    }

    fn now_ns(&self) -> u64 {
        sys::monotonic_ns()
    }

    fn quiescent(&self, cpu: u32) {
        if let Some(s) = self.soft {
            s.quiescent(cpu as usize);
        }
    }

    fn output(&self, kind: Output, text: &dyn fmt::Display) {
        match kind {
            Output::Record | Output::Progress => {
                let line = text.to_string();
                {
                    let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
                    log.push_str(&line);
                    log.push('\n');
                }
                self.view
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .line(&line);
            }
            Output::Message => {
                let line = text.to_string();
                self.view
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .line(&line);
            }
            // The runner prints the table from the results directory, as for a kernel run.
            Output::Table(_) | Output::Object => {}
        }
    }

    fn machine(&self) -> Machine {
        self.machine.clone()
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}
