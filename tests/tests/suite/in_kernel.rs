//! The in-kernel test suite, booted directly (`qemu -kernel`, multiboot1): every case passes,
//! the summary agrees with the case lines, and a test can be selected by name.
use abi::ExitCode;
use qemu::{Outcome, RunOutput, TestReport};
use std::sync::OnceLock;
use std::time::Duration;
use tests::{MEM_MIB, SMP, assert_exit, assert_suite_passed, boot_direct, describe};

/// Generous: the suite runs under TCG on a loaded two-core machine.
const SUITE_TIMEOUT: Duration = Duration::from_secs(300);

fn full_run() -> &'static RunOutput {
    static RUN: OnceLock<RunOutput> = OnceLock::new();
    RUN.get_or_init(|| boot_direct("run=test", SUITE_TIMEOUT))
}

#[test]
fn every_in_kernel_test_passes() {
    let out = full_run();
    let report = TestReport::parse(&out.serial);
    let problems = report.problems(out.outcome, None);
    assert!(
        problems.is_empty(),
        "problems: {problems:#?}\n{}",
        describe(out)
    );
    assert_eq!(out.outcome, Outcome::Kernel(ExitCode::Success));
    assert!(report.cases.len() > 1, "{}", describe(out));
}

#[test]
fn one_test_can_be_selected_by_name() {
    let all = TestReport::parse(&full_run().serial);
    let name = &all
        .cases
        .last()
        .unwrap_or_else(|| panic!("no cases in the full run:\n{}", describe(full_run())))
        .name;
    let out = boot_direct(&format!("run=test test={name}"), SUITE_TIMEOUT);
    let report = TestReport::parse(&out.serial);
    assert_eq!(
        report.problems(out.outcome, Some(std::slice::from_ref(name))),
        [],
        "{}",
        describe(&out)
    );
    let ran: Vec<&str> = report.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(ran, [name.as_str()], "{}", describe(&out));
}

#[test]
fn a_prefix_selects_its_tests_from_the_kernels_table_and_a_dead_one_is_refused() {
    let all = TestReport::parse(&full_run().serial);
    let want: Vec<&str> = all
        .cases
        .iter()
        .map(|c| c.name.as_str())
        .filter(|n| n.starts_with("mm_"))
        .collect();
    assert!(
        !want.is_empty(),
        "no mm_ tests in\n{}",
        describe(full_run())
    );
    let out = boot_direct("run=test test=mm_*", SUITE_TIMEOUT);
    let plan = assert_suite_passed(&out);
    assert_eq!(plan, want, "{}", describe(&out));

    // A name or a prefix that selects nothing is a bad command line, never an empty pass.
    for (entry, says) in [
        (
            "nosuch_*",
            "no test (slow ones aside) starts with `nosuch_`",
        ),
        ("nosuch", "no test named `nosuch`"),
    ] {
        let out = boot_direct(&format!("run=test test={entry}"), SUITE_TIMEOUT);
        assert_exit(&out, ExitCode::BadCmdline);
        assert!(out.serial.contains(says), "{}", describe(&out));
    }
}

/// The runner's list of tests, read from the kernel ELF (`.ktest_names`, written by
/// `#[ktest]`) without booting, is what the kernel runs: the tests `test=all` ran are the
/// listed ones that are not slow, in the same order; and the runner refuses before booting
/// exactly what the kernel would refuse.
#[test]
fn the_elf_lists_the_tests_the_kernel_runs() {
    let listed = qemu::ktests::read(&tests::kernel().elf64).expect("the ELF's test names");
    let fast: Vec<&str> = listed
        .iter()
        .filter(|t| !t.slow)
        .map(|t| t.name.as_str())
        .collect();
    let report = TestReport::parse(&full_run().serial);
    let ran: Vec<&str> = report.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(ran, fast, "{}", describe(full_run()));
    for slow in ["vm_soak_long", "coherence_one_counter"] {
        assert!(
            listed.iter().any(|t| t.slow && t.name == slow),
            "{slow} is not listed as slow: {listed:?}"
        );
    }
    let check = |list: &str| qemu::ktests::check(&format!("run=test test={list}"), &listed);
    assert_eq!(check("all"), Ok(()));
    assert_eq!(check("mm_*,vm_soak_long"), Ok(()));
    assert_eq!(check("nosuch"), Err("no test named `nosuch`".into()));
    assert_eq!(
        check("vm_soak_l*"),
        Err("no test (slow ones aside) starts with `vm_soak_l`".into()),
        "a prefix does not select a slow test"
    );
}

/// The system summary says what the machine is: the boot path, the memory QEMU was given,
/// every vCPU found and started, one node, no PMU under TCG, and a page allocator whose
/// free frames are a plausible share of that memory.
#[test]
fn summary_boot_describes_the_machine() {
    let out = boot_direct("run=summary", Duration::from_secs(120));
    assert_exit(&out, ExitCode::Success);
    let s = &out.serial;
    let line = |prefix: &str| -> &str {
        s.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line: {}", describe(&out)))
    };
    assert!(s.contains("=== system summary ==="), "{}", describe(&out));
    assert!(line("boot path: ").starts_with("boot path: multiboot1"));
    // QEMU keeps a little below 1 MiB and at the top of RAM for itself.
    let ram: u32 = line("usable RAM: ")
        .trim_start_matches("usable RAM: ")
        .trim_end_matches(" MiB")
        .parse()
        .unwrap();
    assert!(
        (MEM_MIB - 2..=MEM_MIB).contains(&ram),
        "usable RAM {ram} MiB"
    );
    assert_eq!(line("cpus: "), format!("cpus: {SMP} found, {SMP} started"));
    for cpu in 0..SMP {
        assert!(
            s.contains(&format!(
                "apic id   {cpu} (acpi uid {cpu}): online as cpu {cpu}"
            )),
            "cpu {cpu}: {}",
            describe(&out)
        );
    }
    assert!(line("numa: ").starts_with("numa: 1 node"));
    assert!(line("pmu: ").starts_with("pmu: none"), "TCG has no PMU");
    let free: u64 = line("page allocator: ")
        .trim_start_matches("page allocator: ")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let frames = u64::from(MEM_MIB) * 256;
    assert!(
        free > frames / 2 && free < frames,
        "{free} free frames of {frames}"
    );
}

#[test]
fn layout_report_lists_every_key_struct_with_both_variants() {
    let out = boot_direct("run=layout", Duration::from_secs(120));
    assert_exit(&out, ExitCode::Success);
    for name in [
        "struct folio ",
        "struct lru_gen_folio (base) ",
        "struct lru_gen_folio (grouped) ",
        "struct lruvec (base lrugen) ",
        "struct lru_gen_memcg ",
        "struct page_counter ",
        "struct page_counter (v5.11, parent on usage's line) ",
        "struct page_counter (802f1d522d5f, parent at the end) ",
        "struct mem_cgroup_per_node (base) ",
        "struct mem_cgroup_per_node (paired) ",
        "struct mem_cgroup_per_node (v1, base lrugen) ",
        "struct mem_cgroup_per_node (v1) ",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(name)),
            "no `{name}` in the layout report:\n{}",
            describe(&out)
        );
    }
    // Seed 000's "before" as the kernel builds it: every file tier's refault counter on the
    // FIFO node's line in mainline's layout (as the seed says of its kernel); none with the
    // grouped lru_gen_folio.
    let v1 = out
        .serial
        .split("struct mem_cgroup_per_node (v1, base lrugen) ")
        .nth(1)
        .and_then(|s| s.lines().find(|l| l.contains("tiers sharing its line")));
    assert!(
        v1.is_some_and(|l| l.ends_with("tiers sharing its line: [0, 1, 2, 3]")),
        "{v1:?}\n{}",
        describe(&out)
    );
    // The sixth experiment's two layouts: `parent` on `usage`'s line before 802f1d522d5f,
    // off it after.
    for line in [
        "usage on line 0, max on line 0, parent on line 0: parent shares usage's line",
        "usage on line 0, max on line 0, parent on line 1: parent is off usage's line",
    ] {
        assert!(
            out.lines().any(|l| l.trim() == line),
            "no `{line}`:\n{}",
            describe(&out)
        );
    }
    // The kernel's lru_lock is its own ticket lock, and the report shows where it sits.
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("lru_lock ")),
        "{}",
        describe(&out)
    );
}
