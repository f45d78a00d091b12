//! The NUMA description: nodes, the physical memory and the CPUs of each, and the distances
//! between them.
//!
//! Models what Linux assembles from firmware before the page allocator exists
//! (`arch/x86/mm/numa.c`: `numa_meminfo`, `numa_set_node()` / `cpu_to_node()`,
//! `numa_set_distance()` / `node_distance()`), as plain data the platform hands over: the
//! kernel builds it from the ACPI SRAT and SLIT, host tests and the host benchmark from a
//! list of `(node, pfn range)` and a CPU-to-node map. Nodes are dense (`0..nr_nodes`), as
//! Linux's node ids are after `acpi_map_pxm_to_node()`.
//!
//! Distances follow the SLIT's convention (`LOCAL_DISTANCE` 10 on the diagonal, remote
//! entries above it; Linux rejects a table that breaks this, `slit_valid()`); without a
//! table every remote node is `REMOTE_DISTANCE` (20) away.
//!
//! `NumaTopology::fallback_order` is Linux's `build_zonelists()` node order
//! (`find_next_best_node()` in mm/page_alloc.c): the local node first, then the others by
//! distance, where a node that has CPUs gets a small penalty (prefer headless nodes), nodes
//! numbered below the local one a smaller one, and among equals the one that fewer
//! zonelists have chosen first so far (`node_load`), so that equally distant nodes share
//! the fallback load instead of all CPUs spilling into the same node.

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;
use page::NodeId;

/// Most nodes (a folio stores its node in 6 bits, Linux's `NODES_SHIFT` on x86_64).
pub const MAX_NUMNODES: usize = page::nid::MAX_NUMNODES as usize;
/// Distance of a node to itself (`LOCAL_DISTANCE`).
pub const LOCAL_DISTANCE: u8 = 10;
/// Distance between two nodes when firmware gives no table (`REMOTE_DISTANCE`).
pub const REMOTE_DISTANCE: u8 = 20;
/// `find_next_best_node()`'s penalty for a node that has CPUs of its own.
const PENALTY_FOR_NODE_WITH_CPUS: u32 = 1;

/// A half-open range of page frame numbers `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PfnRange {
    /// First frame.
    pub start: u64,
    /// One past the last frame.
    pub end: u64,
}

impl PfnRange {
    /// `[start, end)`.
    #[must_use]
    pub const fn new(start: u64, end: u64) -> Self {
        PfnRange { start, end }
    }

    /// Frames in the range.
    #[must_use]
    pub const fn pages(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// Whether `pfn` lies in the range.
    #[must_use]
    pub const fn contains(&self, pfn: u64) -> bool {
        self.start <= pfn && pfn < self.end
    }

    /// The part of `self` inside `other`, if any.
    #[must_use]
    pub fn intersect(&self, other: &PfnRange) -> Option<PfnRange> {
        let r = PfnRange::new(self.start.max(other.start), self.end.min(other.end));
        (r.start < r.end).then_some(r)
    }
}

impl fmt::Display for PfnRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pfn {:#x}-{:#x}", self.start, self.end)
    }
}

/// Why a NUMA description was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumaError {
    /// No nodes, or more than [`MAX_NUMNODES`].
    BadNodeCount(usize),
    /// A node id at or above the node count.
    NoSuchNode(NodeId),
    /// A CPU id at or above the CPU count.
    NoSuchCpu(usize),
    /// An empty or inverted range.
    EmptyRange(PfnRange),
    /// A range past the largest frame number a folio can describe.
    RangeTooHigh(PfnRange),
    /// Two ranges share frames.
    Overlap(PfnRange, PfnRange),
    /// A distance table that breaks the SLIT rules (the diagonal must be
    /// [`LOCAL_DISTANCE`], every other entry above it): the first bad `(from, to, value)`.
    BadDistance(NodeId, NodeId, u8),
}

impl fmt::Display for NumaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumaError::BadNodeCount(n) => write!(f, "{n} nodes (1..={MAX_NUMNODES} allowed)"),
            NumaError::NoSuchNode(n) => write!(f, "node {n} does not exist"),
            NumaError::NoSuchCpu(c) => write!(f, "cpu {c} does not exist"),
            NumaError::EmptyRange(r) => write!(f, "empty range {r}"),
            NumaError::RangeTooHigh(r) => write!(f, "range {r} beyond the largest pfn"),
            NumaError::Overlap(a, b) => write!(f, "ranges {a} and {b} overlap"),
            NumaError::BadDistance(a, b, d) => {
                write!(
                    f,
                    "distance {d} from node {a} to node {b} breaks the SLIT rules"
                )
            }
        }
    }
}

/// One node: its memory and its CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaNode {
    id: NodeId,
    ranges: Vec<PfnRange>,
    cpus: Vec<usize>,
}

impl NumaNode {
    /// The node id.
    #[must_use]
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// Its memory, sorted by start.
    #[must_use]
    pub fn ranges(&self) -> &[PfnRange] {
        &self.ranges
    }

    /// Its CPUs, ascending (`cpumask_of_node()`).
    #[must_use]
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// Frames of memory it has.
    #[must_use]
    pub fn pages(&self) -> u64 {
        self.ranges.iter().map(PfnRange::pages).sum()
    }

    /// Whether it has memory (`N_MEMORY`).
    #[must_use]
    pub fn has_memory(&self) -> bool {
        !self.ranges.is_empty()
    }
}

/// Collects a NUMA description piece by piece, then checks it ([`NumaBuilder::build`]).
#[derive(Clone, Debug)]
pub struct NumaBuilder {
    nr_nodes: usize,
    ranges: Vec<(NodeId, PfnRange)>,
    cpu_node: Vec<NodeId>,
    distance: Option<Vec<u8>>,
    /// A CPU placed that does not exist (reported by `build`).
    bad_cpu: Option<usize>,
}

impl NumaBuilder {
    /// `nr_nodes` nodes and `nr_cpus` CPUs; every CPU on node 0 until placed.
    #[must_use]
    pub fn new(nr_nodes: usize, nr_cpus: usize) -> Self {
        NumaBuilder {
            nr_nodes,
            ranges: Vec::new(),
            cpu_node: vec![0; nr_cpus],
            distance: None,
            bad_cpu: None,
        }
    }

    /// Gives `node` the frames `range`.
    pub fn memory(&mut self, node: NodeId, range: PfnRange) -> &mut Self {
        self.ranges.push((node, range));
        self
    }

    /// Places `cpu` on `node` (`numa_set_node()`); checked by [`Self::build`].
    pub fn cpu(&mut self, cpu: usize, node: NodeId) -> &mut Self {
        match self.cpu_node.get_mut(cpu) {
            Some(n) => *n = node,
            None => self.bad_cpu = self.bad_cpu.or(Some(cpu)),
        }
        self
    }

    /// Places CPU `i` on node `i % nr_nodes` (how `kx --nodes` assigns vCPUs).
    pub fn cpus_round_robin(&mut self) -> &mut Self {
        let n = self.nr_nodes.max(1);
        for (cpu, node) in self.cpu_node.iter_mut().enumerate() {
            *node = (cpu % n) as u32;
        }
        self
    }

    /// A full distance table, row `from`, column `to` (the SLIT's matrix).
    pub fn distances(&mut self, table: Vec<u8>) -> &mut Self {
        self.distance = Some(table);
        self
    }

    /// Checks everything and builds the topology.
    pub fn build(&self) -> Result<NumaTopology, NumaError> {
        let n = self.nr_nodes;
        if n == 0 || n > MAX_NUMNODES {
            return Err(NumaError::BadNodeCount(n));
        }
        let mut nodes: Vec<NumaNode> = (0..n as u32)
            .map(|id| NumaNode {
                id,
                ranges: Vec::new(),
                cpus: Vec::new(),
            })
            .collect();
        let mut all: Vec<PfnRange> = Vec::with_capacity(self.ranges.len());
        for &(node, r) in &self.ranges {
            if r.start >= r.end {
                return Err(NumaError::EmptyRange(r));
            }
            if r.end > page::folio::MAX_PFN {
                return Err(NumaError::RangeTooHigh(r));
            }
            let slot = nodes
                .get_mut(node as usize)
                .ok_or(NumaError::NoSuchNode(node))?;
            slot.ranges.push(r);
            all.push(r);
        }
        all.sort();
        for w in all.windows(2) {
            if w[1].start < w[0].end {
                return Err(NumaError::Overlap(w[0], w[1]));
            }
        }
        for node in &mut nodes {
            node.ranges.sort();
        }
        if let Some(cpu) = self.bad_cpu {
            return Err(NumaError::NoSuchCpu(cpu));
        }
        for (cpu, &node) in self.cpu_node.iter().enumerate() {
            nodes
                .get_mut(node as usize)
                .ok_or(NumaError::NoSuchNode(node))?
                .cpus
                .push(cpu);
        }
        let distance = match &self.distance {
            Some(t) => {
                if t.len() != n * n {
                    return Err(NumaError::BadNodeCount(n));
                }
                for a in 0..n {
                    for b in 0..n {
                        let d = t[a * n + b];
                        let ok = if a == b {
                            d == LOCAL_DISTANCE
                        } else {
                            d > LOCAL_DISTANCE
                        };
                        if !ok {
                            return Err(NumaError::BadDistance(a as u32, b as u32, d));
                        }
                    }
                }
                t.clone()
            }
            None => (0..n * n)
                .map(|i| {
                    if i / n == i % n {
                        LOCAL_DISTANCE
                    } else {
                        REMOTE_DISTANCE
                    }
                })
                .collect(),
        };
        Ok(NumaTopology {
            cpu_node: self.cpu_node.clone(),
            nodes,
            distance,
        })
    }
}

/// The checked NUMA description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaTopology {
    nodes: Vec<NumaNode>,
    cpu_node: Vec<NodeId>,
    distance: Vec<u8>,
}

impl NumaTopology {
    /// One node holding `ranges` and `nr_cpus` CPUs: what a machine without an SRAT is.
    pub fn single_node(nr_cpus: usize, ranges: &[PfnRange]) -> Result<NumaTopology, NumaError> {
        let mut b = NumaBuilder::new(1, nr_cpus);
        for &r in ranges {
            b.memory(0, r);
        }
        b.build()
    }

    /// `nr_nodes` nodes holding `ranges` (node, frames), CPU `i` on node `i % nr_nodes`,
    /// default distances: how host tests and the host benchmark describe a made-up machine.
    pub fn round_robin(
        nr_nodes: usize,
        nr_cpus: usize,
        ranges: &[(u32, PfnRange)],
    ) -> Result<NumaTopology, NumaError> {
        let mut b = NumaBuilder::new(nr_nodes, nr_cpus);
        for &(n, r) in ranges {
            b.memory(n, r);
        }
        b.cpus_round_robin().build()
    }

    /// Number of nodes.
    #[must_use]
    pub fn nr_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Number of CPUs.
    #[must_use]
    pub fn nr_cpus(&self) -> usize {
        self.cpu_node.len()
    }

    /// The nodes, by id.
    #[must_use]
    pub fn nodes(&self) -> &[NumaNode] {
        &self.nodes
    }

    /// Node `id`.
    #[must_use]
    pub fn node(&self, id: NodeId) -> Option<&NumaNode> {
        self.nodes.get(id as usize)
    }

    /// The node of `cpu` (`cpu_to_node()`); node 0 for a CPU the description does not know.
    #[must_use]
    pub fn cpu_to_node(&self, cpu: usize) -> NodeId {
        self.cpu_node.get(cpu).copied().unwrap_or(0)
    }

    /// The node whose memory holds `pfn` (`early_pfn_to_nid()`).
    #[must_use]
    pub fn pfn_to_node(&self, pfn: u64) -> Option<NodeId> {
        self.nodes
            .iter()
            .find(|n| n.ranges.iter().any(|r| r.contains(pfn)))
            .map(|n| n.id)
    }

    /// `node_distance(from, to)`; `u8::MAX` for a node that does not exist.
    #[must_use]
    pub fn distance(&self, from: NodeId, to: NodeId) -> u8 {
        let n = self.nodes.len();
        let (a, b) = (from as usize, to as usize);
        if a >= n || b >= n {
            return u8::MAX;
        }
        self.distance[a * n + b]
    }

    /// Every memory range with its node, sorted by start.
    #[must_use]
    pub fn memory(&self) -> Vec<(NodeId, PfnRange)> {
        let mut v: Vec<(NodeId, PfnRange)> = self
            .nodes
            .iter()
            .flat_map(|n| n.ranges.iter().map(move |r| (n.id, *r)))
            .collect();
        v.sort_by_key(|(_, r)| *r);
        v
    }

    /// The fallback order of every node, as `build_all_zonelists()` computes it: entry `n`
    /// lists the nodes with memory that an allocation preferring node `n` tries, in order
    /// (node `n` first when it has memory). Computed for all nodes at once because
    /// `node_load` carries over from one node's list to the next, as in Linux.
    #[must_use]
    pub fn fallback_orders(&self) -> Vec<Vec<NodeId>> {
        let mut node_load = vec![0u32; self.nodes.len()];
        (0..self.nodes.len() as u32)
            .map(|local| self.fallback_order(local, &mut node_load))
            .collect()
    }

    /// One node's order (`build_zonelists()` over `find_next_best_node()`).
    fn fallback_order(&self, local: NodeId, node_load: &mut [u32]) -> Vec<NodeId> {
        let n = self.nodes.len();
        let mut used = vec![false; n];
        let mut order = Vec::with_capacity(n);
        let mut prev = local;
        while let Some(node) = self.find_next_best_node(local, &mut used, node_load) {
            if self.distance(local, node) != self.distance(local, prev) {
                node_load[node as usize] += 1;
            }
            if self.nodes[node as usize].has_memory() {
                order.push(node);
            }
            prev = node;
        }
        order
    }

    fn find_next_best_node(
        &self,
        local: NodeId,
        used: &mut [bool],
        load: &[u32],
    ) -> Option<NodeId> {
        if !used[local as usize] {
            used[local as usize] = true;
            return Some(local);
        }
        let mut best: Option<(u32, u32)> = None;
        for node in self.nodes.iter().filter(|n| n.has_memory()) {
            let id = node.id;
            if used[id as usize] {
                continue;
            }
            let mut val = u32::from(self.distance(local, id));
            val += u32::from(id < local);
            if !node.cpus.is_empty() {
                val += PENALTY_FOR_NODE_WITH_CPUS;
            }
            val = val * MAX_NUMNODES as u32 + load[id as usize];
            if best.is_none_or(|(_, b)| val < b) {
                best = Some((id, val));
            }
        }
        let (id, _) = best?;
        used[id as usize] = true;
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(a: u64, b: u64) -> PfnRange {
        PfnRange::new(a, b)
    }

    #[test]
    fn builds_and_answers() {
        let mut b = NumaBuilder::new(2, 4);
        b.memory(0, r(0, 100))
            .memory(1, r(200, 300))
            .memory(0, r(100, 150))
            .cpus_round_robin();
        let t = b.build().unwrap();
        assert_eq!(t.nr_nodes(), 2);
        assert_eq!(t.node(0).unwrap().ranges(), [r(0, 100), r(100, 150)]);
        assert_eq!(t.node(0).unwrap().pages(), 150);
        assert_eq!(t.node(1).unwrap().cpus(), [1, 3]);
        assert_eq!(t.cpu_to_node(2), 0);
        assert_eq!(t.cpu_to_node(99), 0);
        assert_eq!(t.pfn_to_node(250), Some(1));
        assert_eq!(t.pfn_to_node(170), None);
        assert_eq!(t.distance(0, 1), REMOTE_DISTANCE);
        assert_eq!(t.distance(1, 1), LOCAL_DISTANCE);
        assert_eq!(t.distance(0, 5), u8::MAX);
        assert_eq!(t.memory().len(), 3);
    }

    #[test]
    fn bad_descriptions_are_typed() {
        assert_eq!(
            NumaBuilder::new(0, 1).build(),
            Err(NumaError::BadNodeCount(0))
        );
        assert_eq!(
            NumaBuilder::new(1, 1).memory(1, r(0, 1)).build(),
            Err(NumaError::NoSuchNode(1))
        );
        assert_eq!(
            NumaBuilder::new(1, 1).memory(0, r(5, 5)).build(),
            Err(NumaError::EmptyRange(r(5, 5)))
        );
        assert_eq!(
            NumaBuilder::new(2, 1)
                .memory(0, r(0, 10))
                .memory(1, r(5, 20))
                .build(),
            Err(NumaError::Overlap(r(0, 10), r(5, 20)))
        );
        assert_eq!(
            NumaBuilder::new(1, 1).cpu(0, 3).build(),
            Err(NumaError::NoSuchNode(3))
        );
        assert_eq!(
            NumaBuilder::new(1, 1).cpu(4, 0).build(),
            Err(NumaError::NoSuchCpu(4))
        );
        assert_eq!(
            NumaBuilder::new(2, 1)
                .distances(vec![10, 10, 20, 10])
                .build(),
            Err(NumaError::BadDistance(0, 1, 10))
        );
        assert_eq!(
            NumaBuilder::new(2, 1)
                .distances(vec![11, 20, 20, 10])
                .build(),
            Err(NumaError::BadDistance(0, 0, 11))
        );
    }

    /// Four nodes on a line (distance 10 + 10 * hops): each node falls back to its nearer
    /// neighbours first, and of two equally near ones to the one fewer zonelists chose.
    #[test]
    fn fallback_follows_distance_then_load() {
        let n = 4;
        let table: Vec<u8> = (0..n * n)
            .map(|i| {
                let (a, b) = ((i / n) as i32, (i % n) as i32);
                10 + 10 * (a - b).unsigned_abs() as u8
            })
            .collect();
        let mut b = NumaBuilder::new(n, n);
        for node in 0..n as u32 {
            b.memory(node, r(u64::from(node) * 100, u64::from(node) * 100 + 50));
        }
        let t = b.cpus_round_robin().distances(table).build().unwrap();
        let orders = t.fallback_orders();
        assert_eq!(orders[0], [0, 1, 2, 3]);
        assert_eq!(orders[3], [3, 2, 1, 0]);
        // Node 1's neighbours 0 and 2 are both 20 away; 0 is "below" it (penalty 1).
        assert_eq!(orders[1], [1, 2, 0, 3]);
        assert_eq!(orders[2][0], 2);
        assert_eq!(orders[2].len(), 4);
    }

    /// A memoryless node starts its order with the nearest node that has memory.
    #[test]
    fn memoryless_node_falls_back() {
        let mut b = NumaBuilder::new(2, 2);
        b.memory(0, r(0, 10)).cpus_round_robin();
        let t = b.build().unwrap();
        assert!(!t.node(1).unwrap().has_memory());
        assert_eq!(t.fallback_orders(), [vec![0], vec![0]]);
        let single = NumaTopology::single_node(3, &[r(0, 8)]).unwrap();
        assert_eq!(single.node(0).unwrap().cpus(), [0, 1, 2]);
    }
}
