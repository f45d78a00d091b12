//! `kx bench --host`: the benchmark engine on host threads, with a Linux reference.
//!
//! The same engine and scenario code as the kernel run (`bench::engine`,
//! `bench::scenarios::registry`), the same `run=bench` keys parsed by the same parser, the
//! same records, progress bar, table and results directory; only the platform differs
//! ([`platform::HostPlatform`]: one pinned thread per chosen core). The cores are chosen as
//! for QEMU's vCPUs ([`crate::placement`]): one thread per physical core (SMT siblings only
//! with `--smt`), spread over the NUMA nodes round-robin (thread `i` on node `i % N`, as
//! vCPU `i` of `--nodes host`), among the CPUs this process may run on; results.json records
//! the host's topology and the placement (`host.placement`). The CPU counts default to 1, 2,
//! 4, ... up to the cores so chosen. Before the run the host's load is sampled for a second
//! ([`crate::hostload::before`]; `--strict` refuses a busy host). `limit` is the software floor
//! (`bench::scenarios::soft_floor`: a function call, not a trap), and the run adds
//! [`linux_ref`]: Linux's own fault path as the variant `linux` of seed001 and seed003, in a
//! fresh memcg where the host allows it. `results.json` says `"platform": "host-threads"`,
//! with the host's CPU model, cores and kernel version.

pub mod linux_ref;
pub mod machine;
pub mod platform;
pub mod sys;

use super::collect::{Collected, Severity};
use super::host::HostInfo;
use super::run::{print_report, write_results};
use crate::cli::Options;
use crate::placement::HostPlacement;
use crate::topology::Topology;
use crate::{RunError, RunnerExit};
use bench::engine::{self, Request};
use bench::scenarios::soft_floor::SoftFloor;
use bench::vm::soft::SoftHost;
use linux_ref::LinuxRef;
use std::path::PathBuf;
use std::time::SystemTime;

/// Host memory handed to the fault core's page allocator (touched only as it is used).
const ARENA_MIB: u64 = 1024;

/// Whether the Linux reference's worker can be started from `exe` on `core`: `Err(why)`
/// when not (then the reference is reported as not run, and the rest runs).
pub fn probe_worker(exe: &std::path::Path, core: usize) -> Result<(), String> {
    use std::io::BufRead;
    let args = linux_ref::worker::Args {
        kind: linux_ref::worker::Kind::PageFault1,
        cores: vec![core],
        mib: 1,
        cgroup: None,
    };
    let mut child = std::process::Command::new(exe)
        .arg(linux_ref::worker::COMMAND)
        .args(args.to_words())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let mut line = String::new();
    let read = child
        .stdout
        .take()
        .map(|o| std::io::BufReader::new(o).read_line(&mut line));
    drop(child.stdin.take());
    let _ = child.wait();
    match (read, linux_ref::protocol::Reply::parse(&line)) {
        (Some(Ok(_)), Some(linux_ref::protocol::Reply::Ready(_))) => Ok(()),
        _ => Err(format!(
            "{} is not a kx binary that can run the worker",
            exe.display()
        )),
    }
}

/// `kx bench --host`.
pub fn bench(o: &Options) -> Result<RunnerExit, RunError> {
    let started = SystemTime::now();
    let allowed = sys::allowed_cpus().map_err(|e| RunError::BadInput {
        path: PathBuf::from("/proc/self/status"),
        why: format!("cannot read this process's CPU affinity: {e}"),
    })?;
    let topo = Topology::host().map_err(|why| RunError::BadInput {
        path: PathBuf::from("/sys/devices/system"),
        why: format!("cannot read the host's topology: {why}"),
    })?;
    let before =
        match crate::hostload::before_start(&crate::hostload::Source::host(), o.bench.strict) {
            Ok(b) => b,
            Err(exit) => return Ok(exit),
        };
    // Every core a thread may get: one per physical core (or every sibling with --smt).
    let placeable = HostPlacement::on(
        topo.clone(),
        allowed.clone(),
        allowed.len(),
        o.bench.smt,
        true,
    )
    .placement
    .cpus()
    .len();
    let keys = o.bench.kernel_keys();
    let cmdline = std::iter::once("run=bench".to_owned())
        .chain(keys)
        .collect::<Vec<_>>()
        .join(" ");
    let cfg = abi::cmdline::parse(&cmdline, false).map_err(|e| RunError::BadInput {
        path: PathBuf::from("--host"),
        why: format!("`{cmdline}`: {e}"),
    })?;
    let request =
        Request::from_config(&cfg.bench, placeable as u32).map_err(|e| RunError::BadInput {
            path: PathBuf::from("--cpus"),
            why: e.to_string(),
        })?;
    let max = request.cpus.iter().copied().max().unwrap_or(1) as usize;
    let placed = HostPlacement::on(topo, allowed.clone(), max, o.bench.smt, true);
    if !placed.placement.complete() {
        return Err(RunError::BadInput {
            path: PathBuf::from("--cpus"),
            why: format!(
                "{max} threads asked for, but this host offers the runner {placeable} {} \
                 ({} logical CPUs{})",
                if o.bench.smt {
                    "logical CPUs"
                } else {
                    "physical cores"
                },
                allowed.len(),
                if !o.bench.smt && placed.topo.smt() {
                    "; --smt uses SMT siblings too"
                } else {
                    ""
                }
            ),
        });
    }
    let cores = placed.placement.cpus();
    let record = placed.record("host-threads", None);
    eprintln!("kx: pinning: {}", record.line());
    eprintln!("kx: host: {}", record.topology.line());
    let mut notes = vec![
        format!(
            "host-threads: engine CPU i is a thread pinned to host CPU (i->cpu) {}: {}, \
             spread over the host's nodes round-robin; the Linux reference's threads use the \
             same CPUs",
            record.mapping(),
            if record.siblings_used {
                "SMT siblings used (--smt): threads on one core share its L1 and L2"
            } else {
                "one per physical core"
            }
        ),
        "host-threads: our faults here are function calls, not traps: `limit` is the \
         software floor (a software PTE installed to a page of the CPU's own, 4 KiB zeroed, \
         the entry cleared; no #PF, no TLB, no invlpg), and the seeds' scenarios fault \
         through the same software page tables; the honest comparison with Linux's own \
         fault path (`linux`) is the kernel on real hardware"
            .to_owned(),
    ];
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("kx"));
    let worker = probe_worker(&exe, cores[0]);
    if let Err(why) = &worker {
        notes.push(format!("linux reference: not run: {why}"));
    }
    if let Some(b) = before.as_ref().filter(|b| b.busy) {
        notes.push(b.line());
    }
    let machine = machine::machine(allowed.len() as u32, &cmdline);
    let soft: &'static SoftHost = Box::leak(Box::new(
        SoftHost::new(cores.len(), ARENA_MIB).map_err(|why| RunError::BadInput {
            path: PathBuf::from("--host"),
            why: format!("cannot build the host fault core: {why}"),
        })?,
    ));
    let platform =
        platform::HostPlatform::new(cores.clone(), machine, notes, o.quiet).with_soft_host(soft);
    let mut registry = bench::scenarios::registry(Box::new(SoftFloor), soft);
    if worker.is_ok() {
        registry.add(LinuxRef::seed001(exe.clone(), cores.clone()));
        registry.add(LinuxRef::seed003(exe, cores));
    }
    eprintln!(
        "kx: host-thread benchmark on {} of {} cores: {cmdline}",
        max,
        allowed.len()
    );
    let report = engine::run(&platform, &registry, &request);
    platform.finish();
    let c = Collected::from_log(&platform.log());
    let root = boot::Workspace::locate()
        .map(|w| w.root().to_owned())
        .or_else(|_| std::env::current_dir())
        .unwrap_or_else(|_| PathBuf::from("."));
    let mut host = HostInfo::gather("kx bench --host", &root, started);
    host.host_kernel = machine::kernel_version();
    host.placement = Some(record);
    host.host_load = Some(crate::hostload::HostLoadRecord {
        threshold_cores: crate::hostload::BUSY_CORES,
        before,
        error: Some(
            "not measured per run on host threads (the Linux reference's worker processes \
             would count as others)"
                .into(),
        ),
        ..crate::hostload::HostLoadRecord::default()
    });
    host.outcome = Some(if report.passed() {
        "host threads: the benchmark completed".into()
    } else {
        format!("host threads: stopped: {}", report.end.failures.join("; "))
    });
    let written = write_results(&root, o.out.as_deref(), host, &c, started)?;
    print_report(&c, &written);
    Ok(match c.worst() {
        Some(Severity::InvariantsFailed) => RunnerExit::InvariantsFailed,
        Some(Severity::BadResults) => RunnerExit::BadResults,
        None => RunnerExit::Success,
    })
}
