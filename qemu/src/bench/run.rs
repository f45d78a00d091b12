//! `kx bench` and `kx import`: records in, table and results directory out.
//!
//! `kx bench` boots the kernel with `run=bench` and the benchmark's keys, streams serial
//! through [`ProgressView`] (an indicatif bar fed by `KPROGRESS` lines, sized by the `plan`
//! record; boot messages are echoed above it; on a non-terminal the progress lines are
//! printed as they come), then reads the whole log with [`Collected::from_log`], prints the
//! table and writes the directory. `kx import LOG` does the second half for a log captured
//! on a real machine. Both write what they received even when it is incomplete, and say so.
//! After a benchmark boot that ended well, `kx bench` boots the Linux reference
//! ([`super::linux_qemu`]) when asked or when its kernel is at hand, and adds its rows.
//!
//! Exit status: a kernel that did not get to exit cleanly (timeout, panic, exception, QEMU
//! failure) gives its own status; otherwise failed invariants give
//! [`RunnerExit::InvariantsFailed`], malformed or incomplete records
//! [`RunnerExit::BadResults`], and complete ones the kernel's status (so a `test-failure`
//! exit after complete results stays 17).

use super::collect::{Collected, Severity};
use super::host::{self, HostInfo};
use super::output::{self, Written};
use super::results_file::ResultsFile;
use crate::cli::Options;
use crate::exit::exit_for;
use crate::{Launch, Outcome, RunError, RunnerExit};
use abi::ExitCode;
use bench::{Progress, Record, Style, Table};
use boot::Workspace;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// What `kx bench` shows while the kernel runs.
pub struct ProgressView {
    bar: ProgressBar,
    quiet: bool,
}

impl ProgressView {
    /// A view on stderr (hidden when stderr is not a terminal).
    #[must_use]
    pub fn new(quiet: bool) -> ProgressView {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        ProgressView { bar, quiet }
    }

    /// A line of the runner's own (pinning, host load), shown even when quiet, above the bar.
    pub fn message(&self, line: &str) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    fn echo(&self, line: &str) {
        if self.quiet {
            return;
        }
        if self.bar.is_hidden() {
            println!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// One serial line.
    pub fn line(&mut self, line: &str) {
        let line = line.trim_end_matches('\r');
        if let Some(p) = Progress::parse(line) {
            self.bar.set_length(u64::from(p.total));
            self.bar.set_position(u64::from(p.step));
            self.bar.set_message(format!(
                "{} {} {} cpus={} round={}/{}",
                p.scenario, p.config, p.variant, p.cpus, p.round, p.rounds
            ));
            if self.bar.is_hidden() {
                self.echo(line);
            }
            return;
        }
        match bench::record::parse_line(line) {
            Some(Ok(Record::Plan(plan))) => self.bar.set_length(u64::from(plan.total_runs)),
            Some(_) => {}
            None => self.echo(line),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Writes the directory for `c` at `out`, or a fresh `results/<stamp>/` under `root`.
pub fn write_results(
    root: &Path,
    out: Option<&Path>,
    host: HostInfo,
    c: &Collected,
    now: SystemTime,
) -> Result<Written, RunError> {
    let dir = match out {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| RunError::io(d, e))?;
            d.to_owned()
        }
        None => output::fresh_dir(&root.join("results"), &host::dir_stamp(now))?,
    };
    output::write_dir(&dir, &ResultsFile::new(host, c))
}

/// Prints the table (with the notes), the counts, the problems and where the files went.
pub fn print_report(c: &Collected, written: &Written) {
    let results = ResultsFile::new(HostInfo::default(), c);
    println!();
    print!(
        "{}",
        Table::new(&results.summary(), Style::Wide)
            .with_costs(&c.costs)
            .with_notes(&c.notes)
            .with_premises(c.end.as_ref().map_or(&[][..], |e| &e.premises))
    );
    if let Some(coh) = &c.coherence {
        println!();
        print!("{}", crate::coherence::table::render(coh));
        if let Some(p) = &coh.projection {
            println!();
            print!("{}", p.text());
        }
    }
    let measured = c.runs.iter().filter(|r| r.measured()).count();
    println!(
        "\n{} runs ({} measured, {} warm-up), {} comparisons printed, {} recomputed",
        c.runs.len(),
        measured,
        c.runs.len() - measured,
        c.comparisons.len(),
        c.summary.recomputed.len()
    );
    for p in &c.problems {
        eprintln!("kx: results: {p}");
    }
    let plots = written
        .files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "svg"))
        .count();
    let costs = if c.costs.is_empty() {
        ""
    } else {
        ", costs.csv"
    };
    println!(
        "results: {} (results.json, results.csv{costs}, {plots} plot(s), index.html)",
        written.dir.display()
    );
}

/// The exit for a run whose records are `c` and whose QEMU run ended with `outcome`.
#[must_use]
pub fn bench_exit(outcome: Outcome, c: &Collected) -> RunnerExit {
    let kernel = exit_for(outcome);
    match outcome {
        Outcome::Kernel(ExitCode::Success | ExitCode::TestFailure) => match c.worst() {
            Some(Severity::InvariantsFailed) => RunnerExit::InvariantsFailed,
            Some(Severity::BadResults) => RunnerExit::BadResults,
            None => kernel,
        },
        _ => kernel,
    }
}

/// What a `kx bench` boot counts besides its timings.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counting<'a> {
    /// `--coherence`: the timed boot itself runs under the plugin's model.
    pub coherence: Option<&'a crate::coherence::Setup>,
    /// The cost boot that follows a timed boot ([`super::cost`]).
    pub cost: Option<&'a super::cost::CostPlan>,
}

/// `kx bench` after the kernel is built: samples the host's load (and with `--strict`
/// refuses a busy host), chooses where the vCPUs run, boots `launch` with a QMP socket,
/// pins the vCPU threads as soon as QEMU answers, measures other processes' load per run,
/// shows progress; then the Linux reference and the cost boot where asked; reports.
pub fn bench(
    ws: &Workspace,
    o: &Options,
    launch: &Launch,
    timeout: Duration,
    counting: Counting<'_>,
) -> Result<RunnerExit, RunError> {
    use crate::hostload::{self, Monitor, Source};
    use crate::placement::{HostPlacement, PlacementRecord, apply_to_qemu};
    use std::sync::Mutex;
    let coherence = counting.coherence;
    let started = SystemTime::now();
    let source = Source::host();
    let before = match hostload::before_start(&source, o.bench.strict) {
        Ok(b) => b,
        Err(exit) => return Ok(exit),
    };
    let mut launch = launch.clone();
    let placed = HostPlacement::choose(launch.smp as usize, o.bench.smt, o.nodes_host);
    let record = Mutex::new(match &placed {
        Ok(p) => {
            for w in &p.placement.warnings {
                eprintln!("kx: pinning: {w}");
            }
            if o.nodes_host && launch.mirror.is_none() {
                launch.mirror = Some(p.mirror());
            }
            p.record("qemu", Some(launch.accel))
        }
        Err(e) => PlacementRecord {
            mode: "qemu".into(),
            accel: Some(launch.accel),
            error: Some(format!("no placement: {e}")),
            ..PlacementRecord::default()
        },
    });
    let qmp_dir = QmpDir::new()?;
    launch.qmp = Some(qmp_dir.socket());
    let monitor = Mutex::new(Monitor::new(source, before.clone()));
    let view = Mutex::new(ProgressView::new(o.quiet));
    let out = crate::booting::boot_streaming_with(
        ws,
        &launch,
        timeout,
        &mut |pid| {
            let t0 = std::time::Instant::now();
            monitor
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .qemu_started(pid);
            let mut rec = record.lock().unwrap_or_else(|p| p.into_inner());
            if let Ok(p) = &placed {
                apply_to_qemu(
                    pid,
                    &qmp_dir.socket(),
                    &p.placement,
                    &mut rec,
                    t0,
                    t0 + QMP_WAIT,
                );
            }
            let v = view.lock().unwrap_or_else(|p| p.into_inner());
            v.message(&format!("kx: pinning: {}", rec.line()));
        },
        &mut |l| {
            monitor.lock().unwrap_or_else(|p| p.into_inner()).line(l);
            view.lock().unwrap_or_else(|p| p.into_inner()).line(l);
        },
    )?;
    view.into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .finish();
    drop(qmp_dir);
    let record = record.into_inner().unwrap_or_else(|p| p.into_inner());
    let load = monitor
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .record;
    let mut c = Collected::from_log(&out.serial);
    // A run timed while other processes kept the host busy is out of every statistic (the
    // host-load line in the notes names them).
    c.exclude_busy(&load);
    if let Some(setup) = coherence {
        if !out.outcome.is_success()
            && out.serial.trim().is_empty()
            && let Some(why) = crate::coherence::refused(&out.qemu_stderr)
        {
            return Err(RunError::Plugin(format!(
                "--coherence: QEMU did not load the plugin ({}):\n{why}",
                out.outcome
            )));
        }
        attach_coherence(&mut c, setup, &out.serial);
    }
    eprintln!(
        "kx: {} (QEMU ran {:.1} s)",
        out.outcome,
        out.elapsed.as_secs_f64()
    );
    eprintln!("kx: {}", load.line());
    // The reference's boots that ran, one per mapping, and the machine they ran on.
    let mut linux = Vec::new();
    let mut linux_launch = launch.clone();
    if out.outcome.is_success() && !c.is_empty() && coherence.is_none() {
        let env = std::env::var_os(super::linux_qemu::kernel::ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let want = super::linux_qemu::Want::from_options(&o.bench, env);
        // The same machine without the benchmark boot's QMP socket (its directory is gone).
        linux_launch.qmp = None;
        for mapping in super::linux_qemu::Want::mappings(&o.bench) {
            // Not asked for, not at hand (the note says so once) or failed (the problem
            // says why; the next mapping would boot the same kernel on the same machine).
            let Some(booted) =
                super::linux_qemu::attach(&mut c, &want, &linux_launch, mapping, o.quiet)
            else {
                break;
            };
            linux.push(booted);
        }
    }
    if let Some(r) = &c.coherence {
        c.costs = super::cost::from_coherence(r);
    }
    // A QEMU that cannot load the plugin, or a kernel without the marks, is the run's
    // error, said after the timed results are written.
    let mut cost_error = None;
    let mut plugin = None;
    if let Some(cost) = counting.cost
        && out.outcome.is_success()
        && !c.is_empty()
    {
        match cost.attach(ws, o, &mut c) {
            Ok(p) => plugin = Some(p),
            Err(e) => cost_error = Some(e),
        }
    }
    // Linux's counts per page beside the kernel's (for each mapping whose timed reference
    // ran), under the plugin the cost boot loaded.
    if let Some(plugin) = &plugin {
        for booted in &linux {
            super::linux_qemu::attach_cost(
                &mut c,
                booted,
                &linux_launch,
                plugin,
                super::cost::SECONDS.as_nanos(),
                o.quiet,
            );
        }
    }
    let exit = bench_exit(out.outcome, &c);
    if c.is_empty() {
        eprintln!("kx: no KRESULT records on serial; nothing written");
        if o.quiet && !out.serial.is_empty() {
            eprintln!("kx: last serial lines:\n{}", out.tail(20));
        }
        return Ok(if exit == RunnerExit::Success {
            RunnerExit::BadResults
        } else {
            exit
        });
    }
    super::platform_note::apply(&mut c.notes, launch.accel, &record, &load);
    let mut host = HostInfo::gather("kx bench", ws.root(), started);
    let qemu = boot::tool::find_on_path(boot::host_deps::QEMU)
        .unwrap_or_else(|| PathBuf::from(boot::host_deps::QEMU));
    host.qemu_version = host::qemu_version(&qemu);
    host.outcome = Some(out.outcome.to_string());
    host.accel = Some(launch.accel);
    host.placement = Some(record);
    host.host_load = Some(load);
    let written = write_results(ws.root(), o.out.as_deref(), host, &c, started)?;
    if let Some(setup) = coherence {
        let to = written.dir.join("coherence.jsonl");
        if let Err(e) = std::fs::copy(&setup.out, &to) {
            eprintln!(
                "kx: coherence: could not keep the plugin's output as {}: {e}",
                to.display()
            );
        }
    }
    print_report(&c, &written);
    if !out.outcome.is_success() {
        eprintln!(
            "kx: the run did not end with success ({}); what was received is in {}",
            out.outcome,
            written.dir.display()
        );
    }
    if let Some(e) = cost_error {
        return Err(e);
    }
    Ok(exit)
}

/// Reads the plugin's output into `c.coherence`; what is missing or does not fit is a
/// problem of the results (a count never reported is an error, not a zero).
fn attach_coherence(c: &mut Collected, setup: &crate::coherence::Setup, serial: &str) {
    use super::collect::Problem;
    let text = match std::fs::read_to_string(&setup.out) {
        Ok(t) => t,
        Err(e) => {
            c.problems.push(Problem::Coherence(format!(
                "the plugin wrote no output ({}: {e})",
                setup.out.display()
            )));
            return;
        }
    };
    match coherence::report::read(&text) {
        Ok((header, reports)) => {
            let objects = crate::coherence::results::objects(serial);
            let mut r = crate::coherence::results::attach(
                header,
                reports,
                &c.runs,
                &setup.symbols,
                &objects,
            );
            crate::coherence::judge(&mut r);
            for p in &r.problems {
                c.problems.push(Problem::Coherence(p.clone()));
            }
            c.coherence = Some(r);
        }
        Err(why) => c.problems.push(Problem::Coherence(format!(
            "{}: {why}",
            setup.out.display()
        ))),
    }
}

/// How long the runner waits for QEMU's QMP socket to answer before giving up on pinning.
const QMP_WAIT: Duration = Duration::from_secs(15);

/// A private directory for QEMU's QMP socket, removed on drop.
struct QmpDir(PathBuf);

impl QmpDir {
    fn new() -> Result<QmpDir, RunError> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "kx-qmp-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| RunError::io(&dir, e))?;
        Ok(QmpDir(dir))
    }

    fn socket(&self) -> PathBuf {
        self.0.join("qmp.sock")
    }
}

impl Drop for QmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `kx import LOG`: the results directory of a captured serial log.
pub fn import(root: &Path, log: &Path, out: Option<&Path>) -> Result<RunnerExit, RunError> {
    if log.is_dir() {
        return Err(RunError::NotAFile(log.to_owned()));
    }
    let bytes = std::fs::read(log).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            RunError::NotFound(log.to_owned())
        } else {
            RunError::io(log, e)
        }
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let c = Collected::from_log(&text);
    if c.is_empty() {
        return Err(RunError::BadInput {
            path: log.to_owned(),
            why: c.why_empty(),
        });
    }
    import_collected(root, &log.display().to_string(), &c, out)
}

/// The second half of `kx import` and `kx import --qr`: the results directory of the records
/// read from `source` (a log's path, or the images'), the report and the exit status.
pub fn import_collected(
    root: &Path,
    source: &str,
    c: &Collected,
    out: Option<&Path>,
) -> Result<RunnerExit, RunError> {
    let now = SystemTime::now();
    let mut host = HostInfo::gather("kx import", root, now);
    host.log = Some(source.to_owned());
    let written = write_results(root, out, host, c, now)?;
    println!(
        "kx import: {}: {} runs, {} comparisons, {} progress lines{}",
        source,
        c.runs.len(),
        c.comparisons.len(),
        c.progress_lines,
        if c.complete() {
            "; complete"
        } else {
            "; INCOMPLETE (see below)"
        }
    );
    print_report(c, &written);
    Ok(match c.worst() {
        Some(Severity::InvariantsFailed) => RunnerExit::InvariantsFailed,
        Some(Severity::BadResults) => RunnerExit::BadResults,
        None => RunnerExit::Success,
    })
}

/// Where `kx compare` writes its page without `--out`: beside the first directory.
#[must_use]
pub fn compare_page_path(dirs: &[PathBuf]) -> PathBuf {
    let name = |d: &PathBuf| {
        d.file_name()
            .map_or("results".into(), |n| n.to_string_lossy().into_owned())
    };
    let mut file = format!("compare-{}", name(&dirs[0]));
    if let Some(second) = dirs.get(1) {
        file.push_str(&format!("-vs-{}", name(second)));
    }
    if dirs.len() > 2 {
        file.push_str(&format!("-and-{}-more", dirs.len() - 2));
    }
    file.push_str(".html");
    let first = dirs[0].canonicalize().unwrap_or_else(|_| dirs[0].clone());
    first
        .parent()
        .map_or_else(|| PathBuf::from(&file), |p| p.join(&file))
}

/// `kx compare DIR...`.
pub fn compare(dirs: &[PathBuf], out: Option<&Path>) -> Result<RunnerExit, RunError> {
    let sides = dirs
        .iter()
        .map(|d| super::compare::Side::read(d.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let table = super::compare::text(&sides);
    print!("{table}");
    let path = out.map_or_else(|| compare_page_path(dirs), Path::to_path_buf);
    std::fs::write(&path, super::compare::html(&sides, &table))
        .map_err(|e| RunError::io(&path, e))?;
    println!("\ncomparison page: {}", path.display());
    Ok(RunnerExit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(end: bool, invariants_ok: bool) -> Collected {
        log_with(end, invariants_ok, vec![])
    }

    fn log_with(end: bool, invariants_ok: bool, failures: Vec<String>) -> Collected {
        let mut runs = Vec::new();
        for round in 1..=2 {
            for v in ["A", "B"] {
                runs.push(
                    bench::Run::new(
                        "seed003-pft",
                        "anon",
                        v,
                        1,
                        round,
                        false,
                        100 + u64::from(round),
                        1000,
                    )
                    .unwrap(),
                );
            }
        }
        let mut text: String = runs
            .iter()
            .map(|r| format!("{}\n", bench::KResult::line(r)))
            .collect();
        let cmp = bench::Comparison::from_runs("seed003-pft", "anon", 1, "A", "B", &runs).unwrap();
        text.push_str(&format!("{}\n", bench::KResult::line(&cmp)));
        if end {
            let e = bench::End {
                runs: 4,
                comparisons: 1,
                invariants_ok,
                failures,
                elapsed_ns: 1,
                premises: vec![],
            };
            text.push_str(&format!("{}\n", bench::KResult::line(&e)));
        }
        Collected::from_log(&text)
    }

    #[test]
    fn exits() {
        let ok = Outcome::Kernel(ExitCode::Success);
        let failed = Outcome::Kernel(ExitCode::TestFailure);
        assert_eq!(bench_exit(ok, &log(true, true)), RunnerExit::Success);
        assert_eq!(bench_exit(ok, &log(false, true)), RunnerExit::BadResults);
        assert_eq!(
            bench_exit(ok, &log(true, false)),
            RunnerExit::InvariantsFailed
        );
        assert_eq!(
            bench_exit(failed, &log(true, false)),
            RunnerExit::InvariantsFailed
        );
        assert_eq!(
            bench_exit(failed, &log(true, true)),
            RunnerExit::Kernel(ExitCode::TestFailure)
        );
        let timeout = Outcome::Timeout(Duration::from_secs(1));
        assert_eq!(bench_exit(timeout, &log(false, true)), RunnerExit::Timeout);
        let panic = Outcome::Kernel(ExitCode::Panic);
        assert_eq!(
            bench_exit(panic, &log(false, true)),
            RunnerExit::Kernel(ExitCode::Panic)
        );
    }

    #[test]
    fn a_run_stopped_by_a_scenario_error_is_bad_results() {
        let ok = Outcome::Kernel(ExitCode::TestFailure);
        let stopped = log_with(true, true, vec!["seed003-pft anon A: setup failed".into()]);
        assert_eq!(bench_exit(ok, &stopped), RunnerExit::BadResults);
        assert!(
            stopped.problems.iter().any(|p| p.to_string()
                == "the benchmark stopped early; seed003-pft anon A: setup failed")
        );
        let violated = log_with(true, false, vec!["lost a folio".into()]);
        assert_eq!(bench_exit(ok, &violated), RunnerExit::InvariantsFailed);
    }

    #[test]
    fn progress_lines_move_the_bar() {
        let mut v = ProgressView::new(true);
        let s = bench::PlanScenario {
            name: "seed003-pft".into(),
            configs: vec!["anon".into()],
            variants: vec!["A".into(), "B".into()],
        };
        let plan = bench::Plan::new(vec![s], vec![1, 2], 2, 1, Some(0.1), None);
        v.line(&format!("{}\r", bench::KResult::line(&plan)));
        assert_eq!(v.bar.length(), Some(12));
        v.line("KPROGRESS 3/12 seed003-pft anon B cpus=1 round=1/2 1000 ops/s\r");
        assert_eq!((v.bar.position(), v.bar.length()), (3, Some(12)));
        assert!(
            v.bar
                .message()
                .contains("seed003-pft anon B cpus=1 round=1/2")
        );
        v.line("some boot line");
        assert_eq!(v.bar.position(), 3);
    }

    #[test]
    fn compare_page_goes_beside_the_first_directory() {
        let p = compare_page_path(&["/no/such/a".into(), "/x/b".into(), "/y/c".into()]);
        assert_eq!(p, PathBuf::from("/no/such/compare-a-vs-b-and-1-more.html"));
    }
}
