//! NUMA discovery on x86: which node each CPU and each frame of RAM belongs to, and how far
//! nodes are from each other, from the ACPI SRAT and SLIT.
//!
//! Models `x86_numa_init()` -> `x86_acpi_numa_init()` / `dummy_numa_init()`
//! (arch/x86/mm/numa.c). Proximity domains become dense node ids in the order the SRAT
//! first names them (`acpi_map_pxm_to_node()`; processor entries are parsed before memory
//! entries, as in Linux). RAM is the memory map's usable ranges; each is split along the
//! SRAT's memory ranges. When the SRAT leaves more than 1 MiB of RAM without a node
//! (`numa_meminfo_cover_memory()`), names too many domains, or is malformed, it is ignored
//! and the machine is one node, as without an SRAT; smaller uncovered pieces join the node
//! of the range below them. CPUs the SRAT does not name are spread round-robin over the
//! nodes (`numa_init_array()`). A SLIT that does not cover every domain or breaks the SLIT
//! rules is ignored (`slit_valid()`), leaving the default distances.
//!
//! The result is an [`page_alloc::NumaTopology`] keyed by the kernel's dense CPU ids, kept for the
//! page allocator and the summary; each CPU's node is also stored in its per-CPU area.

use super::srat::{self, Slit, Srat};
use crate::boot_info::{BootInfo, MemKind};
use ::page_alloc::numa::{MAX_NUMNODES, NumaBuilder, NumaTopology, PfnRange};
use ::page_alloc::pfn::PAGE_SHIFT;
use alloc::string::String;
use alloc::vec::Vec;

/// Where the node layout came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NumaSource {
    /// The SRAT, with SLIT distances or without (defaults).
    Srat {
        /// Whether the SLIT's distances are used.
        slit: bool,
        /// Why a present SLIT was not used.
        slit_rejected: Option<String>,
    },
    /// No SRAT: one node.
    NoSrat,
    /// The SRAT was ignored (why): one node.
    Rejected(String),
}

/// The machine's NUMA layout.
#[derive(Clone, Debug)]
pub struct NumaInfo {
    /// Where it came from.
    pub source: NumaSource,
    /// Nodes, memory, CPUs, distances.
    pub topology: NumaTopology,
    /// The proximity domain of each node (empty without an SRAT).
    pub pxm: Vec<u32>,
}

static INFO: spin::Once<NumaInfo> = spin::Once::new();

/// The layout (`None` before [`init`]).
#[must_use]
pub fn info() -> Option<&'static NumaInfo> {
    INFO.get()
}

/// Usable RAM from the memory map as sorted, disjoint frame ranges (each usable entry
/// rounded inward to whole frames, anything else the map lists cut out again).
#[must_use]
pub fn usable_ranges(bi: &BootInfo) -> Vec<PfnRange> {
    let mut v: Vec<PfnRange> = bi
        .regions()
        .iter()
        .filter(|r| r.kind == MemKind::Usable)
        .map(|r| PfnRange::new(r.start.div_ceil(1 << PAGE_SHIFT), r.end() >> PAGE_SHIFT))
        .filter(|r| r.start < r.end)
        .collect();
    v.sort();
    let mut merged: Vec<PfnRange> = Vec::with_capacity(v.len());
    for r in v {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    for hole in bi.regions().iter().filter(|r| r.kind != MemKind::Usable) {
        let h = PfnRange::new(
            hole.start >> PAGE_SHIFT,
            hole.end().div_ceil(1 << PAGE_SHIFT),
        );
        merged = merged
            .into_iter()
            .flat_map(|r| {
                let lo = PfnRange::new(r.start, h.start.min(r.end));
                let hi = PfnRange::new(h.end.max(r.start), r.end);
                if h.end <= r.start || h.start >= r.end {
                    [Some(r), None]
                } else {
                    [
                        (lo.start < lo.end).then_some(lo),
                        (hi.start < hi.end).then_some(hi),
                    ]
                }
            })
            .flatten()
            .collect();
    }
    merged
}

/// Discovers the layout for CPUs whose APIC IDs are `apic_ids` (index = CPU id) and
/// records it. Runs once, on the boot CPU, after SMP bring-up.
pub fn init(bi: &BootInfo, apic_ids: &[u32]) -> &'static NumaInfo {
    INFO.call_once(|| discover(bi, apic_ids))
}

fn single(ram: &[PfnRange], nr_cpus: usize, source: NumaSource) -> NumaInfo {
    let topology = NumaTopology::single_node(nr_cpus, ram)
        .unwrap_or_else(|e| panic!("the memory map itself is not a valid single node: {e}"));
    NumaInfo {
        source,
        topology,
        pxm: Vec::new(),
    }
}

fn discover(bi: &BootInfo, apic_ids: &[u32]) -> NumaInfo {
    let ram = usable_ranges(bi);
    let nr_cpus = apic_ids.len().max(1);
    let affinity = match srat::read(bi.rsdp) {
        Ok(a) => a,
        Err(_) => return single(&ram, nr_cpus, NumaSource::NoSrat),
    };
    let srat = match affinity.srat {
        None => return single(&ram, nr_cpus, NumaSource::NoSrat),
        Some(Err(e)) => {
            return single(
                &ram,
                nr_cpus,
                NumaSource::Rejected(alloc::format!("malformed: {e}")),
            );
        }
        Some(Ok(s)) => s,
    };
    match from_srat(&ram, apic_ids, &srat, affinity.slit) {
        Ok(info) => info,
        Err(why) => single(&ram, nr_cpus, NumaSource::Rejected(why)),
    }
}

/// The layout an SRAT (and maybe a SLIT) gives for `ram` and the CPUs whose APIC IDs are
/// `apic_ids` (index = CPU id), or why it is rejected.
pub(crate) fn from_srat(
    ram: &[PfnRange],
    apic_ids: &[u32],
    srat: &Srat,
    slit: Option<Result<Slit, srat::TableError>>,
) -> Result<NumaInfo, String> {
    let mut pxm: Vec<u32> = Vec::new();
    let mut node_of = |p: u32| -> u32 {
        match pxm.iter().position(|&x| x == p) {
            Some(i) => i as u32,
            None => {
                pxm.push(p);
                (pxm.len() - 1) as u32
            }
        }
    };
    let cpu_nodes: Vec<(u32, u32)> = srat
        .cpus
        .iter()
        .map(|c| (c.apic_id, node_of(c.pxm)))
        .collect();
    let mem: Vec<(u32, PfnRange)> = srat
        .memory
        .iter()
        .map(|m| {
            let r = PfnRange::new(
                m.base.div_ceil(1 << PAGE_SHIFT),
                m.base.saturating_add(m.len) >> PAGE_SHIFT,
            );
            (node_of(m.pxm), r)
        })
        .collect();
    if pxm.len() > MAX_NUMNODES {
        return Err(alloc::format!(
            "{} proximity domains (at most {MAX_NUMNODES})",
            pxm.len()
        ));
    }
    let nr_nodes = pxm.len().max(1);
    // Split RAM along the SRAT's ranges; pieces it leaves out join the node below.
    let mut pieces: Vec<(u32, PfnRange)> = Vec::new();
    let mut uncovered = 0;
    for r in ram {
        let mut covered: Vec<(u32, PfnRange)> = mem
            .iter()
            .filter_map(|(n, m)| m.intersect(r).map(|x| (*n, x)))
            .collect();
        covered.sort_by_key(|(_, x)| *x);
        let mut at = r.start;
        let mut last_node = pieces.last().map_or(0, |(n, _)| *n);
        for (n, x) in covered {
            if x.start > at {
                uncovered += x.start - at;
                pieces.push((last_node, PfnRange::new(at, x.start)));
            }
            let start = x.start.max(at);
            if start < x.end {
                pieces.push((n, PfnRange::new(start, x.end)));
                at = x.end;
            }
            last_node = n;
        }
        if at < r.end {
            uncovered += r.end - at;
            pieces.push((last_node, PfnRange::new(at, r.end)));
        }
    }
    if uncovered > (1 << 20) >> PAGE_SHIFT {
        return Err(alloc::format!(
            "its memory ranges leave {} KiB of RAM without a node",
            uncovered << (PAGE_SHIFT - 10)
        ));
    }
    let mut b = NumaBuilder::new(nr_nodes, apic_ids.len().max(1));
    for &(n, r) in &pieces {
        b.memory(n, r);
    }
    let mut rr = 0u32;
    for (cpu, apic) in apic_ids.iter().enumerate() {
        let node = match cpu_nodes.iter().find(|(a, _)| a == apic) {
            Some(&(_, n)) => n,
            None => {
                let n = rr % nr_nodes as u32;
                rr += 1;
                n
            }
        };
        b.cpu(cpu, node);
    }
    let (slit_used, slit_rejected) = match slit {
        None => (false, None),
        Some(Err(e)) => (false, Some(alloc::format!("malformed: {e}"))),
        Some(Ok(t)) => {
            let table: Option<Vec<u8>> = (0..nr_nodes * nr_nodes)
                .map(|i| t.distance(pxm[i / nr_nodes], pxm[i % nr_nodes]))
                .collect();
            match table {
                Some(d) => {
                    let mut probe = b.clone();
                    match probe.distances(d.clone()).build() {
                        Ok(_) => {
                            b.distances(d);
                            (true, None)
                        }
                        Err(e) => (false, Some(alloc::format!("{e}"))),
                    }
                }
                None => (
                    false,
                    Some(alloc::format!(
                        "{} localities do not cover every domain",
                        t.n
                    )),
                ),
            }
        }
    };
    let topology = b.build().map_err(|e| alloc::format!("{e}"))?;
    Ok(NumaInfo {
        source: NumaSource::Srat {
            slit: slit_used,
            slit_rejected,
        },
        topology,
        pxm,
    })
}

/// Writes the NUMA part of the system summary: where the layout came from, each node with
/// its memory ranges, size and CPUs, and the distance matrix.
pub fn describe(w: &mut dyn core::fmt::Write) -> core::fmt::Result {
    let Some(info) = info() else {
        return writeln!(w, "numa: discovery has not run");
    };
    let t = &info.topology;
    let from = match &info.source {
        NumaSource::Srat { slit: true, .. } => {
            String::from("the ACPI SRAT, distances from the SLIT")
        }
        NumaSource::Srat {
            slit: false,
            slit_rejected: None,
        } => String::from("the ACPI SRAT, default distances (no SLIT)"),
        NumaSource::Srat {
            slit: false,
            slit_rejected: Some(why),
        } => {
            alloc::format!("the ACPI SRAT, default distances (SLIT ignored: {why})")
        }
        NumaSource::NoSrat => String::from("no ACPI SRAT: one node"),
        NumaSource::Rejected(why) => alloc::format!("the ACPI SRAT was ignored ({why}): one node"),
    };
    writeln!(
        w,
        "numa: {} node{} ({from})",
        t.nr_nodes(),
        if t.nr_nodes() == 1 { "" } else { "s" }
    )?;
    for node in t.nodes() {
        let cpus: Vec<String> = node.cpus().iter().map(|c| alloc::format!("{c}")).collect();
        let pxm = info
            .pxm
            .get(node.id() as usize)
            .map_or(String::new(), |p| alloc::format!(" (pxm {p})"));
        writeln!(
            w,
            "  node {}{pxm}: {} MiB in {} range{}, cpus {}",
            node.id(),
            (node.pages() << PAGE_SHIFT) >> 20,
            node.ranges().len(),
            if node.ranges().len() == 1 { "" } else { "s" },
            if cpus.is_empty() {
                String::from("none")
            } else {
                cpus.join(",")
            }
        )?;
        for r in node.ranges() {
            writeln!(
                w,
                "    {:#014x}-{:#014x} {:>9} KiB",
                r.start << PAGE_SHIFT,
                r.end << PAGE_SHIFT,
                r.pages() << (PAGE_SHIFT - 10)
            )?;
        }
    }
    if t.nr_nodes() > 1 {
        write!(w, "  distances:")?;
        for a in 0..t.nr_nodes() as u32 {
            write!(w, " [")?;
            for b in 0..t.nr_nodes() as u32 {
                write!(w, "{}{}", if b == 0 { "" } else { " " }, t.distance(a, b))?;
            }
            write!(w, "]")?;
        }
        writeln!(w)?;
    }
    Ok(())
}
