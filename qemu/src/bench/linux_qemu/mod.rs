//! The Linux reference of `kx bench` in QEMU: Debian's packaged Linux kernel booted in
//! the same QEMU as the benchmark's own boot (same accelerator and CPU model, vCPUs,
//! memory and NUMA description), running mmap / store to every 4 KiB page / munmap on one
//! pinned thread per CPU for the plan's CPU counts, warm-up and measured rounds and
//! seconds, with transparent huge pages off. Its runs are the rows of scenario `linux`,
//! config `anon` for private mappings and `shmem` for shared ones (Linux's shmem path,
//! [`Mapping`]; a default run boots once for each, [`Want::mappings`]), variant
//! [`VARIANT`], beside the floor and the fault scenarios of the same `kx bench`, with
//! their floor fraction (the rate over that run's floor at the same CPU count, every
//! `limit` run and every floor paired with a fault scenario's round,
//! [`bench::Summary::floor`]): the same emulator executes both kernels' fault paths.
//!
//! - [`kernel`]: which kernel (`--linux-kernel FILE`, `$KX_LINUX_KERNEL`, or Debian's
//!   `linux-image-cloud-amd64` kept in `<kx cache>/linux`, fetched with `apt-get download`);
//! - [`program`]: the `/init` program (C, `cc -static`) and the initramfs around it;
//! - [`cpio`]: the initramfs format;
//! - [`report`]: the program's console lines, the fault check (one minor fault per page
//!   touched: a mismatch is an error, not a result) and the `run` records.
//!
//! When it runs ([`Want`]): in every default-length `kx bench` (not `--quick`) and with
//! `--linux` or `--linux-kernel`, fetching the package (about 26 MB, a second from a
//! Debian mirror) if it is not in the cache, so a fresh machine's default run has the
//! `linux` rows. Where the kernel cannot be had (no network and no mirror, no cache
//! directory), the reference is skipped with one message (a note in the results) and the
//! exit status is the benchmark's; where it ran and failed (the program's error, a
//! fault-count mismatch, a timeout, QEMU's failure), that is a problem of the results
//! ([`crate::RunnerExit::BadResults`]). The QEMU run has a timeout of [`BOOT_ALLOWANCE`]
//! plus four times the runs' planned seconds.
//!
//! With the cost boot (`kx bench` without `--no-cost`), the reference boots once more
//! ([`counted`]): TCG under QEMU's instruction counter (`-icount shift=0`, so a run of
//! the cost boot's length is a fixed number of instructions, not whatever the host
//! managed), one warm-up and one measured run on one pinned thread, KASLR off (it moves
//! the count by about 5% between boots; [`COUNTED_CMDLINE`]), and the coherence plugin in
//! its counting mode, as the kernel's cost boot has it. The program marks its runs and
//! its thread's window in a page of RAM taken out of Linux's memory ([`MARK_PHYS`]), so
//! the plugin counts Linux's instructions, locked RMWs, blocks and unchained transitions
//! per page the way it counts the kernel's: the `linux` row of `costs.csv` beside the
//! kernel's variants. The machine has one vCPU, as the kernel's cost boot;
//! `noreplace-smp` keeps the `lock` prefixes Linux would otherwise rewrite away on a
//! machine of one CPU, so its locked RMWs are counted as the kernel's are at any CPU
//! count. After its runs the program copies the kernel's text symbols from
//! `/proc/kallsyms` to the console (`KXSYM` lines), which name the instructions its
//! locked RMWs came from in `rmw-sites.csv` ([`super::rmw_sites`]).
//!
//! The Linux process runs in a cgroup v2 memcg of its own (as seed001 charges one memcg),
//! with the kernel's default boot options otherwise (`console=ttyS0 quiet panic=-1
//! transparent_hugepage=never`).

pub mod cpio;
pub mod kernel;
pub mod program;
pub mod report;

use super::collect::{Collected, Problem};
use super::rmw_sites::VariantRmwSites;
use crate::launch::{Launch, Medium, PluginLoad};
use crate::mode::Mode;
use crate::process::{Termination, run_streaming};
use bench::{Plan, Run};
pub use program::Mapping;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The scenario name of the reference's rows.
pub const SCENARIO: &str = bench::summary::LINUX_REFERENCE;
/// Its variant.
pub const VARIANT: &str = "mmap-touch-munmap";
/// Pages per mmap/touch/munmap cycle: 2 MiB, one page table, like seed001's window.
pub const PAGES: u64 = 512;
/// The program's isa-debug-exit value when every run is done (QEMU exits 2 * v + 1).
pub const EXIT_DONE: u8 = 0x31;
/// Its value when it failed (it printed `KXLINUX error ...` first).
pub const EXIT_FAILED: u8 = 0x32;
/// Time allowed for Linux to boot under TCG, beyond the runs.
pub const BOOT_ALLOWANCE: Duration = Duration::from_secs(180);
/// The Linux command line.
pub const CMDLINE: &str = "console=ttyS0 quiet panic=-1 transparent_hugepage=never";
/// The counted boot's command line: [`CMDLINE`] with the kernel's address randomisation off.
/// With KASLR on, where the kernel lands moves Linux's count by about 5% between boots
/// (8390 instructions per page in five boots of this project, 7956.6 in another, with the
/// same image and runs), so two reports would not agree on the `linux` row; with
/// `nokaslr` every boot counts the same (7956.6 in three of three). User-space
/// randomisation (`norandmaps`) stays on: it moved nothing measurable.
///
/// `noreplace-smp`: Linux booted on one CPU patches its SMP alternatives to uniprocessor
/// code (every `LOCK_PREFIX` of its spinlocks, atomics and bitops becomes a `ds` prefix,
/// `alternatives_smp_unlock`), so the plugin would count 1.03 locked RMWs per page where
/// the same boot with the option counts 13.66; the kernel beside it keeps its `lock`
/// prefixes at any CPU count. `memmap=4K$` takes the page at [`MARK_PHYS`] out of Linux's
/// memory (an e820 reserved range), for the program to map through `/dev/mem`.
pub const COUNTED_CMDLINE: &str = "console=ttyS0 quiet panic=-1 transparent_hugepage=never \
                                   nokaslr noreplace-smp memmap=4K$0x6000000";
/// Physical address of the counted boot's mark page (`abi::coherence`'s page, here a page
/// of guest RAM): 96 MiB, above the decompressed kernel (which Linux 6.1 places from 16
/// MiB, Debian's image needing 51.5 MiB to decompress) and below the initramfs, which
/// QEMU loads at the top of memory. `/dev/mem` maps it under Debian's `STRICT_DEVMEM` and
/// `IO_STRICT_DEVMEM`: a reserved range is neither System RAM nor claimed by a driver.
pub const MARK_PHYS: u64 = 0x600_0000;
/// The least memory the counted boot runs in (the mark page and the initramfs above it).
pub const COUNTED_MIN_MEM_MIB: u32 = 128;

/// Whether `kx bench` boots the reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Want {
    /// No (a `--quick` run without `--linux`).
    No,
    /// Yes, fetching the package if needed (a default run, or `--linux`).
    Fetch,
    /// Yes, this kernel image (`--linux-kernel` or `$KX_LINUX_KERNEL`).
    Kernel(PathBuf),
}

impl Want {
    /// What `o`'s options ask for (`env`: `$KX_LINUX_KERNEL`; `--linux-shmem` asks as
    /// `--linux` does).
    #[must_use]
    pub fn from_options(o: &crate::cli::BenchOptions, env: Option<PathBuf>) -> Want {
        match (&o.linux_kernel, env, o.linux || o.linux_shmem, o.quick) {
            (Some(k), _, _, _) => Want::Kernel(k.clone()),
            (None, Some(k), _, _) => Want::Kernel(k),
            (None, None, true, _) | (None, None, false, false) => Want::Fetch,
            (None, None, false, true) => Want::No,
        }
    }

    /// The mappings the reference runs its cycles with, one timed boot (and one counted
    /// boot) each, in this order: both, anon then shmem, in a run that is not `--quick`
    /// (the counterparts of seed001's two configs) unless `--linux-shmem` alone narrows it
    /// to shmem; in a `--quick` run, anon for `--linux` (or a named kernel) and shmem for
    /// `--linux-shmem`, both when both are given.
    #[must_use]
    pub fn mappings(o: &crate::cli::BenchOptions) -> Vec<Mapping> {
        match (o.linux, o.linux_shmem, o.quick) {
            (false, true, _) => vec![Mapping::Shared],
            (_, false, true) => vec![Mapping::Private],
            (true, true, _) | (_, false, false) => vec![Mapping::Private, Mapping::Shared],
        }
    }

    /// The kernel image, or why the reference is not run.
    pub fn kernel(&self, cache: Option<&Path>) -> Result<PathBuf, String> {
        let no_cache = "no kx cache directory ($KX_CACHE_DIR, $XDG_CACHE_HOME or $HOME unset)";
        match self {
            Want::No => Err("not asked for (--linux adds it to a --quick run)".into()),
            Want::Kernel(k) if k.is_file() => Ok(k.clone()),
            Want::Kernel(k) => Err(format!("{} does not exist", k.display())),
            Want::Fetch => {
                let cache = cache.ok_or(no_cache)?;
                if let Some(k) = kernel::cached(cache) {
                    return Ok(k);
                }
                eprintln!(
                    "kx: fetching Debian's {} into {} (apt-get download)",
                    kernel::META_PACKAGE,
                    kernel::dir(cache).display()
                );
                kernel::fetch(cache)
                    .map_err(|e| format!("cannot fetch Debian's {}: {e}", kernel::META_PACKAGE))
            }
        }
    }
}

/// How one boot of the reference went.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Every run measured and checked: the records and the note that says what they are.
    Runs(Vec<Run>, String),
    /// It ran and failed: why (a problem of the results).
    Failed(String),
}

/// The program's settings for `plan` (its CPU counts, rounds, warm-up and seconds), its
/// cycles mapping their pages by `mapping`.
pub fn conf_for(plan: &Plan, mapping: Mapping) -> Result<program::Conf, String> {
    let seconds = plan
        .seconds
        .filter(|s| s.is_finite() && *s > 0.0)
        .ok_or("the plan has no run length in seconds")?;
    if plan.cpus.is_empty() {
        return Err("the plan has no CPU counts".into());
    }
    Ok(program::Conf {
        cpus: plan.cpus.clone(),
        rounds: plan.rounds,
        warmup: plan.warmup_rounds,
        seconds_ns: (seconds * 1e9).round() as u64,
        pages: PAGES,
        mark: None,
        mapping,
    })
}

/// The QEMU timeout for `conf`: [`BOOT_ALLOWANCE`] plus four times the runs' seconds.
#[must_use]
pub fn timeout_for(conf: &program::Conf) -> Duration {
    let runs = conf.cpus.len() as u64 * u64::from(conf.rounds + conf.warmup);
    BOOT_ALLOWANCE + Duration::from_nanos(conf.seconds_ns.saturating_mul(runs).saturating_mul(4))
}

/// What QEMU's end says: `Ok` for the program's "done", else why not.
pub fn decode_end(t: Termination, timeout: Duration) -> Result<(), String> {
    let code = match t {
        Termination::TimedOut => {
            return Err(format!(
                "Linux did not finish within {} s (killed)",
                timeout.as_secs()
            ));
        }
        Termination::Exited(s) => s.code(),
    };
    match code {
        Some(c) if c == i32::from(EXIT_DONE) * 2 + 1 => Ok(()),
        Some(c) if c == i32::from(EXIT_FAILED) * 2 + 1 => {
            Err("the program failed (exit device: failed)".into())
        }
        Some(0) => Err(
            "Linux stopped without the program's exit (init died: a panic, \
                        or a power-off without the exit device)"
                .into(),
        ),
        other => Err(format!("QEMU failed (exit status {other:?})")),
    }
}

/// Boots `kernel` on `launch`'s machine with the program for `plan`, its cycles mapping
/// their pages by `mapping`; `dir` keeps the program and the initramfs. Progress lines on
/// stderr unless `quiet`.
pub fn run(
    kernel: &Path,
    launch: &Launch,
    plan: &Plan,
    mapping: Mapping,
    dir: &Path,
    quiet: bool,
) -> Outcome {
    let timed = conf_for(plan, mapping).and_then(|conf| {
        let (runs, booted) = boot(kernel, launch, CMDLINE, &conf, dir, quiet)?;
        Ok((runs, booted, conf))
    });
    match timed {
        Ok((runs, b, conf)) => {
            let note = format!(
                "linux reference: Linux {} ({}) booted in the same QEMU ({}, {} vCPUs online, \
                 {} MiB) with kx's initramfs: one pinned thread per CPU repeating mmap of \
                 {PAGES} pages ({}, 2 MiB, MADV_NOHUGEPAGE, transparent huge pages never) / \
                 a store to every 4 KiB page / munmap, for the plan's rounds of {:.2} s, {}; \
                 every run took one minor fault per page touched (at most {} more per \
                 thread); floor = rate / this run's floor (every `limit` run and \
                 every floor paired with a round)",
                b.release,
                kernel.display(),
                b.accel,
                b.online,
                b.mem_mib,
                match mapping {
                    Mapping::Private => "MAP_PRIVATE | MAP_ANONYMOUS: config anon",
                    Mapping::Shared => {
                        "MAP_SHARED | MAP_ANONYMOUS, a shmem object truncated at its munmap: \
                         config shmem"
                    }
                },
                conf.seconds_ns as f64 / 1e9,
                if b.memcg {
                    "in a cgroup v2 memcg of its own"
                } else {
                    "WITHOUT a memcg of its own (cgroup2 could not be set up)"
                },
                report::FAULT_SLACK
            );
            Outcome::Runs(runs, note)
        }
        Err(e) => Outcome::Failed(e),
    }
}

/// The program's settings for the counted boot: one CPU, one warm-up and one measured run
/// of `seconds_ns`, marked at [`MARK_PHYS`], its cycles mapping their pages by `mapping`.
#[must_use]
pub fn counted_conf(seconds_ns: u64, mapping: Mapping) -> program::Conf {
    program::Conf {
        cpus: vec![1],
        rounds: 1,
        warmup: 1,
        seconds_ns,
        pages: PAGES,
        mark: Some(MARK_PHYS),
        mapping,
    }
}

/// The reference's cost per page: `kernel` booted once more on `launch`'s machine at one
/// vCPU of TCG with QEMU's instruction counter (`-icount shift=0`, [`Launch::icount`]: a
/// run is a fixed number of instructions) and the coherence `plugin` counting
/// (`model=off`), running one warm-up and one measured run of `seconds_ns`. The plugin
/// counts what the thread's vCPU executes inside its window: Linux's fault path, its
/// share of each cycle's mmap and munmap and of the timer tick, and the program's loop,
/// as it counts the kernel's windows with their loop and interrupts. The boot turns KASLR
/// off ([`COUNTED_CMDLINE`]), so every boot of one image counts the same, and the
/// instructions that made its locked RMWs are named by the kernel's own symbols, which
/// `/init` copies from `/proc/kallsyms` after its runs (a boot that gives none is an
/// error).
pub fn counted(
    kernel: &Path,
    launch: &Launch,
    seconds_ns: u64,
    mapping: Mapping,
    plugin: &Path,
    dir: &Path,
    quiet: bool,
) -> Result<(bench::Cost, VariantRmwSites), String> {
    if launch.mem_mib < COUNTED_MIN_MEM_MIB {
        return Err(format!(
            "the counted boot needs at least {COUNTED_MIN_MEM_MIB} MiB (its mark page is \
             at {MARK_PHYS:#x}); the machine has {} MiB",
            launch.mem_mib
        ));
    }
    let out = dir.join(format!("counted-{}.jsonl", std::process::id()));
    crate::coherence::fresh_output(&out).map_err(|e| e.to_string())?;
    let mut config = coherence::Config::new(MARK_PHYS, out.clone());
    config.model = false;
    let mut l = launch.clone();
    l.smp = 1;
    l.nodes = None;
    l.mirror = None;
    l.tcg_single = false;
    l.accel = crate::accel::Accel::Tcg;
    l.icount = Some(0);
    l.plugin = Some(PluginLoad {
        path: plugin.to_owned(),
        args: config.to_args(),
    });
    let conf = counted_conf(seconds_ns, mapping);
    let (runs, machine) = boot(kernel, &l, COUNTED_CMDLINE, &conf, dir, quiet)?;
    let text = std::fs::read_to_string(&out)
        .map_err(|e| format!("the plugin wrote no output ({}: {e})", out.display()))?;
    let _ = std::fs::remove_file(&out);
    let (cost, mut sites) = cost_of(&text, &runs)?;
    let symbols = machine
        .symbols
        .map_err(|why| format!("no symbols to name its locked RMWs by: {why}"))?;
    sites.name(&symbols);
    Ok((cost, sites))
}

/// The cost of the counted boot and its locked RMWs by instruction (unnamed): the
/// plugin's output `text` paired with the boot's `runs` (its warm-up left out), which must
/// give exactly the reference's one measured run.
pub fn cost_of(text: &str, runs: &[Run]) -> Result<(bench::Cost, VariantRmwSites), String> {
    let measured = runs.iter().filter(|r| !r.warmup).count();
    if measured != 1 {
        return Err(format!(
            "the counted boot reported {measured} measured runs, not one"
        ));
    }
    let p = super::cost::pair(text, runs).map_err(|why| format!("the plugin's output: {why}"))?;
    if !p.problems.is_empty() {
        return Err(p.problems.join("; "));
    }
    match (p.costs.as_slice(), p.rmw_sites.as_slice()) {
        ([c], [s]) if c.ops > 0 => Ok((c.clone(), s.clone())),
        ([_], _) => Err("the counted boot's measured run touched no page".into()),
        (c, _) => Err(format!("{} costs from one measured run", c.len())),
    }
}

/// What a boot of the reference said about its machine.
struct Machine {
    release: String,
    accel: crate::accel::Accel,
    online: u32,
    mem_mib: u32,
    memcg: bool,
    /// The kernel's text symbols, from the counted boot's `KXSYM` lines, or why none.
    symbols: Result<crate::coherence::symbols::Symbols, String>,
}

/// Boots `kernel` on `launch` with `cmdline` and the program set to `conf`: its checked
/// runs, or why not.
fn boot(
    kernel: &Path,
    launch: &Launch,
    cmdline: &str,
    conf: &program::Conf,
    dir: &Path,
    quiet: bool,
) -> Result<(Vec<Run>, Machine), String> {
    let exe = program::build(dir)?;
    let bytes = std::fs::read(&exe).map_err(|e| format!("cannot read {}: {e}", exe.display()))?;
    let image = program::initramfs(bytes, conf);
    cpio::parse(&image).map_err(|e| format!("the initramfs does not read back: {e}"))?;
    let initrd = dir.join(format!("initramfs-{}.cpio", std::process::id()));
    std::fs::write(&initrd, &image)
        .map_err(|e| format!("cannot write {}: {e}", initrd.display()))?;
    let mut l = launch.clone();
    l.mode = Mode::Direct;
    l.medium = Medium::Kernel {
        elf32: kernel.to_owned(),
        cmdline: cmdline.into(),
    };
    let mut args = l.args()?;
    args.push("-initrd".into());
    args.push(initrd.clone().into());
    let timeout = timeout_for(conf);
    let qemu = boot::tool::find_on_path(boot::host_deps::QEMU)
        .unwrap_or_else(|| PathBuf::from(boot::host_deps::QEMU));
    let what = if l.icount.is_some() {
        "linux reference, counted"
    } else {
        "linux reference"
    };
    if !quiet {
        eprintln!(
            "kx: {what}: booting {} ({} vCPUs, {} MiB, {}{}, timeout {} s)",
            kernel.display(),
            l.smp,
            l.mem_mib,
            l.accel,
            l.icount
                .map_or(String::new(), |s| format!(" -icount shift={s}")),
            timeout.as_secs()
        );
    }
    let finished = run_streaming(&qemu, &args, timeout, false, &mut |line| {
        if quiet {
            return;
        }
        if let Some(Ok(report::Line::Run(r))) = report::parse_line(line) {
            let ops: u64 = r.threads.iter().map(|t| t.ops).sum();
            eprintln!(
                "kx: linux cpus={} round={} {:.0} pages/s",
                r.cpus,
                r.round,
                ops as f64 * 1e9 / r.ns.max(1) as f64
            );
        }
    });
    let _ = std::fs::remove_file(&initrd);
    let finished = finished.map_err(|e| format!("cannot run QEMU: {e}"))?;
    eprintln!(
        "kx: {what}: QEMU ran {:.1} s",
        finished.elapsed.as_secs_f64()
    );
    let serial = String::from_utf8_lossy(&finished.stdout);
    let rep = report::Report::read(&serial);
    let tail = || {
        let lines: Vec<&str> = serial.lines().collect();
        let stderr = String::from_utf8_lossy(&finished.stderr);
        format!(
            "; last console lines: {}{}",
            lines[lines.len().saturating_sub(5)..].join(" | "),
            stderr
                .lines()
                .last()
                .map_or(String::new(), |l| format!("; QEMU: {l}"))
        )
    };
    let runs = match (
        decode_end(finished.termination, timeout),
        rep.runs(conf.mapping),
    ) {
        (_, Err(e)) => return Err(e),
        (Err(e), Ok(_)) => return Err(format!("{e}{}", tail())),
        (Ok(()), Ok(runs)) => runs,
    };
    let expected = conf.cpus.len() * (conf.rounds + conf.warmup) as usize;
    if !rep.end || runs.len() != expected {
        return Err(format!(
            "{} of {expected} runs reported{}",
            runs.len(),
            if rep.end { "" } else { " and no end line" }
        ));
    }
    let (online, memcg, release) = rep.ready.clone().ok_or("no ready line")?;
    Ok((
        runs,
        Machine {
            release,
            accel: l.accel,
            online,
            mem_mib: l.mem_mib,
            memcg,
            symbols: rep.symbols(),
        },
    ))
}

/// A reference that booted and ran: what its counted boot needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Booted {
    /// The Linux image.
    pub kernel: PathBuf,
    /// Where the program and the initramfs are kept.
    pub dir: PathBuf,
    /// How its cycles mapped their pages.
    pub mapping: Mapping,
}

/// Runs the reference for `kx bench` as `want` asks, its cycles mapping their pages by
/// `mapping`, after the benchmark's boot on `launch` whose records are `c`, and adds its
/// runs (or the note saying why it did not run, or the problem) to `c`; what it booted
/// when it ran.
pub fn attach(
    c: &mut Collected,
    want: &Want,
    launch: &Launch,
    mapping: Mapping,
    quiet: bool,
) -> Option<Booted> {
    if *want == Want::No {
        return None;
    }
    let cache = crate::accel::probe::cache_dir();
    let kernel = match want.kernel(cache.as_deref()) {
        Ok(k) => k,
        Err(why) => {
            eprintln!("kx: linux reference: not run: {why}");
            c.notes.push(format!("linux reference: not run: {why}"));
            return None;
        }
    };
    let Some(plan) = c.plan.clone() else {
        let why = "the benchmark printed no plan";
        eprintln!("kx: linux reference: not run: {why}");
        c.notes.push(format!("linux reference: not run: {why}"));
        return None;
    };
    let dir = cache.map_or_else(
        || std::env::temp_dir().join("kx-linux"),
        |d| kernel::dir(&d),
    );
    match run(&kernel, launch, &plan, mapping, &dir, quiet) {
        Outcome::Runs(runs, note) => {
            c.add_reference(runs, note);
            Some(Booted {
                kernel,
                dir,
                mapping,
            })
        }
        Outcome::Failed(why) => {
            eprintln!("kx: linux reference: FAILED: {why}");
            c.problems.push(Problem::Reference(why));
            None
        }
    }
}

/// The reference's counted boot for `kx bench`'s costs ([`counted`], runs of
/// `seconds_ns`, the coherence `plugin` counting), after the timed reference `booted`
/// ran: adds its cost to `c`, or the problem.
pub fn attach_cost(
    c: &mut Collected,
    booted: &Booted,
    launch: &Launch,
    plugin: &Path,
    seconds_ns: u64,
    quiet: bool,
) {
    match counted(
        &booted.kernel,
        launch,
        seconds_ns,
        booted.mapping,
        plugin,
        &booted.dir,
        quiet,
    ) {
        Ok((cost, sites)) => {
            eprintln!(
                "kx: linux reference, counted: {:.1} instructions and {:.2} locked RMWs per \
                 page",
                cost.instructions_per_op,
                cost.rmws_per_op.unwrap_or(f64::NAN)
            );
            c.costs.push(cost);
            c.rmw_sites.push(sites);
        }
        Err(why) => {
            eprintln!("kx: linux reference, counted: FAILED: {why}");
            c.problems.push(Problem::Cost(format!(
                "the linux reference's counted boot: {why}"
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::BenchOptions;
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    #[test]
    fn when_it_runs() {
        let o = |quick, linux, kernel: Option<&str>| BenchOptions {
            quick,
            linux,
            linux_kernel: kernel.map(PathBuf::from),
            ..BenchOptions::default()
        };
        assert_eq!(
            Want::from_options(&o(false, false, None), None),
            Want::Fetch,
            "a default run fetches the kernel"
        );
        assert_eq!(Want::from_options(&o(true, false, None), None), Want::No);
        assert_eq!(Want::from_options(&o(true, true, None), None), Want::Fetch);
        assert_eq!(
            Want::from_options(&o(true, false, Some("/k")), None),
            Want::Kernel("/k".into())
        );
        assert_eq!(
            Want::from_options(&o(true, false, None), Some("/e".into())),
            Want::Kernel("/e".into())
        );
    }

    #[test]
    fn a_full_run_boots_both_mappings_a_quick_one_what_its_flags_name() {
        let o = |quick, linux, linux_shmem| BenchOptions {
            quick,
            linux,
            linux_shmem,
            ..BenchOptions::default()
        };
        let (anon, shmem) = (Mapping::Private, Mapping::Shared);
        for linux in [false, true] {
            assert_eq!(Want::mappings(&o(false, linux, false)), [anon, shmem]);
        }
        assert_eq!(Want::mappings(&o(true, true, true)), [anon, shmem]);
        assert_eq!(Want::mappings(&o(false, false, true)), [shmem]);
        assert_eq!(Want::mappings(&o(false, true, true)), [anon, shmem]);
        assert_eq!(Want::mappings(&o(true, false, true)), [shmem]);
        assert_eq!(Want::mappings(&o(true, true, false)), [anon]);
        // A quick run with a named kernel and no flag: the anonymous reference.
        assert_eq!(Want::mappings(&o(true, false, false)), [anon]);
    }

    #[test]
    fn without_a_kernel_it_is_skipped_with_a_message() {
        let why = Want::Kernel("/no/such/vmlinuz".into())
            .kernel(None)
            .unwrap_err();
        assert_eq!(why, "/no/such/vmlinuz does not exist");
        assert!(Want::Fetch.kernel(None).is_err(), "no cache directory");
        // In a benchmark's records: a note, no problem, no runs.
        let mut c = Collected::default();
        let launch = crate::booting::launch(
            Mode::Direct,
            1,
            256,
            None,
            Medium::Kernel {
                elf32: "/k".into(),
                cmdline: String::new(),
            },
        );
        attach(
            &mut c,
            &Want::Kernel("/no/such/vmlinuz".into()),
            &launch,
            Mapping::Private,
            true,
        );
        assert_eq!(
            c.notes,
            ["linux reference: not run: /no/such/vmlinuz does not exist"]
        );
        assert!(c.runs.is_empty() && c.problems.is_empty());
    }

    #[test]
    fn the_end_is_decoded() {
        let t = |code: i32| Termination::Exited(ExitStatus::from_raw(code << 8));
        let limit = Duration::from_secs(1);
        assert_eq!(decode_end(t(0x63), limit), Ok(()));
        assert!(
            decode_end(t(0x65), limit)
                .unwrap_err()
                .contains("program failed")
        );
        assert!(decode_end(t(0), limit).unwrap_err().contains("init died"));
        assert!(decode_end(t(1), limit).unwrap_err().contains("QEMU failed"));
        assert!(
            decode_end(Termination::TimedOut, limit)
                .unwrap_err()
                .contains("within 1 s")
        );
    }

    #[test]
    fn the_plan_decides_the_runs() {
        let plan = Plan::new(vec![], vec![1, 2], 5, 1, Some(0.5), None);
        let c = conf_for(&plan, Mapping::Shared).unwrap();
        assert_eq!(
            c,
            program::Conf {
                cpus: vec![1, 2],
                rounds: 5,
                warmup: 1,
                seconds_ns: 500_000_000,
                pages: PAGES,
                mark: None,
                mapping: Mapping::Shared,
            }
        );
        assert_eq!(timeout_for(&c), BOOT_ALLOWANCE + Duration::from_secs(24));
        assert!(
            conf_for(
                &Plan::new(vec![], vec![1], 5, 1, None, Some(10)),
                Mapping::Private
            )
            .is_err()
        );
    }

    #[test]
    fn the_counted_boot_is_one_warm_up_and_one_run_priced_by_the_plugin() {
        use crate::bench::cost::tests::{header, report};
        let c = counted_conf(200_000_000, Mapping::Private);
        assert_eq!((c.cpus, c.rounds, c.warmup), (vec![1], 1, 1));
        assert_eq!(c.mark, Some(MARK_PHYS));
        assert!(
            COUNTED_CMDLINE.contains(&format!(" memmap=4K${MARK_PHYS:#x}")),
            "the command line must reserve the mark page"
        );
        assert!(
            COUNTED_CMDLINE.contains(" noreplace-smp "),
            "one CPU's Linux executes its locks without `lock` unless told not to"
        );
        assert!(
            program::SOURCE.contains("check_known(argc, argv, \"noreplace-smp\");"),
            "/init must refuse a kernel that passed the option on as unknown"
        );
        assert!(MARK_PHYS + abi::coherence::MARK_SIZE <= u64::from(COUNTED_MIN_MEM_MIB) << 20);
        // The plugin's n-th run is the n-th run line: the warm-up's count is left out and
        // the measured run's window (4,300,000 instructions, 7,000 locked RMWs) is priced
        // over its 512 pages.
        let log = "KXLINUX ready online=1 memcg=1 thp=never map=private release=6.1\n\
                   KXLINUX run cpus=1 round=0 ns=9000000 pgfault=512 t=0:512:8000000:512\n\
                   KXLINUX run cpus=1 round=1 ns=5000000 pgfault=512 t=0:512:4300000:512\n";
        let runs = report::Report::read(log).runs(Mapping::Private).unwrap();
        let text = [
            header(),
            report(0, 1, 8_000_000, 9_000, true),
            report(1, 1, 4_300_000, 7_000, true),
        ]
        .join("\n");
        let (cost, sites) = cost_of(&text, &runs).unwrap();
        assert_eq!(sites.ops, 512);
        assert!((sites.total_per_op() - 7_000.0 / 512.0).abs() < 1e-9);
        assert_eq!((cost.runs, cost.ops), (1, 512));
        assert!((cost.instructions_per_op - 4_300_000.0 / 512.0).abs() < 1e-9);
        assert_eq!(cost.rmws_per_op, Some(7_000.0 / 512.0));
        assert_eq!(
            (
                cost.scenario.as_str(),
                cost.config.as_str(),
                cost.variant.as_str()
            ),
            (SCENARIO, "anon", VARIANT)
        );
        // Only the warm-up, or two measured runs: no cost.
        assert!(
            cost_of(&text, &runs[..1])
                .unwrap_err()
                .contains("0 measured runs")
        );
        let two = [runs[1].clone(), runs[1].clone()];
        assert!(
            cost_of(&text, &two)
                .unwrap_err()
                .contains("2 measured runs")
        );
        // A window the plugin never saw close, or a second vCPU's window: no figure.
        let open = [
            header(),
            report(0, 1, 1, 1, true),
            report(1, 1, 1, 1, false),
        ]
        .join("\n");
        assert!(cost_of(&open, &runs).unwrap_err().contains("no end mark"));
        let both = [header(), report(0, 1, 1, 1, true), report(1, 2, 1, 1, true)].join("\n");
        assert!(cost_of(&both, &runs).unwrap_err().contains("2 vCPUs"));
        // A plugin that counted fewer runs than the program reported.
        let short = [header(), report(0, 1, 1, 1, true)].join("\n");
        assert!(cost_of(&short, &runs).unwrap_err().contains("cannot be"));
    }

    #[test]
    fn the_counted_boot_refuses_a_machine_without_room_for_its_mark_page() {
        let launch = crate::booting::launch(
            Mode::Direct,
            2,
            COUNTED_MIN_MEM_MIB - 1,
            None,
            Medium::Kernel {
                elf32: "/k".into(),
                cmdline: String::new(),
            },
        );
        let dir = std::env::temp_dir().join(format!("kx-counted-mem-{}", std::process::id()));
        let why = counted(
            Path::new("/k"),
            &launch,
            1,
            Mapping::Private,
            Path::new("/p"),
            &dir,
            true,
        )
        .unwrap_err();
        assert!(why.contains("at least 128 MiB"), "{why}");
    }
}
