//! Mainline's declared layout of `struct mem_cgroup_per_node`, its `struct lruvec` and
//! `struct lru_gen_folio`, computed from the declarations the way a C compiler lays them
//! out, for the configuration seed 000 names: the yardstick [`super::MemCgroupPerNodeV1`]
//! is checked against.
//!
//! The declarations are Linux 6.14 and later (include/linux/mmzone.h,
//! include/linux/memcontrol.h), where `protected[]` has `MAX_NR_TIERS` entries per type,
//! as the context lines of seed 000's diff show. Configuration: x86_64 (8-byte longs and
//! pointers, 64-byte lines, `____cacheline_internodealigned_in_smp` is 64 bytes without
//! `CONFIG_X86_VSMP`), `CONFIG_MEMCG`, `CONFIG_MEMCG_V1` (the soft-limit fields between
//! the read-mostly pointers and the lruvec), `CONFIG_LRU_GEN` with `CONFIG_LRU_GEN_WALKS_MMU`
//! and without `CONFIG_LRU_GEN_STATS` (the seed: `NR_HIST_GENS` is 1), `CONFIG_ZONE_DEVICE`
//! (`MAX_NR_ZONES` 5), `CONFIG_ZSWAP`, and no spinlock debugging (a 4-byte `spinlock_t`).
//!
//! What this gives, and what the seed says of its kernel:
//!
//! | | declared | seed 000 |
//! |---|---|---|
//! | `lru_gen_folio`, before / after | 1,360 / 1,408 bytes | 1,360 / 1,408 |
//! | `mem_cgroup_per_node`, before / after | 1,984 / 2,112 bytes | 2,176 / 2,240 |
//! | `lrugen` in the struct, before | 208 (16 bytes into line 3) | not given |
//! | counters on the line of `enabled`..`list`, before | `refaulted[0][file][3]` only | "the file type counters" |
//!
//! The `lru_gen_folio` sizes agree; the struct around it does not: the seed's kernel has
//! 192 bytes more than the declarations before the patch and 128 more after, which no
//! insertion of whole fields before or after the lruvec reproduces, so its offsets cannot
//! be computed from the declarations. In the declared layout the file type's `refaulted[]`
//! tiers 0 to 2 end line 23 and the FIFO node (`enabled`, `gen`, `seg`, `list`) starts
//! line 24 with tier 3 before it: only a working-set refault writes the node's line. For
//! every file tier to share that line, as the seed states, `lrugen` must start 0, 40, 48
//! or 56 bytes into a line; the declarations put it 16 bytes in. [`super::PnSoftLimit`]
//! documents how the model's mainline layout bridges the difference and
//! [`super::assert_pn_layouts`] checks both against this module.

use crate::cacheline::{CACHELINE, share_line};
use lru::folio::{ANON_AND_FILE, MAX_NR_ZONES};
use lru::lru_gen::{MAX_NR_GENS, MAX_NR_TIERS};

/// `NR_HIST_GENS` without `CONFIG_LRU_GEN_STATS`.
const NR_HIST_GENS: usize = 1;
/// `NR_LRU_LISTS`: inactive and active anon and file, unevictable.
const NR_LRU_LISTS: usize = 5;
/// `NR_MM_STATS`: the six `MM_*` counters of `struct lru_gen_mm_state`.
const NR_MM_STATS: usize = 6;
/// `NR_BLOOM_FILTERS`.
const NR_BLOOM_FILTERS: usize = 2;
const LONG: usize = 8;
const LIST_HEAD: usize = 2 * LONG;
/// One `[NR_HIST_GENS][ANON_AND_FILE][MAX_NR_TIERS]` array of longs.
const TIER_HIST: usize = NR_HIST_GENS * ANON_AND_FILE * MAX_NR_TIERS * LONG;

/// One member of a C struct: its name, size and alignment. A zero-sized member with a
/// line's alignment is `__cacheline_group_begin_aligned()`, the pad of
/// `__cacheline_group_end_aligned()` or `CACHELINE_PADDING()`.
#[derive(Clone, Copy, Debug)]
pub struct Member {
    /// The member's name in the declaration.
    pub name: &'static str,
    /// `sizeof`.
    pub size: usize,
    /// `_Alignof`.
    pub align: usize,
}

const fn m(name: &'static str, size: usize, align: usize) -> Member {
    Member { name, size, align }
}

/// A struct laid out as C does: each member at the next multiple of its alignment, the
/// struct aligned to its largest member and its size a multiple of that.
#[derive(Clone, Copy, Debug)]
pub struct Declared<const N: usize> {
    /// The members in declaration order.
    pub members: [Member; N],
    /// Each member's offset.
    pub offsets: [usize; N],
    /// `sizeof`.
    pub size: usize,
    /// `_Alignof`.
    pub align: usize,
}

impl<const N: usize> Declared<N> {
    /// Lays `members` out.
    #[must_use]
    pub const fn new(members: [Member; N]) -> Self {
        let mut offsets = [0; N];
        let (mut at, mut align, mut i): (usize, usize, usize) = (0, 1, 0);
        while i < N {
            at = at.next_multiple_of(members[i].align);
            offsets[i] = at;
            at += members[i].size;
            if members[i].align > align {
                align = members[i].align;
            }
            i += 1;
        }
        Self {
            members,
            offsets,
            size: at.next_multiple_of(align),
            align,
        }
    }

    /// The offset of member `name`; a name that is not declared fails to compile where
    /// it is used in a constant.
    #[must_use]
    pub const fn offset(&self, name: &str) -> usize {
        let mut i = 0;
        while i < N {
            if str_eq(self.members[i].name, name) {
                return self.offsets[i];
            }
            i += 1;
        }
        panic!("no such member")
    }

    /// As a member of an enclosing struct.
    #[must_use]
    pub const fn as_member(&self, name: &'static str) -> Member {
        m(name, self.size, self.align)
    }
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The members of `struct lru_gen_folio`, each declared once; the two layouts below only
/// order them (and add the patch's group markers).
mod lrugen {
    use super::*;
    pub const MAX_SEQ: Member = m("max_seq", LONG, LONG);
    pub const MIN_SEQ: Member = m("min_seq", ANON_AND_FILE * LONG, LONG);
    pub const TIMESTAMPS: Member = m("timestamps", MAX_NR_GENS * LONG, LONG);
    const PER_ZONE: usize = MAX_NR_GENS * ANON_AND_FILE * MAX_NR_ZONES;
    pub const FOLIOS: Member = m("folios", PER_ZONE * LIST_HEAD, LONG);
    pub const NR_PAGES: Member = m("nr_pages", PER_ZONE * LONG, LONG);
    pub const AVG_REFAULTED: Member = m("avg_refaulted", ANON_AND_FILE * MAX_NR_TIERS * LONG, LONG);
    pub const AVG_TOTAL: Member = m("avg_total", ANON_AND_FILE * MAX_NR_TIERS * LONG, LONG);
    pub const PROTECTED: Member = m("protected", TIER_HIST, LONG);
    pub const EVICTED: Member = m("evicted", TIER_HIST, LONG);
    pub const REFAULTED: Member = m("refaulted", TIER_HIST, LONG);
    pub const ENABLED: Member = m("enabled", 1, 1);
    pub const GEN: Member = m("gen", 1, 1);
    pub const SEG: Member = m("seg", 1, 1);
    pub const LIST: Member = m("list", 2 * LONG, LONG);
}

/// `struct lru_gen_folio` before seed 000's patch.
pub const LRU_GEN_FOLIO_BASE: Declared<14> = {
    use lrugen::*;
    Declared::new([
        MAX_SEQ,
        MIN_SEQ,
        TIMESTAMPS,
        FOLIOS,
        NR_PAGES,
        AVG_REFAULTED,
        AVG_TOTAL,
        PROTECTED,
        EVICTED,
        REFAULTED,
        ENABLED,
        GEN,
        SEG,
        LIST,
    ])
};

/// `struct lru_gen_folio` after seed 000's patch: the FIFO node after the timestamps, the
/// two atomic arrays in the `lrugen_stats` cacheline group at the end.
pub const LRU_GEN_FOLIO_PATCHED: Declared<16> = {
    use lrugen::*;
    Declared::new([
        MAX_SEQ,
        MIN_SEQ,
        TIMESTAMPS,
        ENABLED,
        GEN,
        SEG,
        LIST,
        FOLIOS,
        NR_PAGES,
        AVG_REFAULTED,
        AVG_TOTAL,
        PROTECTED,
        m("__cacheline_group_begin__lrugen_stats", 0, CACHELINE),
        EVICTED,
        REFAULTED,
        m("__cacheline_group_pad__lrugen_stats", 0, CACHELINE),
    ])
};

/// `struct lruvec` around an `lru_gen_folio` laid out as `lrugen`.
#[must_use]
pub const fn lruvec(lrugen: Member) -> Declared<11> {
    Declared::new([
        m("lists", NR_LRU_LISTS * LIST_HEAD, LONG),
        m("lru_lock", 4, 4),
        m("anon_cost", LONG, LONG),
        m("file_cost", LONG, LONG),
        m("nonresident_age", LONG, LONG),
        m("refaults", ANON_AND_FILE * LONG, LONG),
        m("flags", LONG, LONG),
        lrugen,
        // seq, head, tail, filters[NR_BLOOM_FILTERS], stats[NR_HIST_GENS][NR_MM_STATS]
        m(
            "mm_state",
            3 * LONG + NR_BLOOM_FILTERS * LONG + NR_HIST_GENS * NR_MM_STATS * LONG,
            LONG,
        ),
        m("pgdat", LONG, LONG),
        // atomic_long_t nr_disk_swapins
        m("zswap_lruvec_state", LONG, LONG),
    ])
}

/// `struct mem_cgroup_per_node` (CONFIG_MEMCG_V1) around a `struct lruvec` laid out as
/// `lruvec`.
#[must_use]
pub const fn mem_cgroup_per_node(lruvec: Member) -> Declared<11> {
    Declared::new([
        m("memcg", LONG, LONG),
        m("lruvec_stats_percpu", LONG, LONG),
        m("lruvec_stats", LONG, LONG),
        m("shrinker_info", LONG, LONG),
        // struct rb_node: __rb_parent_color, rb_right, rb_left
        m("tree_node", 3 * LONG, LONG),
        m("usage_in_excess", LONG, LONG),
        m("on_tree", 1, 1),
        lruvec,
        m("_pad2_", 0, CACHELINE),
        m("lru_zone_size", MAX_NR_ZONES * NR_LRU_LISTS * LONG, LONG),
        // struct mem_cgroup_reclaim_iter: position, generation
        m("iter", 2 * LONG, LONG),
    ])
}

/// The lruvec before the patch.
pub const LRUVEC_BASE: Declared<11> = lruvec(LRU_GEN_FOLIO_BASE.as_member("lrugen"));
/// The lruvec after the patch.
pub const LRUVEC_PATCHED: Declared<11> = lruvec(LRU_GEN_FOLIO_PATCHED.as_member("lrugen"));
/// `mem_cgroup_per_node` before the patch.
pub const PN_BASE: Declared<11> = mem_cgroup_per_node(LRUVEC_BASE.as_member("lruvec"));
/// `mem_cgroup_per_node` after the patch.
pub const PN_PATCHED: Declared<11> = mem_cgroup_per_node(LRUVEC_PATCHED.as_member("lruvec"));

/// Where `lrugen` starts in `mem_cgroup_per_node`, before (`patched` false) or after.
#[must_use]
pub const fn lrugen_offset(patched: bool) -> usize {
    if patched {
        PN_PATCHED.offset("lruvec") + LRUVEC_PATCHED.offset("lrugen")
    } else {
        PN_BASE.offset("lruvec") + LRUVEC_BASE.offset("lrugen")
    }
}

/// Offset of member `name` of `lru_gen_folio` in `mem_cgroup_per_node`.
#[must_use]
pub const fn lrugen_member(patched: bool, name: &str) -> usize {
    lrugen_offset(patched)
        + if patched {
            LRU_GEN_FOLIO_PATCHED.offset(name)
        } else {
            LRU_GEN_FOLIO_BASE.offset(name)
        }
}

/// The FIFO node's bytes: `enabled` through the end of `list`.
#[must_use]
pub const fn node_span(patched: bool) -> (usize, usize) {
    let start = lrugen_member(patched, "enabled");
    (start, lrugen_member(patched, "list") + 2 * LONG - start)
}

/// Whether `refaulted[0][ty][tier]` (`evicted[]` when `evicted`) shares a line with the
/// FIFO node in the declared layout, `lrugen` moved `shift` bytes later than declared (0
/// for the declarations themselves). `mem_cgroup_per_node` comes from kmalloc-2k or -4k,
/// so the struct starts on a line.
#[must_use]
pub const fn counter_shares_node_line(
    patched: bool,
    shift: usize,
    evicted: bool,
    ty: usize,
    tier: usize,
) -> bool {
    let array = lrugen_member(patched, if evicted { "evicted" } else { "refaulted" });
    let (node, node_size) = node_span(patched);
    share_line(
        shift + array + (ty * MAX_NR_TIERS + tier) * LONG,
        LONG,
        shift + node,
        node_size,
    )
}

/// Whether, with `lrugen` starting `lrugen_in_line` bytes into a line, every file tier of
/// of `refaulted[]` shares the FIFO node's line in the base `lru_gen_folio`: the seed's
/// statement about its kernel, as a condition on where `lrugen` starts.
#[must_use]
pub const fn seed_sharing_holds_at(lrugen_in_line: usize) -> bool {
    let mut tier = 0;
    while tier < MAX_NR_TIERS {
        let at = LRU_GEN_FOLIO_BASE.offset("refaulted") + (MAX_NR_TIERS + tier) * LONG;
        let node = LRU_GEN_FOLIO_BASE.offset("enabled");
        if !share_line(lrugen_in_line + at, LONG, lrugen_in_line + node, 1) {
            return false;
        }
        tier += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use lru::folio::{LRU_GEN_ANON, LRU_GEN_FILE};

    #[test]
    fn lru_gen_folio_has_the_sizes_the_seed_gives() {
        assert_eq!(LRU_GEN_FOLIO_BASE.size, 1360);
        assert_eq!(LRU_GEN_FOLIO_PATCHED.size, 1408);
        assert_eq!(LRU_GEN_FOLIO_BASE.align, 8);
        assert_eq!(LRU_GEN_FOLIO_PATCHED.align, 64);
        // Base: the arrays end at the node; patched: the group is the last two lines.
        assert_eq!(LRU_GEN_FOLIO_BASE.offset("refaulted"), 1272);
        assert_eq!(LRU_GEN_FOLIO_BASE.offset("enabled"), 1336);
        assert_eq!(LRU_GEN_FOLIO_BASE.offset("list"), 1344);
        assert_eq!(LRU_GEN_FOLIO_PATCHED.offset("list"), 64);
        assert_eq!(LRU_GEN_FOLIO_PATCHED.offset("evicted"), 1280);
        assert_eq!(LRU_GEN_FOLIO_PATCHED.offset("refaulted"), 1344);
    }

    #[test]
    fn the_declared_struct_is_not_the_seeds() {
        assert_eq!(LRUVEC_BASE.offset("lrugen"), 136);
        assert_eq!(LRUVEC_PATCHED.offset("lrugen"), 192);
        assert_eq!((LRUVEC_BASE.size, LRUVEC_PATCHED.size), (1600, 1728));
        assert_eq!(PN_BASE.offset("lruvec"), 72);
        assert_eq!(PN_PATCHED.offset("lruvec"), 128);
        assert_eq!(PN_BASE.offset("lru_zone_size"), 1728);
        // 1,984 and 2,112 bytes; the seed's kernel: 2,176 and 2,240.
        assert_eq!((PN_BASE.size, PN_PATCHED.size), (1984, 2112));
        assert_eq!(lrugen_offset(false), 208);
        assert_eq!(lrugen_offset(true), 320);
    }

    #[test]
    fn declared_only_the_working_set_tier_shares_the_node_line() {
        let on = |patched, evicted, ty| {
            (0..MAX_NR_TIERS)
                .filter(|&t| counter_shares_node_line(patched, 0, evicted, ty, t))
                .collect::<Vec<_>>()
        };
        assert_eq!(on(false, false, LRU_GEN_FILE), [3]);
        assert_eq!(on(false, false, LRU_GEN_ANON), [] as [usize; 0]);
        assert_eq!(on(false, true, LRU_GEN_FILE), [] as [usize; 0]);
        for ty in [LRU_GEN_ANON, LRU_GEN_FILE] {
            for evicted in [false, true] {
                assert_eq!(on(true, evicted, ty), [] as [usize; 0]);
            }
        }
        // Moved 24 bytes later (lrugen 40 bytes into its line), every file tier does.
        assert_eq!(
            (0..MAX_NR_TIERS)
                .filter(|&t| counter_shares_node_line(false, 24, false, LRU_GEN_FILE, t))
                .count(),
            MAX_NR_TIERS
        );
    }

    #[test]
    fn the_seeds_sharing_needs_lrugen_late_or_early_in_its_line() {
        // lrugen is 8-byte aligned, so it starts a multiple of 8 bytes into its line.
        let holds: Vec<usize> = (0..CACHELINE)
            .step_by(LONG)
            .filter(|&r| seed_sharing_holds_at(r))
            .collect();
        assert_eq!(holds, [0, 40, 48, 56]);
        assert!(!seed_sharing_holds_at(lrugen_offset(false) % CACHELINE));
    }

    #[test]
    fn layout_follows_c_rules() {
        let d = Declared::new([m("a", 1, 1), m("b", 8, 8), m("c", 0, 64), m("d", 4, 4)]);
        assert_eq!(d.offsets, [0, 8, 64, 64]);
        assert_eq!((d.size, d.align), (128, 64));
        assert_eq!(d.offset("d"), 64);
        let e = Declared::new([m("x", 4, 4), m("y", 1, 1)]);
        assert_eq!((e.size, e.align), (8, 4));
    }
}
