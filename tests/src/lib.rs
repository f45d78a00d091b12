//! Shared harness of the host integration tests: one kernel build per test process, one QEMU
//! at a time, and boot helpers that go through the same code as the `kx` runner.
//!
//! The kernel is built once per test process ([`kernel`], behind a `OnceLock`) with the
//! profile named by `KX_TEST_PROFILE` (`release`, the default, or `debug`). QEMU runs are
//! serialised through one global lock ([`one_qemu_at_a_time`], taken by every boot helper
//! here and by the tests that start QEMU themselves): the CI machines have two cores, and
//! TCG with two vCPUs already uses both. Images are built once per
//! command line and cached for the process. [`bench_direct`] runs `kx bench` itself (boot,
//! progress, results directory) and [`results_dir`] checks what it wrote.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod results_dir;

use boot::{BuildOptions, Kernel, Profile, Workspace};
use qemu::booting::{boot, launch, medium_for};
use qemu::{Medium, Mode, RunOutput, RunnerExit};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// vCPUs every test machine gets (enough to exercise SMP bring-up, few enough for 2 cores).
pub const SMP: u32 = 2;
/// Guest memory of every test machine, MiB.
pub const MEM_MIB: u32 = 256;

/// The workspace under test.
pub fn workspace() -> &'static Workspace {
    static WS: OnceLock<Workspace> = OnceLock::new();
    WS.get_or_init(|| Workspace::locate().unwrap_or_else(|e| panic!("{e}")))
}

/// The profile the tests build (`KX_TEST_PROFILE`, default release).
pub fn profile() -> Profile {
    match std::env::var("KX_TEST_PROFILE").as_deref() {
        Ok("debug") => Profile::Debug,
        Ok("release") | Err(_) => Profile::Release,
        Ok(other) => panic!("KX_TEST_PROFILE must be `debug` or `release`, not `{other}`"),
    }
}

/// The kernel, built on first use and shared by every test in the process.
pub fn kernel() -> &'static Kernel {
    static KERNEL: OnceLock<Kernel> = OnceLock::new();
    KERNEL.get_or_init(|| {
        let opts = BuildOptions {
            profile: profile(),
            quiet: true,
        };
        boot::build_kernel(workspace(), opts).unwrap_or_else(|e| panic!("kernel build: {e}"))
    })
}

/// The lock every QEMU of the test process runs under: boot helpers here take it, and a test
/// that starts QEMU itself holds it for as long as that QEMU runs. Not reentrant: a test
/// must not call a boot helper while holding it.
#[must_use = "QEMU runs alone only while the guard lives"]
pub fn one_qemu_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    // A test that panicked while holding the lock left nothing inconsistent behind.
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Boots `-kernel` with `cmdline` on [`SMP`] vCPUs, killing QEMU after `timeout`.
pub fn boot_direct(cmdline: &str, timeout: Duration) -> RunOutput {
    boot_direct_smp(SMP, cmdline, timeout)
}

/// Boots `-kernel` with `cmdline` on `smp` vCPUs, killing QEMU after `timeout`.
pub fn boot_direct_smp(smp: u32, cmdline: &str, timeout: Duration) -> RunOutput {
    boot_direct_numa(smp, None, cmdline, timeout)
}

/// Boots `-kernel` with `cmdline` on `smp` vCPUs and `nodes` NUMA nodes (as `kx --nodes`),
/// killing QEMU after `timeout`.
pub fn boot_direct_numa(
    smp: u32,
    nodes: Option<u32>,
    cmdline: &str,
    timeout: Duration,
) -> RunOutput {
    let medium = Medium::Kernel {
        elf32: kernel().elf32.clone(),
        cmdline: cmdline.to_owned(),
    };
    run(Mode::Direct, smp, nodes, medium, timeout)
}

/// Boots the GRUB image made for `cmdline` in `mode` (an image mode).
pub fn boot_image(mode: Mode, cmdline: &str, timeout: Duration) -> RunOutput {
    assert!(mode.uses_image(), "{mode} does not boot an image");
    static IMAGES: Mutex<Option<HashMap<String, Medium>>> = Mutex::new(None);
    let medium = {
        let mut images = IMAGES.lock().unwrap_or_else(|p| p.into_inner());
        let images = images.get_or_insert_with(HashMap::new);
        match images.get(cmdline) {
            Some(m) => m.clone(),
            None => {
                let m = medium_for(workspace(), kernel(), mode, cmdline)
                    .unwrap_or_else(|e| panic!("image for `{cmdline}`: {e}"));
                images.insert(cmdline.to_owned(), m.clone());
                m
            }
        }
    };
    run(mode, SMP, None, medium, timeout)
}

fn run(mode: Mode, smp: u32, nodes: Option<u32>, medium: Medium, timeout: Duration) -> RunOutput {
    let launch = launch(mode, smp, MEM_MIB, nodes, medium);
    let _one_at_a_time = one_qemu_at_a_time();
    boot(workspace(), &launch, timeout, false).unwrap_or_else(|e| panic!("{mode} boot: {e}"))
}

/// Boots `-kernel` with `cmdline` on `smp` vCPUs with the TCG plugin `plugin` loaded.
pub fn boot_with_plugin(
    smp: u32,
    cmdline: &str,
    plugin: qemu::launch::PluginLoad,
    timeout: Duration,
) -> Result<RunOutput, qemu::RunError> {
    let medium = Medium::Kernel {
        elf32: kernel().elf32.clone(),
        cmdline: cmdline.to_owned(),
    };
    let mut launch = launch(Mode::Direct, smp, MEM_MIB, None, medium);
    launch.plugin = Some(plugin);
    let _one_at_a_time = one_qemu_at_a_time();
    boot(workspace(), &launch, timeout, false)
}

/// Runs `kx bench` as the runner does (direct mode, [`SMP`] vCPUs, the test kernel) with
/// the benchmark options `bench`, writing the results directory to `out`; the runner's exit.
pub fn bench_direct(
    bench: qemu::cli::BenchOptions,
    out: &std::path::Path,
    timeout: Duration,
) -> RunnerExit {
    bench_in(Mode::Direct, bench, out, timeout)
}

/// `kx bench --mode MODE` with `bench`'s options, writing the results directory `out`:
/// the kernel itself in direct mode, the GRUB image made for the bench's command line in
/// the image modes.
pub fn bench_in(
    mode: Mode,
    bench: qemu::cli::BenchOptions,
    out: &std::path::Path,
    timeout: Duration,
) -> RunnerExit {
    // Held from before the image is built: building it beside another test's benchmark
    // is host load that benchmark would exclude runs for.
    let _one_at_a_time = one_qemu_at_a_time();
    let cmdline = qemu::commands::guest::Guest::Bench.cmdline(&bench.kernel_keys().join(" "));
    // kx bench's memory: two instance blocks of seed002's 1500 memcgs live at once.
    let mem = qemu::cli::BENCH_MEM_MIB;
    let options = qemu::cli::Options {
        smp: SMP,
        mem_mib: mem,
        out: Some(out.to_owned()),
        quiet: true,
        bench,
        ..qemu::cli::Options::default()
    };
    let medium = if mode == Mode::Direct {
        Medium::Kernel {
            elf32: kernel().elf32.clone(),
            cmdline,
        }
    } else {
        qemu::booting::medium_for(workspace(), kernel(), mode, &cmdline)
            .unwrap_or_else(|e| panic!("image: {e}"))
    };
    let launch = launch(mode, SMP, mem, None, medium);
    qemu::bench::run::bench(
        workspace(),
        &options,
        &launch,
        timeout,
        qemu::bench::run::Counting::default(),
    )
    .unwrap_or_else(|e| panic!("kx bench: {e}"))
}

/// A readable dump of a run for assertion messages.
pub fn describe(out: &RunOutput) -> String {
    format!(
        "{}\n--- serial (last 40 lines) ---\n{}\n--- QEMU stderr ---\n{}",
        out.outcome,
        out.tail(40),
        out.qemu_stderr.trim_end()
    )
}

/// Asserts that an in-kernel test run passed cleanly: the kernel printed its plan (the tests a
/// `PREFIX*` selection chose from its own table, so a new test joins every run of its
/// prefix without an edit here), every planned test reported `ok` once, the summary and the
/// exit code agree. Returns the names the plan held.
#[track_caller]
pub fn assert_suite_passed(out: &RunOutput) -> Vec<String> {
    let report = qemu::TestReport::parse(&out.serial);
    let Some(plan) = report.plan.clone() else {
        panic!("no KTEST-PLAN line:\n{}", describe(out));
    };
    assert_eq!(report.problems(out.outcome, None), [], "{}", describe(out));
    assert_exit(out, abi::ExitCode::Success);
    plan
}

/// Boots `smp` vCPUs on `nodes` NUMA nodes (as [`boot_direct_numa`]) with
/// `run=test test=SELECTION EXTRA` and asserts that the suite passed
/// ([`assert_suite_passed`]) and that the kernel planned only tests the selection's
/// `PREFIX*` entries (and plain names) choose. The multi-CPU QEMU suites are this call at
/// each size; returns the run, for the lines a suite adds to check.
#[track_caller]
pub fn suite_passes(
    smp: u32,
    nodes: Option<u32>,
    selection: &str,
    extra: &str,
    timeout: Duration,
) -> RunOutput {
    let cmdline = format!("run=test test={selection} {extra}");
    let out = boot_direct_numa(smp, nodes, cmdline.trim_end(), timeout);
    let plan = assert_suite_passed(&out);
    let chosen = |name: &str| {
        selection.split(',').any(|e| match e.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == e,
        })
    };
    let strays: Vec<&String> = plan.iter().filter(|n| !chosen(n)).collect();
    assert!(
        strays.is_empty(),
        "`test={selection}` planned {strays:?}:\n{}",
        describe(&out)
    );
    out
}

/// The first serial line of `out` that starts with `prefix`; fails the test, with the run,
/// when there is none.
#[track_caller]
pub fn line_starting<'o>(out: &'o RunOutput, prefix: &str) -> &'o str {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}...` line:\n{}", describe(out)))
}

/// Asserts that `out` printed the line `want`, exactly.
#[track_caller]
pub fn assert_line(out: &RunOutput, want: &str) {
    assert!(
        out.lines().any(|l| l == want),
        "no `{want}` line:\n{}",
        describe(out)
    );
}

/// Asserts that the kernel ended the run with `code`, dumping the run otherwise.
#[track_caller]
pub fn assert_exit(out: &RunOutput, code: abi::ExitCode) {
    assert_eq!(
        out.outcome,
        qemu::Outcome::Kernel(code),
        "{}",
        describe(out)
    );
}
