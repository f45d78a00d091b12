//! The benchmark platform's contract with the engine, on the real machine: what a run
//! starts from.

use crate::bench::platform::KernelPlatform;
use crate::ensure;
use crate::ktest::TestResult;
use crate::mm::page_alloc;
use crate::{boot_info, percpu};
use alloc::format;
use alloc::vec::Vec;
use bench::engine::BenchPlatform;
use ktest::ktest;

/// Frames on every CPU's per-CPU lists, over every zone.
fn on_pcp_lists(pa: &::page_alloc::PageAlloc) -> u64 {
    pa.zones().map(|z| pa.pcp_pages(z)).sum()
}

/// A run begins with every per-CPU page list empty, whatever the run before it left
/// there: frames freed on CPU 0 sit on its list until the platform's `run_begins`.
#[ktest]
fn bench_run_begins_with_empty_per_cpu_page_lists() -> TestResult {
    let pa = page_alloc::get().ok_or("no page allocator")?;
    let node = percpu::cpu_to_node(0);
    let held: Vec<_> = (0..8).filter_map(|_| pa.alloc_page(0, node)).collect();
    let took = held.len();
    for f in held {
        pa.free_pages(0, f, 0)
            .map_err(|e| format!("free {:#x}: {e}", f.pfn()))?;
    }
    ensure!(took == 8, "took {took} of 8 frames");
    let before = on_pcp_lists(pa);
    ensure!(before > 0, "no frame on a per-CPU list after freeing eight");
    let platform = KernelPlatform::new(boot_info::get(), percpu::nr_cpu_ids() as u32);
    platform.run_begins();
    let after = on_pcp_lists(pa);
    platform.run_ends();
    ensure!(
        after == 0,
        "{after} frames on per-CPU lists when a run begins ({before} before run_begins)"
    );
    Ok(())
}
