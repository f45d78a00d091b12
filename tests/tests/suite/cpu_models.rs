//! The boot matrix: the kernel's system summary (`run=summary`) on every CPU model that
//! `qemu-system-x86_64 -cpu help` lists and TCG can run, and on NUMA layouts `kx --nodes`
//! cannot make (a memoryless node, uneven nodes, a node with memory and no CPU).
//!
//! Each boot is the runner's direct launch (`-machine q35 -accel tcg`, the test kernel, the
//! exit device, `-no-reboot`) with its `-cpu` model and topology replaced, judged by its exit
//! status alone (the kernel's success code: every CPU came up, NUMA discovery and the PMU
//! probe ran), under a short timeout. The whole matrix is printed (model, topology, outcome,
//! seconds), so a run's output can be quoted as is. Models TCG cannot run (`host`, which
//! needs KVM; `base`, a featureless CPU without even SSE2, which this x86_64 kernel, libcore
//! included, needs; the 32-bit models, which have no long mode) are listed with why and not
//! booted.
//!
//! Every model has leaf 0xA zero under TCG (QEMU emulates no PMU), so every summary must say
//! `pmu: none`, never crash on a counter MSR; the NUMA rows check the summary's node lines.
use qemu::process::{Termination, run_with_timeout};
use qemu::{Medium, Mode, Outcome, RunOutput};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Per boot: the summary comes in well under a second; a wedged model must not hold the
/// matrix up.
const TIMEOUT: Duration = Duration::from_secs(20);
const MEM_MIB: u32 = 256;

/// Models not booted (with their `-vN` versions), and why.
const NOT_BOOTED: &[(&str, &str)] = &[
    ("host", "needs KVM (-cpu host is refused under TCG)"),
    (
        "base",
        "no features at all (no SSE/SSE2; tried: it hangs until the timeout): the kernel is \
         built for the x86_64 baseline",
    ),
    (
        "486 athlon coreduo kvm32 n270 pentium pentium2 pentium3 qemu32",
        "32-bit CPUs without long mode: the boot stub cannot enter 64-bit mode (tried: each \
         hangs, silently, until the timeout)",
    ),
];

/// Whether `model` (or the model it is a version of) is in [`NOT_BOOTED`].
fn not_booted(model: &str) -> bool {
    let base = match model.rsplit_once("-v") {
        Some((b, v)) if v.chars().all(|c| c.is_ascii_digit()) => b,
        _ => model,
    };
    NOT_BOOTED
        .iter()
        .any(|(names, _)| names.split(' ').any(|n| n == base))
}

/// `-cpu help`'s model names, in its order (versioned aliases such as `Skylake-Server-v4`
/// included, each a distinct CPUID).
fn models() -> Vec<String> {
    let out = std::process::Command::new("qemu-system-x86_64")
        .args(["-cpu", "help"])
        .output()
        .expect("qemu-system-x86_64 -cpu help");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("x86")).then(|| w.next().map(String::from))?
        })
        .collect()
}

/// A topology: `-smp` and the NUMA arguments, and what the summary must say.
struct Topology {
    name: &'static str,
    smp: u32,
    numa: Vec<String>,
    /// Lines (substrings) the summary must contain.
    expect: Vec<&'static str>,
}

fn numa_topologies() -> Vec<Topology> {
    let node = |id: u32, mib: Option<u32>| -> Vec<String> {
        match mib {
            Some(m) => vec![
                "-object".into(),
                format!("memory-backend-ram,id=ram{id},size={m}M"),
                "-numa".into(),
                format!("node,nodeid={id},memdev=ram{id}"),
            ],
            None => vec!["-numa".into(), format!("node,nodeid={id}")],
        }
    };
    let cpu = |cpu: u32, node: u32| -> Vec<String> {
        vec![
            "-numa".into(),
            format!("cpu,node-id={node},socket-id=0,core-id={cpu},thread-id=0"),
        ]
    };
    let cat = |parts: Vec<Vec<String>>| parts.concat();
    vec![
        Topology {
            name: "2 nodes, node 1 memoryless (256M + 0M, 1 CPU each)",
            smp: 2,
            numa: cat(vec![
                node(0, Some(256)),
                node(1, None),
                cpu(0, 0),
                cpu(1, 1),
            ]),
            // QEMU writes no memory affinity entry for node 1, only its CPU's: the node
            // exists with its CPU and no memory.
            expect: vec![
                "numa: 2 nodes",
                "  node 0 (pxm 0): 255 MiB in 2 ranges, cpus 0",
                "  node 1 (pxm 1): 0 MiB in 0 ranges, cpus 1",
                "pmu: none",
            ],
        },
        Topology {
            name: "2 uneven nodes (192M + 64M, 1 CPU each), SLIT 21",
            smp: 2,
            numa: cat(vec![
                node(0, Some(192)),
                node(1, Some(64)),
                cpu(0, 0),
                cpu(1, 1),
                vec!["-numa".into(), "dist,src=0,dst=1,val=21".into()],
            ]),
            // The firmware keeps the 640 KiB..1 MiB hole and the top of RAM for itself.
            expect: vec![
                "numa: 2 nodes (the ACPI SRAT, distances from the SLIT)",
                "  node 0 (pxm 0): 191 MiB in 2 ranges, cpus 0",
                "  node 1 (pxm 1): 63 MiB in 1 range, cpus 1",
                "  distances: [10 21] [21 10]",
            ],
        },
        Topology {
            name: "3 nodes, node 2 CPU-less (128M + 64M + 64M, 2 CPUs on node 0)",
            smp: 2,
            numa: cat(vec![
                node(0, Some(128)),
                node(1, Some(64)),
                node(2, Some(64)),
                cpu(0, 0),
                cpu(1, 0),
            ]),
            expect: vec![
                "numa: 3 nodes",
                "  node 0 (pxm 0): 127 MiB in 2 ranges, cpus 0,1",
                "  node 2 (pxm 2): 63 MiB in 1 range, cpus none",
            ],
        },
    ]
}

/// The direct launch's arguments with `model`, `smp` and `numa` in place of the runner's
/// `-cpu max`, `-smp 2` and no NUMA.
fn args(kernel: &Path, model: &str, smp: u32, numa: &[String]) -> Vec<OsString> {
    let medium = Medium::Kernel {
        elf32: kernel.to_path_buf(),
        cmdline: "run=summary".into(),
    };
    let launch = qemu::booting::launch(Mode::Direct, 2, MEM_MIB, None, medium);
    let mut a = launch.args().expect("a direct launch");
    let at = |a: &[OsString], flag: &str| {
        a.iter()
            .position(|x| x == flag)
            .unwrap_or_else(|| panic!("no {flag}"))
            + 1
    };
    let cpu = at(&a, "-cpu");
    a[cpu] = model.into();
    let s = at(&a, "-smp");
    a[s] = if numa.is_empty() {
        smp.to_string().into()
    } else {
        format!("{smp},sockets=1,cores={smp},threads=1").into()
    };
    a.extend(numa.iter().map(OsString::from));
    a
}

struct Row {
    model: String,
    topology: String,
    outcome: String,
    ok: bool,
    secs: f64,
}

fn boot(kernel: &Path, model: &str, t: &Topology) -> Row {
    let one_at_a_time = tests::one_qemu_at_a_time();
    let t0 = Instant::now();
    let finished = run_with_timeout(
        &PathBuf::from("qemu-system-x86_64"),
        &args(kernel, model, t.smp, &t.numa),
        TIMEOUT,
        false,
    )
    .expect("QEMU starts");
    drop(one_at_a_time);
    let status = match finished.termination {
        Termination::Exited(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exit {c}"),
            (None, sig) => format!("signal {}", sig.unwrap_or(0)),
        },
        Termination::TimedOut => format!("killed after {} s", TIMEOUT.as_secs()),
    };
    let out = RunOutput::from_finished(finished, TIMEOUT);
    let success = out.outcome == Outcome::Kernel(abi::ExitCode::Success);
    let missing: Vec<&str> = t
        .expect
        .iter()
        .copied()
        .filter(|e| !out.lines().any(|l| l.contains(e)))
        .collect();
    let outcome = match (&out.outcome, missing.is_empty()) {
        (Outcome::Kernel(c), true) => format!("{status}: kernel {c:?}"),
        (o, true) => format!("{status}: {o:?}"),
        (o, false) => format!("{status}: {o:?}, summary lacks {missing:?}"),
    };
    Row {
        model: model.into(),
        topology: t.name.into(),
        outcome,
        ok: success && missing.is_empty(),
        secs: t0.elapsed().as_secs_f64(),
    }
}

#[test]
fn every_tcg_cpu_model_and_numa_layout_boots_the_summary() {
    let kernel = tests::kernel().elf32.clone();
    let all = models();
    for m in ["qemu64", "Skylake-Server", "Icelake-Server", "EPYC", "max"] {
        assert!(all.iter().any(|x| x == m), "-cpu help lacks {m}: {all:?}");
    }
    let plain = |name| Topology {
        name,
        smp: 2,
        numa: Vec::new(),
        expect: vec!["pmu: none", "numa: 1 node"],
    };
    let smp2 = plain("2 vCPUs, no NUMA");
    let mut rows = Vec::new();
    let started = Instant::now();
    for m in &all {
        if not_booted(m) {
            continue;
        }
        rows.push(boot(&kernel, m, &smp2));
    }
    for t in numa_topologies() {
        for m in ["max", "Skylake-Server", "EPYC"] {
            rows.push(boot(&kernel, m, &t));
        }
    }
    let mut report = String::new();
    writeln!(
        report,
        "boot matrix ({} boots, {:.0} s):",
        rows.len(),
        started.elapsed().as_secs_f64()
    )
    .unwrap();
    writeln!(
        report,
        "{:<28} {:<62} {:>5}  outcome",
        "model", "topology", "s"
    )
    .unwrap();
    for r in &rows {
        writeln!(
            report,
            "{:<28} {:<62} {:>5.1}  {}",
            r.model, r.topology, r.secs, r.outcome
        )
        .unwrap();
    }
    for (n, why) in NOT_BOOTED {
        writeln!(report, "{n:<28} not booted: {why}").unwrap();
    }
    println!("{report}");
    let failed: Vec<&Row> = rows.iter().filter(|r| !r.ok).collect();
    assert!(failed.is_empty(), "{} failed:\n{report}", failed.len());
}
