//! Shared helpers of the page allocator's host tests: allocators over made-up physical
//! memory.
#![allow(dead_code)]

use page_alloc::{HeapStorage, NumaTopology, PageAlloc, PcpConfig, PfnRange};

/// First frame above 4 GiB: memory from here on is ZONE_NORMAL.
pub const GIB4: u64 = 1 << 20;

/// An allocator with every frame of `ranges` (node, range) free, `nr_cpus` CPUs placed
/// round-robin over `nr_nodes` nodes.
pub fn allocator(
    nr_nodes: usize,
    nr_cpus: usize,
    ranges: &[(u32, PfnRange)],
    cfg: PcpConfig,
) -> PageAlloc {
    let numa = NumaTopology::round_robin(nr_nodes, nr_cpus, ranges).expect("valid description");
    PageAlloc::with_all_free(numa, &mut HeapStorage::new(), cfg).expect("allocator")
}

/// One node of `pages` frames starting at `base`.
pub fn single(nr_cpus: usize, base: u64, pages: u64, cfg: PcpConfig) -> PageAlloc {
    allocator(1, nr_cpus, &[(0, PfnRange::new(base, base + pages))], cfg)
}

/// Every zone's free blocks, sorted: the state "merged back" is compared against.
pub fn snapshot(pa: &PageAlloc) -> Vec<Vec<(u64, u32)>> {
    pa.zones().map(|z| pa.free_blocks(z)).collect()
}
