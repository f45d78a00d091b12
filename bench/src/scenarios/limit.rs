//! The `limit` floor's catalog entry. The floor itself is each platform's: the kernel's
//! takes a real #PF on a not-present page (`kernel/src/bench/limit.rs`), the host's is a
//! function call doing the same work ([`super::soft_floor`]); both run this entry's one
//! variant, and every fault scenario's rate is shown as a fraction of it.

use abi::catalog::{LIMIT, Scenario, Variant};

/// The floor's catalog entry: no seed, so no premise, mechanism or published figure
/// ([`crate::catalog`] lists every entry; the README's table is generated from them).
pub const CATALOG: Scenario = Scenario {
    name: LIMIT,
    summary: "the floor: #PF on a not-present page, PTE install, 4 KiB zero, PTE clear + invlpg",
    op: "one #PF + PTE install + 4 KiB zero + PTE clear/invlpg",
    configs: &["anon"],
    variants: &[Variant::new("floor", "no allocator, no memcg, no LRU")],
    comparisons: &[],
    fault_path: false,
    published: None,
    premises: &[],
    mechanism: None,
};
