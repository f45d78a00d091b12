//! `kx bench`'s cost boot: each variant's guest instructions, locked read-modify-writes and
//! unchained block transitions per operation, counted, beside the timed rates
//! ([`bench::cost`]).
//!
//! After the timed boot (and the Linux reference), the runner boots the same kernel once
//! more: one vCPU (one per NUMA node with `--nodes`, the windows on the first), TCG, the
//! same scenarios and configurations, one instance of one round of [`SECONDS`] per
//! variant, with the coherence plugin loaded in its counting mode (`model=off`: no cache
//! model; store callbacks only, for the kernel's marks and the locked RMWs; one callback
//! per translated block for the instructions, the blocks and the transitions between them
//! that TCG cannot chain). The plugin's n-th run is the n-th `run` record on serial; each
//! measured run's window counts are added per variant and divided by its operations, and
//! so are the instructions its locked RMWs came from, named by the kernel's symbols
//! (`rmw-sites.csv`, [`super::rmw_sites`]). At one vCPU nothing spins, so the figures are
//! the work a variant does: a difference between A and B here is a difference in what
//! they execute, whatever the host's noise did to the rates.
//!
//! The boot runs under QEMU's instruction counter as well (`-icount shift=`[`ICOUNT_SHIFT`]:
//! the guest's clock advances 16 ns per instruction), so a run of [`SECONDS`] is a fixed
//! number of instructions (12.5 million), not whatever the host managed in that time. Every
//! boot of one kernel build then counts the same runs, and its `costs.csv` is the same to
//! the last digit (two boots of `--quick --scenarios limit,seed004-readtwice,seed003-pft`
//! gave identical files), but for the blocks, which may differ by a few per run: where
//! QEMU ends a block early (to take an interrupt, or where the counter's budget runs out)
//! is not fixed. Without it, a run stopped at a host-timed 0.2 s, and where the
//! work changes phase within a run (seed004's reclaim once its file outgrows the limit) the
//! phases' shares moved with the host: seed004's A and A' (the same work built twice)
//! counted 6837 and 6659 instructions per read in one boot and agreed to 0.12% in another;
//! under the counter both count 6735.7, in every boot.
//!
//! Under the plugin the guest runs about eight times slower than without it (the `limit`
//! floor: 58k operations per second against 456k), which is why the rates come from the
//! boot without it. The whole default set takes about a minute.
//! After it, where the Linux reference ran, the reference's counted boot adds the `linux`
//! row's figures per page (`super::linux_qemu::counted`: the same plugin, its marks set
//! by the reference's `/init`).
//! `--no-cost` leaves both boots out; `--coherence` needs none (its plugin counts the same
//! figures in its own runs, [`from_coherence`]); a prebuilt `--image` has no symbols for the
//! plugin's mark page, so the runner says it cannot count and goes on.

use super::collect::{Collected, Problem};
use super::rmw_sites::VariantRmwSites;
use crate::cli::Options;
use crate::launch::PluginLoad;
use crate::{Launch, Medium, Mode, RunError};
use bench::Run;
use bench::cost::{Cost, Counted};
use boot::Workspace;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Guest seconds of each counted run: at [`ICOUNT_SHIFT`], 12.5 million instructions. At
/// 0.05 s of host-timed guest time, seed004's runs were too short for the reclaim its
/// limit brings to reach the same share of A's and A''s reads (5967 against 6815
/// instructions per read); 0.2 s is long enough for every scenario's phases.
pub const SECONDS: abi::bench::Seconds = abi::bench::Seconds::from_micros(200_000);

/// The cost boot's `-icount shift=`: 2^4 = 16 ns of guest time per instruction, so that a
/// run of [`SECONDS`] (12.5 million instructions) takes about as long under the plugin as
/// 0.2 s of host time did (the plugin's counting mode executes about 60 million guest
/// instructions per second on this project's machine).
pub const ICOUNT_SHIFT: u8 = 4;

/// The cost boot's limit (the default set takes about a minute).
pub const TIMEOUT: Duration = Duration::from_secs(900);

/// What a cost boot will boot, chosen before the timed boot and set up after it
/// ([`CostPlan::attach`]), so that nothing of it (the plugin's build, the kernel's symbols)
/// stands before the timed boot or its refusal of a busy host.
#[derive(Clone, Debug)]
pub struct CostPlan {
    /// The kernel ELF whose symbols name the mark page (64- or 32-bit).
    pub elf: PathBuf,
    /// The ELF32 booted directly.
    pub elf32: PathBuf,
    /// The kernel command line (`run=bench` and [`kernel_words`]).
    pub cmdline: String,
}

impl CostPlan {
    /// Builds the plugin, sets the cost boot up ([`prepare`]) and runs it into `c`
    /// ([`attach`]); the plugin it loaded, for the Linux reference's counted boot.
    pub fn attach(
        &self,
        ws: &Workspace,
        o: &Options,
        c: &mut Collected,
    ) -> Result<PathBuf, RunError> {
        let plugin = boot::plugin_build::build_plugin(ws, o.quiet)?;
        let boot = prepare(ws, &self.elf, &self.elf32, self.cmdline.clone(), &plugin, o)?;
        attach(ws, &boot, c)?;
        Ok(plugin)
    }
}

/// A cost boot, ready to start.
#[derive(Clone, Debug)]
pub struct CostBoot {
    /// One vCPU, TCG, the plugin counting.
    pub launch: Launch,
    /// Where the plugin writes its JSON lines.
    pub out: PathBuf,
    /// The kernel's symbols, which name its locked RMWs' instructions.
    pub symbols: crate::coherence::symbols::Symbols,
}

/// The benchmark's words of the cost boot's kernel command line (after `run=bench`) for the
/// options of `o`: the same scenarios, configurations (`memcgs=`, `quick=`), lock
/// statistics (`lock_stat=`: the counts are those of the timed runs' code) and extra words,
/// at one CPU, one instance of one round of [`SECONDS`].
#[must_use]
pub fn kernel_words(o: &Options) -> String {
    let b = &o.bench;
    let mut words: Vec<String> = [&b.scenarios, &b.memcgs, &b.lock_stat]
        .into_iter()
        .flatten()
        .map(ToString::to_string)
        .collect();
    if b.quick {
        words.push("quick=1".into());
    }
    words.extend(
        ["bench_cpus=1", "rounds=1", "instances=1"]
            .into_iter()
            .map(String::from),
    );
    words.push(format!("seconds={SECONDS}"));
    words.push(o.append.clone());
    words.join(" ")
}

/// Sets up the cost boot of the kernel `elf32` (direct boot) with `cmdline` (`run=bench`
/// and [`kernel_words`]), whose symbols `elf` (64- or 32-bit) name the mark page, loading
/// the coherence `plugin` in counting mode, for the options `o` (its output in `ws`).
pub fn prepare(
    ws: &Workspace,
    elf: &Path,
    elf32: &Path,
    cmdline: String,
    plugin: &Path,
    o: &Options,
) -> Result<CostBoot, RunError> {
    let (symbols, mark) = crate::coherence::mark_page(elf, "the cost boot")?;
    let out = ws.work_dir().join("cost").join("cost.jsonl");
    let mut config = coherence::Config::new(mark, out.clone());
    config.model = false;
    let medium = Medium::Kernel {
        elf32: elf32.to_owned(),
        cmdline,
    };
    // One vCPU runs the windows (`bench_cpus=1`); with NUMA nodes the machine has one vCPU
    // per node, as a node without a CPU is not a machine the timed boot ran on.
    let smp = o.nodes.unwrap_or(1).max(1);
    let mut launch = crate::booting::launch(Mode::Direct, smp, o.mem_mib, o.nodes, medium);
    launch.accel = crate::accel::Accel::Tcg;
    launch.icount = Some(ICOUNT_SHIFT);
    launch.plugin = Some(PluginLoad {
        path: plugin.to_owned(),
        args: config.to_args(),
    });
    Ok(CostBoot {
        launch,
        out,
        symbols,
    })
}

/// Runs the cost boot and puts its figures into `c.costs`; what went wrong is a problem of
/// the results (a count never reported is an error), except a QEMU that would not load the
/// plugin, which is the run's error.
pub fn attach(ws: &Workspace, boot: &CostBoot, c: &mut Collected) -> Result<(), RunError> {
    crate::coherence::fresh_output(&boot.out)?;
    eprintln!(
        "kx: cost boot (the windows on 1 vCPU, tcg, the plugin counting; timeout {} s)",
        TIMEOUT.as_secs()
    );
    let out = crate::booting::boot(ws, &boot.launch, TIMEOUT, false)?;
    eprintln!(
        "kx: cost boot: {} (QEMU ran {:.1} s)",
        out.outcome,
        out.elapsed.as_secs_f64()
    );
    if !out.outcome.is_success() {
        if out.serial.trim().is_empty()
            && let Some(why) = crate::coherence::refused(&out.qemu_stderr)
        {
            return Err(RunError::Plugin(format!(
                "the cost boot: QEMU did not load the plugin ({}):\n{why}\n(--no-cost leaves \
                 the cost boot out)",
                out.outcome
            )));
        }
        c.problems.push(Problem::Cost(format!(
            "the cost boot did not end with success ({}); last serial lines:\n{}",
            out.outcome,
            out.tail(8)
        )));
        return Ok(());
    }
    let text = match std::fs::read_to_string(&boot.out) {
        Ok(t) => t,
        Err(e) => {
            c.problems.push(Problem::Cost(format!(
                "the plugin wrote no output ({}: {e})",
                boot.out.display()
            )));
            return Ok(());
        }
    };
    match pair(&text, &Collected::from_log(&out.serial).runs) {
        Ok(mut p) => {
            p.name_sites(&boot.symbols);
            c.problems.extend(p.problems.into_iter().map(Problem::Cost));
            c.costs.extend(p.costs);
            c.rmw_sites.extend(p.rmw_sites);
        }
        Err(why) => c
            .problems
            .push(Problem::Cost(format!("{}: {why}", boot.out.display()))),
    }
    Ok(())
}

/// What a cost boot's plugin output gave, paired with the boot's runs ([`pair`]).
#[derive(Clone, Debug, Default)]
pub struct Paired {
    /// Each measured variant's cost per operation.
    pub costs: Vec<Cost>,
    /// Each measured variant's locked RMWs by instruction, unnamed
    /// ([`super::rmw_sites::VariantRmwSites::name`]).
    pub rmw_sites: Vec<VariantRmwSites>,
    /// What did not fit.
    pub problems: Vec<String>,
}

impl Paired {
    /// Names every variant's sites by the functions of `symbols` (the kernel's).
    pub fn name_sites(&mut self, symbols: &crate::coherence::symbols::Symbols) {
        for v in &mut self.rmw_sites {
            v.name(symbols);
        }
    }
}

/// The costs and locked-RMW sites of the plugin's output `text` paired with the boot's
/// `runs`, and what did not fit; `Err` when the output cannot be read.
pub fn pair(text: &str, runs: &[Run]) -> Result<Paired, String> {
    let (_, reports) = coherence::report::read(text)?;
    let mut paired = Paired::default();
    if reports.len() != runs.len() {
        paired.problems.push(format!(
            "the plugin counted {} runs and the kernel reported {}: the counts cannot be \
             paired with their runs, so none is kept",
            reports.len(),
            runs.len()
        ));
        return Ok(paired);
    }
    let mut counted = Vec::new();
    let mut sites = Vec::new();
    for (rep, run) in reports.iter().zip(runs) {
        if run.warmup {
            continue;
        }
        let what = format!(
            "{} {} {} round {}",
            run.scenario, run.config, run.variant, run.round
        );
        if !rep.complete {
            paired
                .problems
                .push(format!("{what}: the plugin saw no end mark; left out"));
            continue;
        }
        if rep.vcpus.len() != 1 {
            paired.problems.push(format!(
                "{what}: {} vCPUs opened a window, not 1; left out",
                rep.vcpus.len()
            ));
            continue;
        }
        let v = &rep.vcpus[0];
        let names = (
            run.scenario.as_str(),
            run.config.as_str(),
            run.variant.as_str(),
        );
        counted.push((
            names.0,
            names.1,
            names.2,
            Counted {
                ops: run.ops,
                instructions: v.insns,
                rmws: v.rmws,
                blocks: v.blocks,
                unchained: v.unchained,
            },
        ));
        sites.push((names.0, names.1, names.2, &v.rmw_sites[..]));
    }
    paired.costs = bench::cost::per_variant(counted);
    paired.rmw_sites = super::rmw_sites::per_variant(&paired.costs, &sites);
    Ok(paired)
}

/// The costs a `--coherence` run counted itself: its measured runs at one CPU.
#[must_use]
pub fn from_coherence(r: &crate::coherence::results::CoherenceResults) -> Vec<Cost> {
    bench::cost::per_variant(
        r.runs
            .iter()
            .filter(|x| x.cpus == 1 && !x.warmup && x.complete && x.windows == 1)
            .map(|x| {
                (
                    x.scenario.as_str(),
                    x.config.as_str(),
                    x.variant.as_str(),
                    Counted {
                        ops: x.ops,
                        instructions: x.accesses.insns,
                        rmws: x.accesses.rmws,
                        blocks: x.accesses.blocks,
                        unchained: x.accesses.unchained,
                    },
                )
            }),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use coherence::report::{Header, Line, RunReport, VcpuAccesses, Window};

    fn run(variant: &str, round: u32, ops: u64) -> Run {
        Run::new(
            "limit",
            "anon",
            variant,
            1,
            round,
            round == 0,
            ops,
            50_000_000,
        )
        .unwrap()
    }

    /// The plugin's line for its `n`-th run: `vcpus` windows, each counting `insns` and
    /// `rmws`.
    pub(crate) fn report(n: u64, vcpus: u32, insns: u64, rmws: u64, complete: bool) -> String {
        let r = RunReport {
            run: n,
            complete,
            vcpus: (0..vcpus)
                .map(|v| VcpuAccesses {
                    vcpu: v,
                    insns,
                    rmws,
                    blocks: insns / 8,
                    unchained: insns / 100,
                    // Three quarters at one instruction, the rest at another.
                    rmw_sites: vec![
                        coherence::RmwSite {
                            pc: 0x1000,
                            count: rmws - rmws / 4,
                        },
                        coherence::RmwSite {
                            pc: 0x2000,
                            count: rmws / 4,
                        },
                    ],
                    ..VcpuAccesses::default()
                })
                .collect(),
            windows: (0..vcpus)
                .map(|v| Window {
                    vcpu: v,
                    begin_ns: 0,
                    end_ns: Some(1),
                })
                .collect(),
            overlap: Some(1.0),
            models: Vec::new(),
        };
        serde_json::to_string(&Line::Run(r)).unwrap()
    }

    /// The plugin's header line.
    pub(crate) fn header() -> String {
        serde_json::to_string(&Line::Header(Header {
            api: (0, 1),
            vcpus: 1,
            sockets: vec![0],
            cache_kib: 1024,
            ways: 8,
            line_bytes: Vec::new(),
        }))
        .unwrap()
    }

    #[test]
    fn measured_runs_are_paired_in_order_and_warm_ups_left_out() {
        let text = [
            header(),
            report(0, 1, 999_999, 999, true),
            report(1, 1, 100_000, 400, true),
            report(2, 1, 300_000, 1_200, true),
        ]
        .join("\n");
        let runs = [
            run("floor", 0, 7),
            run("floor", 1, 100),
            run("floor", 2, 200),
        ];
        let Paired {
            costs,
            rmw_sites,
            problems,
        } = pair(&text, &runs).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(costs.len(), 1);
        // The sites add up to the RMWs, per operation, warm-up left out.
        assert_eq!(rmw_sites.len(), 1);
        assert_eq!(rmw_sites[0].ops, 300);
        assert!((rmw_sites[0].total_per_op() - 1_600.0 / 300.0).abs() < 1e-9);
        assert_eq!((costs[0].runs, costs[0].ops), (2, 300));
        assert!((costs[0].instructions_per_op - 400_000.0 / 300.0).abs() < 1e-9);
        assert!((costs[0].rmws_per_op.unwrap() - 1_600.0 / 300.0).abs() < 1e-9);
        assert!((costs[0].blocks_per_op.unwrap() - 50_000.0 / 300.0).abs() < 1e-9);
        assert!((costs[0].unchained_per_op.unwrap() - 4_000.0 / 300.0).abs() < 1e-9);
    }

    #[test]
    fn counts_that_do_not_fit_their_runs_are_problems_not_figures() {
        let runs = [run("floor", 0, 7), run("floor", 1, 100)];
        // One run short: nothing can be paired.
        let short = [header(), report(0, 1, 10, 1, true)].join("\n");
        let Paired {
            costs, problems, ..
        } = pair(&short, &runs).unwrap();
        assert!(costs.is_empty());
        assert!(problems[0].contains("counted 1 runs"), "{problems:?}");
        // A run cut short, or counted on two vCPUs, is left out and said.
        for bad in [report(1, 1, 10, 1, false), report(1, 2, 10, 1, true)] {
            let text = [header(), report(0, 1, 10, 1, true), bad].join("\n");
            let Paired {
                costs,
                rmw_sites,
                problems,
            } = pair(&text, &runs).unwrap();
            assert!(costs.is_empty(), "{costs:?}");
            assert!(rmw_sites.is_empty(), "{rmw_sites:?}");
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert!(
                problems[0].contains("limit anon floor round 1"),
                "{problems:?}"
            );
        }
        assert!(pair("not json", &runs).is_err());
    }

    #[test]
    fn the_command_line_keeps_the_scenarios_and_counts_one_short_round_at_one_cpu() {
        let mut o = Options::default();
        o.bench.quick = true;
        o.append = "objects=0".into();
        let words = kernel_words(&o);
        assert_eq!(
            words,
            "quick=1 bench_cpus=1 rounds=1 instances=1 seconds=0.2 objects=0"
        );
        let line = format!("run=bench {words}");
        assert!(abi::cmdline::parse(&line, false).is_ok(), "{line}");
        // The lock statistics the timed boot records are the ones counted.
        o.bench.lock_stat = Some(crate::cli::KernelValue::new("lock_stat", "all").unwrap());
        assert!(
            kernel_words(&o).starts_with("lock_stat=all quick=1 "),
            "{o:?}"
        );
    }
}
