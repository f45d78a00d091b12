//! The path every command that boots the kernel shares: `summary`, `run`, `layout`, `test`
//! and `bench` (which continues in [`crate::bench::run`]) each name their [`Guest`] and
//! hand their options here. Booting itself is [`crate::booting`]'s, the exit status
//! [`crate::exit`]'s.

use crate::booting::{boot, launch, medium_for};
use crate::cli::Options;
use crate::exit::{exit_for, test_exit};
use crate::results::TestReport;
use crate::{Medium, RunError, RunOutput, RunnerExit};
use boot::host_deps::{self, Purpose, QEMU};
use boot::{BuildOptions, Workspace, build_kernel};
use std::path::PathBuf;
use std::time::Duration;

/// Timeout of `kx bench` when none is given: the scenarios run for minutes under TCG.
pub const BENCH_TIMEOUT: Duration = Duration::from_secs(1800);

/// What a command that boots asks the kernel to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Guest {
    /// `run=summary`.
    Summary,
    /// `--append` as is.
    Run,
    /// `run=layout`.
    Layout,
    /// `run=test`, all tests or the named ones.
    Test(Vec<String>),
    /// `run=bench` with the benchmark's kernel keys.
    Bench,
}

impl Guest {
    /// The kernel command line: this guest's words, then `append`'s.
    #[must_use]
    pub fn cmdline(&self, append: &str) -> String {
        let base = match self {
            Guest::Summary => "run=summary".to_owned(),
            Guest::Test(names) if names.is_empty() => "run=test".to_owned(),
            Guest::Test(names) => format!("run=test test={}", names.join(",")),
            Guest::Bench => "run=bench".to_owned(),
            Guest::Layout => "run=layout".to_owned(),
            Guest::Run => String::new(),
        };
        let mut words: Vec<&str> = base.split_ascii_whitespace().collect();
        words.extend(append.split_ascii_whitespace());
        words.join(" ")
    }
}

/// The workspace, once the files named on the command line are checked: each must exist
/// and be a file.
pub(super) fn workspace(o: &Options) -> Result<Workspace, RunError> {
    for f in [&o.kernel, &o.image, &o.bench.linux_kernel]
        .into_iter()
        .flatten()
    {
        if f.is_dir() {
            return Err(RunError::NotAFile(f.clone()));
        }
        if !f.is_file() {
            return Err(RunError::NotFound(f.clone()));
        }
    }
    Ok(Workspace::locate()?)
}

/// `guest` in QEMU with `o`: the accelerator, the kernel (or `--kernel`/`--image`) with the
/// guest's command line, the launch; then `bench` goes on in [`crate::bench::run`] and the
/// others boot once and report.
pub fn run(guest: &Guest, o: &Options) -> Result<RunnerExit, RunError> {
    let ws = &workspace(o)?;
    let coherence = *guest == Guest::Bench && o.bench.coherence;
    // The accelerator first: its line opens the output.
    let accel = if coherence {
        coherence_accel(o.accel)?
    } else {
        choose_accel(ws, o)?
    };
    let append = match guest {
        Guest::Bench => {
            let mut words = o.bench.kernel_keys();
            words.push(o.append.clone());
            words.join(" ")
        }
        _ => o.append.clone(),
    };
    let cmdline = guest.cmdline(&append);
    // The ELF whose symbols name the coherence plugin's mark page and hot lines' code, and
    // the ELF32 a cost boot boots directly.
    let mut symbols_elf = None;
    let mut elf32_for_cost = None;
    let medium = match (&o.kernel, &o.image) {
        (Some(elf32), _) => {
            symbols_elf = Some(elf32.clone());
            elf32_for_cost = Some(elf32.clone());
            Medium::Kernel {
                elf32: elf32.clone(),
                cmdline: cmdline.clone(),
            }
        }
        (None, Some(img)) => {
            eprintln!(
                "kx: booting {} as is; its grub.cfg decides the command line",
                img.display()
            );
            Medium::Image(img.clone())
        }
        (None, None) => {
            let kernel = build_kernel(ws, o.build())?;
            symbols_elf = Some(kernel.elf64.clone());
            elf32_for_cost = Some(kernel.elf32.clone());
            medium_for(ws, &kernel, o.mode, &cmdline)?
        }
    };
    // A test name that selects nothing is the kernel's bad command line: said here, from
    // the ELF's registrations, before anything boots (same status as the kernel's).
    if let (Guest::Test(_), Some(elf)) = (guest, &symbols_elf)
        && let Err(why) = crate::ktests::check(&cmdline, &read_tests(elf)?)
    {
        eprintln!("kx: bad command line: {why}; `kx test --list` lists the tests");
        return Ok(RunnerExit::Kernel(abi::ExitCode::BadCmdline));
    }
    let cost = match (&symbols_elf, &elf32_for_cost) {
        _ if *guest != Guest::Bench || coherence || o.bench.no_cost => None,
        (Some(elf), Some(elf32)) => Some(crate::bench::cost::CostPlan {
            elf: elf.clone(),
            elf32: elf32.clone(),
            cmdline: guest.cmdline(&crate::bench::cost::kernel_words(o)),
        }),
        _ => {
            eprintln!(
                "kx: no cost boot: a prebuilt --image has no symbols for the plugin's mark \
                 page (boot the kernel with --kernel, or leave --image out, to count)"
            );
            None
        }
    };
    let coherence = match (coherence, symbols_elf) {
        (false, _) => None,
        (true, None) => {
            return Err(RunError::Plugin(
                "--coherence needs the kernel ELF for its symbols, not a prebuilt --image".into(),
            ));
        }
        (true, Some(elf)) => Some(crate::coherence::prepare(
            ws,
            &elf,
            o.nodes.unwrap_or(1),
            &o.bench,
            &ws.work_dir().join("coherence").join("coherence.jsonl"),
            o.quiet,
        )?),
    };
    let timeout = o.timeout.unwrap_or(match guest {
        Guest::Bench => BENCH_TIMEOUT,
        _ => o.mode.default_timeout_for(o.smp, crate::cli::host_cores()),
    });
    eprintln!(
        "kx: booting ({} mode, {}, {} vCPUs, {} MiB{}, timeout {} s): {}",
        o.mode,
        accel,
        o.smp,
        o.mem_mib,
        o.nodes.map_or(String::new(), |n| format!(
            ", {n} NUMA node{}",
            if n == 1 { "" } else { "s" }
        )),
        timeout.as_secs(),
        if cmdline.is_empty() {
            "(empty command line)"
        } else {
            &cmdline
        }
    );
    let mut launch = launch(o.mode, o.smp, o.mem_mib, o.nodes, medium);
    launch.accel = accel;
    launch.plugin = coherence.as_ref().map(|c| c.load.clone());
    launch.tcg_single = o.bench.tcg_single;
    if o.nodes_host {
        // `kx bench` pins the vCPUs to the mirrored nodes too (crate::bench::run).
        let host = crate::placement::HostPlacement::choose(o.smp as usize, o.bench.smt, true)
            .map_err(|why| RunError::BadInput {
                path: PathBuf::from("/sys/devices/system"),
                why: format!("--nodes host: {why}"),
            })?;
        eprintln!("kx: --nodes host: {}", host.mirror_line());
        launch.mirror = Some(host.mirror());
    }
    if *guest == Guest::Bench {
        return crate::bench::run::bench(
            ws,
            o,
            &launch,
            timeout,
            crate::bench::run::Counting {
                coherence: coherence.as_ref(),
                cost: cost.as_ref(),
            },
        );
    }
    let out = boot(ws, &launch, timeout, !o.quiet)?;
    Ok(report(guest, o, &cmdline, &out))
}

/// The in-kernel tests the kernel ELF at `elf` registers; an ELF without them is bad input.
pub(super) fn read_tests(elf: &std::path::Path) -> Result<Vec<crate::ktests::KTest>, RunError> {
    crate::ktests::read(elf).map_err(|why| RunError::BadInput {
        path: elf.to_owned(),
        why,
    })
}

/// The accelerator of a `--coherence` run: TCG, since under KVM no guest access passes
/// through QEMU; `--accel kvm` is refused.
fn coherence_accel(request: crate::accel::AccelRequest) -> Result<crate::accel::Accel, RunError> {
    if request == crate::accel::AccelRequest::Kvm {
        return Err(RunError::Plugin(
            "--coherence: the plugin counts the accesses TCG emulates; under --accel kvm there \
             are none (use --accel tcg or auto)"
                .into(),
        ));
    }
    eprintln!("kx: accelerator: tcg (--coherence: the plugin sees only emulated accesses)");
    Ok(crate::accel::Accel::Tcg)
}

/// The accelerator for `o.accel` (see [`crate::accel`]): the device check and the probe
/// (cached per host), which boots this workspace's kernel (or `--kernel`). Prints the
/// choice and why as the first line of the run's output.
fn choose_accel(ws: &Workspace, o: &Options) -> Result<crate::accel::Accel, RunError> {
    use crate::accel::probe as accel;
    use crate::accel::{Accel, AccelRequest};
    if o.accel == AccelRequest::Tcg {
        eprintln!("kx: accelerator: tcg (--accel tcg)");
        return Ok(Accel::Tcg);
    }
    host_deps::ensure(&[Purpose::Qemu])?;
    // The kernel probed is part of the probe's key: built first (the run builds it anyway),
    // so a build error fails the run here and never reaches the probe's cache.
    let elf32 = match &o.kernel {
        Some(k) => k.clone(),
        None => {
            build_kernel(
                ws,
                BuildOptions {
                    profile: o.profile,
                    quiet: true,
                },
            )?
            .elf32
        }
    };
    let probe = || {
        let qemu = boot::tool::find_on_path(QEMU).unwrap_or_else(|| PathBuf::from(QEMU));
        let version = crate::bench::host::qemu_version(&qemu).unwrap_or_else(|| "unknown".into());
        let key = accel::ProbeKey::for_host(&qemu, &version, &elf32);
        let dir = accel::cache_dir();
        let (rec, cached) = accel::cached_probe(dir.as_deref(), &key, || {
            accel::probe(&qemu, &elf32, accel::PROBE_TIMEOUT)
        });
        let source = match (cached, &dir) {
            (true, Some(d)) => format!("cached in {}", d.join("kvm-probe.json").display()),
            (false, Some(d)) => {
                format!("run now, cached in {}", d.join("kvm-probe.json").display())
            }
            (_, None) => "run now, not cached (no cache directory)".to_owned(),
        };
        (rec.outcome, source)
    };
    let d = accel::decide(
        o.accel,
        || accel::check_device(std::path::Path::new("/dev/kvm")),
        probe,
    )
    .map_err(RunError::KvmUnavailable)?;
    eprintln!("kx: accelerator: {}", d.why);
    Ok(d.accel)
}

fn report(guest: &Guest, o: &Options, cmdline: &str, out: &RunOutput) -> RunnerExit {
    let exit = match guest {
        Guest::Test(_) => {
            // What must report is what the kernel will read from its command line.
            let names = crate::ktests::named(cmdline);
            let requested = (!names.is_empty()).then_some(names.as_slice());
            let report = TestReport::parse(&out.serial);
            print_test_report(&report, out, requested);
            test_exit(out, &report, requested)
        }
        _ => exit_for(out.outcome),
    };
    eprintln!(
        "kx: {} (QEMU ran {:.2} s; first serial output at {})",
        out.outcome,
        out.elapsed.as_secs_f64(),
        out.first_output
            .map_or("never".to_owned(), |d| format!("{:.2} s", d.as_secs_f64()))
    );
    if exit != RunnerExit::Success {
        if o.quiet && !out.serial.is_empty() {
            eprintln!("kx: last serial lines:\n{}", out.tail(20));
        }
        if !out.qemu_stderr.trim().is_empty() {
            eprintln!("kx: QEMU said:\n{}", out.qemu_stderr.trim_end());
        }
    }
    exit
}

fn print_test_report(report: &TestReport, out: &RunOutput, requested: Option<&[String]>) {
    println!();
    for c in &report.cases {
        match (&c.passed, &c.reason) {
            (true, _) => println!("  ok      {}", c.name),
            (false, Some(r)) => println!("  FAILED  {}: {r}", c.name),
            (false, None) => println!("  FAILED  {}", c.name),
        }
    }
    let (p, f) = report.counts();
    println!("{p} passed, {f} failed");
    let problems = report.problems(out.outcome, requested);
    for problem in problems
        .iter()
        .filter(|p| !matches!(p, crate::results::Problem::Failed { .. }))
    {
        println!("  problem: {problem}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines() {
        assert_eq!(Guest::Summary.cmdline(""), "run=summary");
        assert_eq!(Guest::Test(vec![]).cmdline("cpus=2"), "run=test cpus=2");
        assert_eq!(
            Guest::Test(vec!["a".into(), "b".into()]).cmdline(""),
            "run=test test=a,b"
        );
        assert_eq!(Guest::Run.cmdline("  run=panic  "), "run=panic");
        assert_eq!(Guest::Bench.cmdline(""), "run=bench");
        // The kernel's own parser accepts what the runner generates.
        for g in [
            Guest::Summary,
            Guest::Test(vec!["x".into()]),
            Guest::Bench,
            Guest::Layout,
        ] {
            assert!(abi::cmdline::parse(&g.cmdline("cpus=1"), false).is_ok());
        }
    }
}
