//! The coherence model against known answers: the kernel's `coherence_*` tests booted under
//! the plugin (`kx bench --coherence`'s own build and setup), each a run on two vCPUs whose
//! line traffic is fixed by strict turn-taking (kernel/src/tests/coherence.rs), judged here
//! from the plugin's counts on the lines each test names; and a QEMU that cannot load the
//! plugin ends `kx bench --coherence` with its own error and status instead of a hang.
use coherence::report::{HotLine, RunReport};
use qemu::coherence::{Setup, prepare};
use std::collections::HashMap;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(120);

const TESTS: [&str; 5] = [
    "coherence_one_counter",
    "coherence_false_sharing",
    "coherence_separate_lines",
    "coherence_one_cpu",
    "coherence_ticket_lock",
];

/// One test's run: its operations, its named lines, and the plugin's report.
struct Judged {
    ops: u64,
    lines: HashMap<String, u64>,
    report: RunReport,
}

impl Judged {
    /// Transfers (read + RFO HITM) per operation on the `line_bytes` unit holding `name`.
    fn transfers(&self, line_bytes: u64, name: &str) -> f64 {
        self.hot(line_bytes, name)
            .map_or(0.0, |h| h.counts.transfers() as f64 / self.ops as f64)
    }

    fn hot(&self, line_bytes: u64, name: &str) -> Option<&HotLine> {
        let addr = self.lines[name] & !(line_bytes - 1);
        let model = self
            .report
            .models
            .iter()
            .find(|m| m.line_bytes == line_bytes)
            .unwrap_or_else(|| panic!("no {line_bytes}-byte model"));
        model.hot.iter().find(|h| h.addr == addr)
    }

    fn total_transfers(&self) -> u64 {
        self.report.models[0].total().transfers()
    }
}

/// Boots every known-answer test once under the plugin and pairs each `KCOHERENCE` line
/// with the plugin's run of the same index.
fn judged() -> &'static HashMap<String, Judged> {
    static ALL: std::sync::OnceLock<HashMap<String, Judged>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let ws = tests::workspace();
        let out = ws.work_dir().join("coherence-tests").join("known.jsonl");
        let kernel = tests::kernel();
        // The plugin's build is host load: not beside another test's benchmark.
        let setup = {
            let _one_at_a_time = tests::one_qemu_at_a_time();
            prepare(
                ws,
                &kernel.elf64,
                1,
                &qemu::cli::BenchOptions::default(),
                &out,
                true,
            )
        }
        .unwrap_or_else(|e| panic!("plugin setup: {e}"));
        let cmdline = format!("run=test test={}", TESTS.join(","));
        let run = tests::boot_with_plugin(2, &cmdline, setup.load.clone(), TIMEOUT)
            .unwrap_or_else(|e| panic!("boot: {e}"));
        tests::assert_suite_passed(&run);
        let text = std::fs::read_to_string(&out).expect("the plugin's output");
        let (header, reports) = coherence::report::read(&text).expect("plugin output parses");
        assert_eq!(header.vcpus, 2);
        let marked: Vec<&str> = run
            .serial
            .lines()
            .filter(|l| l.starts_with("KCOHERENCE "))
            .collect();
        assert_eq!(
            marked.len(),
            reports.len(),
            "one plugin run per test: {marked:?}\n{}",
            tests::describe(&run)
        );
        marked
            .iter()
            .zip(reports)
            .map(|(line, report)| {
                let mut test = String::new();
                let mut ops = 0;
                let mut lines = HashMap::new();
                for word in line.split_whitespace().skip(1) {
                    let (k, v) = word.split_once('=').expect("key=value");
                    match k {
                        "test" => test = v.to_owned(),
                        "ops" => ops = v.parse().expect("ops"),
                        _ => {
                            let a = u64::from_str_radix(v.trim_start_matches("0x"), 16);
                            lines.insert(k.to_owned(), a.expect("address"));
                        }
                    }
                }
                assert!(report.complete, "{test}: no end mark");
                assert_eq!(report.vcpus.len(), 2, "{test}: both CPUs opened a window");
                (test, Judged { ops, lines, report })
            })
            .collect()
    })
}

fn get(test: &str) -> &'static Judged {
    judged()
        .get(test)
        .unwrap_or_else(|| panic!("{test} did not run"))
}

fn about_one(x: f64, what: &str) {
    assert!(
        (0.9..=1.1).contains(&x),
        "{what}: {x:.3} per operation, expected about 1"
    );
}

#[test]
fn one_counter_passed_between_two_cpus_moves_once_per_increment() {
    let j = get("coherence_one_counter");
    about_one(
        j.transfers(64, "counter"),
        "transfers of the counter's line",
    );
    let h = j.hot(64, "counter").expect("the counter's line is hot");
    // Each locked increment takes ownership once: an upgrade of the copy its spin read
    // fetched, or (when the host ran the other vCPU's increment callback late) an RFO.
    about_one(
        (h.counts.upgrades + h.counts.rfo_hitm) as f64 / j.ops as f64,
        "ownership changes (upgrades and RFOs) of the counter's line",
    );
    assert!(j.report.vcpus.iter().all(|v| v.rmws >= j.ops / 2));
}

#[test]
fn two_fields_of_one_line_written_by_two_cpus_move_once_per_write() {
    let j = get("coherence_false_sharing");
    about_one(j.transfers(64, "data"), "transfers of the shared line");
    let h = j.hot(64, "data").expect("the data line is hot");
    about_one(h.counts.rfo_hitm as f64 / j.ops as f64, "RFO HITMs");
    assert_eq!(h.vcpus, vec![0, 1]);
}

#[test]
fn fields_64_bytes_apart_move_only_as_a_128_byte_pair() {
    let j = get("coherence_separate_lines");
    for line in ["data", "other"] {
        let t = j.transfers(64, line);
        assert!(
            t < 0.01,
            "{line}: {t:.3} transfers per operation with 64-byte lines"
        );
    }
    about_one(j.transfers(128, "data"), "transfers of the 128-byte pair");
}

#[test]
fn one_cpu_alone_moves_nothing() {
    let j = get("coherence_one_cpu");
    assert_eq!(j.transfers(64, "data"), 0.0);
    assert_eq!(j.transfers(64, "turn"), 0.0);
    assert!(
        j.total_transfers() * 100 < j.ops,
        "{} transfers in all for {} operations",
        j.total_transfers(),
        j.ops
    );
}

#[test]
fn a_ticket_lock_passed_between_two_cpus_moves_once_per_acquisition() {
    let j = get("coherence_ticket_lock");
    let h = j.hot(64, "lock").expect("the lock's line is hot");
    about_one(
        h.counts.rfo_hitm as f64 / j.ops as f64,
        "RFO HITMs on the lock word",
    );
    about_one(j.transfers(64, "count"), "transfers of the protected count");
}

#[test]
fn a_plugin_qemu_cannot_load_ends_the_bench_with_the_plugin_status() {
    let ws = tests::workspace();
    let dir = tempfile::tempdir().expect("temp dir");
    let setup = Setup {
        load: qemu::launch::PluginLoad {
            path: dir.path().join("no-such-plugin.so"),
            args: Vec::new(),
        },
        out: dir.path().join("out.jsonl"),
        symbols: Default::default(),
    };
    let options = qemu::cli::Options {
        quiet: true,
        out: Some(dir.path().join("results")),
        ..qemu::cli::Options::default()
    };
    let medium = qemu::Medium::Kernel {
        elf32: tests::kernel().elf32.clone(),
        cmdline: "run=bench quick=1".into(),
    };
    let mut launch = qemu::booting::launch(qemu::Mode::Direct, 2, 256, None, medium);
    launch.plugin = Some(setup.load.clone());
    // A hang would end in the runner's timeout, an `Ok` with the timeout outcome: the
    // plugin error proves QEMU said why and stopped.
    let err = {
        let _one_at_a_time = tests::one_qemu_at_a_time();
        qemu::bench::run::bench(
            ws,
            &options,
            &launch,
            TIMEOUT,
            qemu::bench::run::Counting {
                coherence: Some(&setup),
                cost: None,
            },
        )
    }
    .expect_err("QEMU cannot load a plugin that does not exist");
    let text = err.to_string();
    assert!(
        text.contains("--coherence") && text.contains("plugin"),
        "{text}"
    );
    assert_eq!(
        qemu::RunnerExit::for_error(&err),
        qemu::RunnerExit::NoPlugin
    );
    assert_eq!(qemu::RunnerExit::NoPlugin.status(), 30);
}
