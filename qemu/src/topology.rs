//! The host's CPU topology, read from sysfs: which logical CPUs are online, which physical
//! core and package each belongs to, and which NUMA node (and whether that node has memory).
//!
//! Sources, under a sysfs root (normally `/sys/devices/system`, a recorded tree in tests):
//!
//! - `cpu/online`: the online CPUs, as a cpulist (`0-3,8-11`);
//! - `cpu/cpuN/topology/core_id` and `physical_package_id`: the core and the package; two
//!   logical CPUs with the same pair are SMT siblings (hyperthreads) of one physical core;
//! - `node/nodeN/cpulist`: node N's CPUs; `node/has_memory` (or, where it is missing,
//!   `node/nodeN/meminfo`'s `MemTotal`): which nodes have memory. A node with CPUs and no
//!   memory is a memoryless node. Without `node/` (a kernel without NUMA) every CPU is on
//!   node 0, which has the memory.
//!
//! [`crate::placement`] chooses host cores from this.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;

/// One logical CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cpu {
    /// Its Linux CPU number.
    pub cpu: usize,
    /// `physical_package_id`.
    pub package: u32,
    /// `core_id` (unique within a package).
    pub core: u32,
    /// Its NUMA node.
    pub node: u32,
}

/// One NUMA node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// Its id.
    pub id: u32,
    /// Its online CPUs, ascending.
    pub cpus: Vec<usize>,
    /// Whether it has memory (a memoryless node has CPUs only).
    pub memory: bool,
}

/// The host's topology.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// Online logical CPUs, ascending.
    pub cpus: Vec<Cpu>,
    /// NUMA nodes, ascending by id (CPU-less nodes included).
    pub nodes: Vec<Node>,
}

/// What results.json says about the host's topology.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopologySummary {
    /// Online logical CPUs.
    pub cpus: usize,
    /// Physical cores.
    pub cores: usize,
    /// Packages (sockets).
    pub packages: usize,
    /// NUMA nodes.
    pub nodes: usize,
    /// Whether some core has more than one logical CPU (SMT siblings).
    pub smt: bool,
    /// Each node's CPUs (`cpulist` form) and whether it has memory.
    pub node_cpus: Vec<NodeSummary>,
}

/// One node in a [`TopologySummary`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSummary {
    /// Node id.
    pub node: u32,
    /// Its CPUs as a cpulist (`0-7,16-23`).
    pub cpus: String,
    /// Whether it has memory.
    pub memory: bool,
}

/// Parses a Linux cpulist (`0-3,8,10-11`; empty: none).
pub fn parse_cpulist(s: &str) -> Result<Vec<usize>, String> {
    let mut out = BTreeSet::new();
    for part in s.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let part = part.trim();
        let num = |x: &str| {
            x.trim()
                .parse::<usize>()
                .map_err(|_| format!("`{s}` is not a cpulist (at `{part}`)"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b || b - a > 1 << 16 {
                    return Err(format!("`{s}` is not a cpulist (range `{part}`)"));
                }
                out.extend(a..=b);
            }
            None => {
                out.insert(num(part)?);
            }
        }
    }
    Ok(out.into_iter().collect())
}

/// `cpus` as a cpulist (`0-3,8`).
#[must_use]
pub fn format_cpulist(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

impl Topology {
    /// The host's topology from `/sys/devices/system`.
    pub fn host() -> Result<Topology, String> {
        Topology::read(Path::new("/sys/devices/system"))
    }

    /// The topology of the sysfs tree at `sys` (a `/sys/devices/system`).
    pub fn read(sys: &Path) -> Result<Topology, String> {
        let read =
            |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
        let online = parse_cpulist(&read(&sys.join("cpu/online"))?)?;
        if online.is_empty() {
            return Err(format!(
                "{}: no CPU online",
                sys.join("cpu/online").display()
            ));
        }
        // Nodes: every nodeN directory.
        let mut nodes: Vec<Node> = Vec::new();
        let node_dir = sys.join("node");
        if let Ok(entries) = std::fs::read_dir(&node_dir) {
            for e in entries.filter_map(Result::ok) {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(id) = name
                    .strip_prefix("node")
                    .and_then(|n| n.parse::<u32>().ok())
                else {
                    continue;
                };
                let cpus = parse_cpulist(&read(&e.path().join("cpulist"))?)?
                    .into_iter()
                    .filter(|c| online.contains(c))
                    .collect();
                nodes.push(Node {
                    id,
                    cpus,
                    memory: true,
                });
            }
        }
        nodes.sort_by_key(|n| n.id);
        if nodes.is_empty() {
            nodes.push(Node {
                id: 0,
                cpus: online.clone(),
                memory: true,
            });
        } else {
            match std::fs::read_to_string(node_dir.join("has_memory")) {
                Ok(list) => {
                    let with = parse_cpulist(&list)?;
                    for n in &mut nodes {
                        n.memory = with.contains(&(n.id as usize));
                    }
                }
                Err(_) => {
                    for n in &mut nodes {
                        let info = node_dir.join(format!("node{}/meminfo", n.id));
                        n.memory = std::fs::read_to_string(info)
                            .ok()
                            .and_then(|t| meminfo_total_kib(&t))
                            .is_none_or(|kib| kib > 0);
                    }
                }
            }
        }
        let mut cpus = Vec::with_capacity(online.len());
        for &cpu in &online {
            let topo = sys.join(format!("cpu/cpu{cpu}/topology"));
            let num = |f: &str| -> Result<u32, String> {
                let p = topo.join(f);
                match std::fs::read_to_string(&p) {
                    // A kernel that does not know reports -1; treat it as 0.
                    Ok(t) => Ok(t.trim().parse::<i64>().map_or(0, |v| v.max(0) as u32)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound && f != "core_id" => Ok(0),
                    Err(e) => Err(format!("{}: {e}", p.display())),
                }
            };
            let node = nodes
                .iter()
                .find(|n| n.cpus.contains(&cpu))
                .map_or(0, |n| n.id);
            cpus.push(Cpu {
                cpu,
                package: num("physical_package_id")?,
                core: num("core_id")?,
                node,
            });
        }
        Ok(Topology { cpus, nodes })
    }

    /// The physical cores, each a list of its logical CPUs (ascending), ordered by
    /// (node, package, core id).
    #[must_use]
    pub fn cores(&self) -> Vec<Vec<usize>> {
        let mut keyed: Vec<((u32, u32, u32), usize)> = self
            .cpus
            .iter()
            .map(|c| ((c.node, c.package, c.core), c.cpu))
            .collect();
        keyed.sort_unstable();
        let mut out: Vec<Vec<usize>> = Vec::new();
        let mut last = None;
        for (key, cpu) in keyed {
            if last == Some(key) {
                out.last_mut().expect("a core was started").push(cpu);
            } else {
                out.push(vec![cpu]);
                last = Some(key);
            }
        }
        out
    }

    /// The node of `cpu` (0 if unknown).
    #[must_use]
    pub fn node_of(&self, cpu: usize) -> u32 {
        self.cpus
            .iter()
            .find(|c| c.cpu == cpu)
            .map_or(0, |c| c.node)
    }

    /// Whether some physical core has more than one logical CPU.
    #[must_use]
    pub fn smt(&self) -> bool {
        self.cores().iter().any(|c| c.len() > 1)
    }

    /// The counts results.json records.
    #[must_use]
    pub fn summary(&self) -> TopologySummary {
        let packages: BTreeSet<u32> = self.cpus.iter().map(|c| c.package).collect();
        TopologySummary {
            cpus: self.cpus.len(),
            cores: self.cores().len(),
            packages: packages.len(),
            nodes: self.nodes.len(),
            smt: self.smt(),
            node_cpus: self
                .nodes
                .iter()
                .map(|n| NodeSummary {
                    node: n.id,
                    cpus: format_cpulist(&n.cpus),
                    memory: n.memory,
                })
                .collect(),
        }
    }
}

impl TopologySummary {
    /// `2 CPUs, 2 cores, 1 package, 1 node, no SMT`.
    #[must_use]
    pub fn line(&self) -> String {
        let s =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let memoryless: Vec<String> = self
            .node_cpus
            .iter()
            .filter(|n| !n.memory)
            .map(|n| n.node.to_string())
            .collect();
        format!(
            "{}, {}, {}, {}{}, {}",
            s(self.cpus, "CPU", "CPUs"),
            s(self.cores, "core", "cores"),
            s(self.packages, "package", "packages"),
            s(self.nodes, "node", "nodes"),
            if memoryless.is_empty() {
                String::new()
            } else {
                format!(" (memoryless: {})", memoryless.join(","))
            },
            if self.smt { "SMT" } else { "no SMT" }
        )
    }
}

/// `MemTotal` of a node's `meminfo` (`Node 0 MemTotal:  16384 kB`), in KiB.
fn meminfo_total_kib(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (_, rest) = l.split_once("MemTotal:")?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

/// Recorded sysfs trees for tests (here and in [`crate::placement`]).
#[cfg(test)]
pub mod fake {
    use std::path::{Path, PathBuf};

    /// A sysfs tree under a fresh temp directory, removed on drop.
    pub struct FakeSys {
        /// The `/sys/devices/system` stand-in.
        pub root: PathBuf,
    }

    impl Drop for FakeSys {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// A tree: `cpus[i] = (package, core, node)` for CPU i; `nodes` (id, has memory).
    pub fn tree(name: &str, cpus: &[(u32, u32, u32)], nodes: &[(u32, bool)]) -> FakeSys {
        let root = std::env::temp_dir().join(format!(
            "kx-sysfs-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        write(&root, "cpu/online", &format!("0-{}\n", cpus.len() - 1));
        for (i, (pkg, core, _)) in cpus.iter().enumerate() {
            write(
                &root,
                &format!("cpu/cpu{i}/topology/physical_package_id"),
                &format!("{pkg}\n"),
            );
            write(
                &root,
                &format!("cpu/cpu{i}/topology/core_id"),
                &format!("{core}\n"),
            );
        }
        if !nodes.is_empty() {
            for (id, mem) in nodes {
                let list: Vec<usize> = cpus
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.2 == *id)
                    .map(|(i, _)| i)
                    .collect();
                write(
                    &root,
                    &format!("node/node{id}/cpulist"),
                    &format!("{}\n", super::format_cpulist(&list)),
                );
                write(
                    &root,
                    &format!("node/node{id}/meminfo"),
                    &format!(
                        "Node {id} MemTotal:       {} kB\n",
                        if *mem { 16_384_000 } else { 0 }
                    ),
                );
            }
            let with: Vec<usize> = nodes.iter().filter(|n| n.1).map(|n| n.0 as usize).collect();
            write(
                &root,
                "node/has_memory",
                &format!("{}\n", super::format_cpulist(&with)),
            );
        }
        FakeSys { root }
    }

    /// This development machine: 1 package, 2 cores, no SMT, one node.
    pub fn two_cores() -> FakeSys {
        tree("two", &[(0, 0, 0), (0, 1, 0)], &[(0, true)])
    }

    /// 2 sockets x 8 cores x 2 threads, one node per socket, numbered like Intel servers:
    /// CPUs 0-7 socket 0, 8-15 socket 1, 16-23 socket 0's siblings, 24-31 socket 1's.
    pub fn two_sockets() -> FakeSys {
        let mut cpus = Vec::new();
        for _thread in 0..2 {
            for pkg in 0..2 {
                for core in 0..8 {
                    cpus.push((pkg, core, pkg));
                }
            }
        }
        tree("2s", &cpus, &[(0, true), (1, true)])
    }

    /// 2 nodes of 2 cores each, node 1 memoryless.
    pub fn memoryless() -> FakeSys {
        tree(
            "memless",
            &[(0, 0, 0), (0, 1, 0), (0, 2, 1), (0, 3, 1)],
            &[(0, true), (1, false)],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11\n").unwrap(),
            [0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpulist("").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_cpulist("5").unwrap(), [5]);
        assert!(parse_cpulist("3-1").is_err());
        assert!(parse_cpulist("a").is_err());
        assert_eq!(format_cpulist(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpulist(&[]), "");
        assert_eq!(format_cpulist(&[4, 2]), "2,4");
    }

    #[test]
    fn this_machine_two_cores_no_smt() {
        let f = fake::two_cores();
        let t = Topology::read(&f.root).unwrap();
        assert_eq!(t.cores(), [vec![0], vec![1]]);
        let s = t.summary();
        assert_eq!(
            (s.cpus, s.cores, s.packages, s.nodes, s.smt),
            (2, 2, 1, 1, false)
        );
        assert_eq!(s.line(), "2 CPUs, 2 cores, 1 package, 1 node, no SMT");
    }

    #[test]
    fn two_sockets_with_smt_and_two_nodes() {
        let f = fake::two_sockets();
        let t = Topology::read(&f.root).unwrap();
        let cores = t.cores();
        assert_eq!(cores.len(), 16);
        // Node 0's cores first, each with its sibling.
        assert_eq!(cores[0], [0, 16]);
        assert_eq!(cores[7], [7, 23]);
        assert_eq!(cores[8], [8, 24]);
        assert_eq!(t.node_of(24), 1);
        let s = t.summary();
        assert_eq!(
            (s.cpus, s.cores, s.packages, s.nodes, s.smt),
            (32, 16, 2, 2, true)
        );
        assert_eq!(s.node_cpus[1].cpus, "8-15,24-31");
        assert_eq!(s.line(), "32 CPUs, 16 cores, 2 packages, 2 nodes, SMT");
    }

    #[test]
    fn a_memoryless_node_is_seen() {
        let f = fake::memoryless();
        let t = Topology::read(&f.root).unwrap();
        assert_eq!(
            t.nodes.iter().map(|n| n.memory).collect::<Vec<_>>(),
            [true, false]
        );
        assert!(t.summary().line().contains("2 nodes (memoryless: 1)"));
        // Without has_memory, meminfo's MemTotal decides.
        std::fs::remove_file(f.root.join("node/has_memory")).unwrap();
        let t = Topology::read(&f.root).unwrap();
        assert!(t.nodes[0].memory && !t.nodes[1].memory);
    }

    #[test]
    fn without_numa_every_cpu_is_on_node_0_and_errors_name_the_file() {
        let f = fake::tree("nonuma", &[(0, 0, 0), (0, 0, 0)], &[]);
        let t = Topology::read(&f.root).unwrap();
        assert_eq!(t.nodes.len(), 1);
        assert_eq!(t.cores(), [vec![0, 1]]);
        assert!(t.smt());
        let e = Topology::read(Path::new("/nonexistent/sys")).unwrap_err();
        assert!(e.contains("/nonexistent/sys/cpu/online"), "{e}");
    }

    #[test]
    fn the_host_topology_reads() {
        let t = Topology::host().unwrap();
        assert!(!t.cpus.is_empty() && !t.nodes.is_empty());
    }
}
