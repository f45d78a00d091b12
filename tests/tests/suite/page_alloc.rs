//! The page allocator, NUMA discovery and RCU in the booted kernel: the in-kernel suite at
//! 1 and 4 vCPUs and with two NUMA nodes (`kx --nodes 2`), the system summary's node and
//! zone lists, the `pcp_batch=` / `pcp_high=` overrides, and `run=pagealloc` completing.
use abi::ExitCode;
use qemu::RunOutput;
use std::time::Duration;
use tests::{assert_exit, assert_line, boot_direct_numa, describe, line_starting};

/// Generous: four vCPUs exhaust memory several times over on a loaded two-core host.
const TIMEOUT: Duration = Duration::from_secs(240);

/// Every in-kernel page allocator and RCU test: the kernel expands the prefixes from its table.
const TESTS: &str = "rcu_*,pagealloc_*";

fn suite_passes(smp: u32, nodes: Option<u32>) -> RunOutput {
    let out = tests::suite_passes(smp, nodes, TESTS, "", TIMEOUT);
    line_starting(&out, &format!("  {smp} CPUs took "));
    out
}

#[test]
fn page_alloc_suite_1_cpu() {
    suite_passes(1, None);
}

#[test]
fn page_alloc_suite_4_cpus() {
    let out = suite_passes(4, None);
    for cpu in 0..4 {
        line_starting(
            &out,
            &format!("  cpu {cpu} (node 0): frames per zonelist entry ["),
        );
    }
}

/// Two nodes, four vCPUs (0 and 2 on node 0, 1 and 3 on node 1): each CPU empties its own
/// node first, then the other.
#[test]
fn page_alloc_suite_2_nodes() {
    let out = suite_passes(4, Some(2));
    let per_zone = |cpu: u32| -> Vec<u64> {
        let start = format!(
            "  cpu {cpu} (node {}): frames per zonelist entry [",
            cpu % 2
        );
        let line = line_starting(&out, &start);
        line[start.len()..line.len() - 1]
            .split(", ")
            .map(|n| n.parse().expect("a number"))
            .collect()
    };
    let (a, b) = (per_zone(0), per_zone(1));
    assert_eq!(a.len(), 2, "two zonelist entries (one DMA32 zone per node)");
    assert_eq!(
        a,
        [b[1], b[0]],
        "node 1 takes the same zones in the other order"
    );
    assert_eq!(per_zone(2), a);
    assert_eq!(per_zone(3), b);
}

/// The summary lists both nodes with their memory and CPUs, the SLIT distances, and the
/// overridden per-CPU list sizes in every zone.
#[test]
fn summary_lists_numa_nodes() {
    let out = boot_direct_numa(
        2,
        Some(2),
        "run=summary pcp_batch=7 pcp_high=99",
        Duration::from_secs(120),
    );
    assert_exit(&out, ExitCode::Success);
    for want in [
        "numa: 2 nodes (the ACPI SRAT, distances from the SLIT)",
        "  node 0 (pxm 0): 127 MiB in 2 ranges, cpus 0",
        "    0x000000000000-0x00000009f000       636 KiB",
        "    0x000000100000-0x000008000000    130048 KiB",
        "  node 1 (pxm 1): 127 MiB in 1 range, cpus 1",
        "    0x000008000000-0x00000ffdf000    130940 KiB",
        "  distances: [10 20] [20 10]",
    ] {
        assert_line(&out, want);
    }
    for node in 0..2 {
        let line = line_starting(&out, &format!("  node {node}: total "));
        for field in ["free ", "reserved ", "memmap ", "bytes per frame"] {
            assert!(line.contains(field), "`{field}` missing in `{line}`");
        }
    }
    let zones: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("    DMA32 "))
        .collect();
    assert_eq!(zones.len(), 2, "{}", describe(&out));
    for z in zones {
        assert!(z.contains("pcp batch 7 high 99"), "{z}");
    }
}

/// Without NUMA options there is no SRAT: one node with every CPU.
#[test]
fn summary_without_numa_is_one_node() {
    let out = boot_direct_numa(2, None, "run=summary", Duration::from_secs(120));
    assert_exit(&out, ExitCode::Success);
    for want in [
        "numa: 1 node (no ACPI SRAT: one node)",
        "  node 0: 255 MiB in 2 ranges, cpus 0,1",
    ] {
        assert_line(&out, want);
    }
}

#[test]
fn bad_pcp_values_are_a_bad_command_line() {
    for (line, msg) in [
        ("pcp_batch=0", "bad value `0` for `pcp_batch`"),
        ("pcp_high=lots", "bad value `lots` for `pcp_high`"),
    ] {
        let out = boot_direct_numa(1, None, line, Duration::from_secs(120));
        assert_exit(&out, ExitCode::BadCmdline);
        assert!(out.serial.contains(msg), "`{line}`:\n{}", describe(&out));
    }
}

/// The micro-benchmark runs to the end on two vCPUs (its figures are for the reader, not
/// asserted) and leaves the allocator consistent.
#[test]
fn pagealloc_benchmark_completes() {
    let out = boot_direct_numa(2, None, "run=pagealloc", TIMEOUT);
    assert_exit(&out, ExitCode::Success);
    let summaries = out
        .lines()
        .filter(|l| l.starts_with("  per-CPU lists: "))
        .count();
    assert_eq!(summaries, 2, "{}", describe(&out));
    assert!(
        out.lines()
            .any(|l| l.starts_with("pagealloc: allocator consistent afterwards")),
        "{}",
        describe(&out)
    );
}
