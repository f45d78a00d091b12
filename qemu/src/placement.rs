//! Where the benchmark's CPUs run on the host: the choice of host CPUs for QEMU's vCPU
//! threads (`kx bench`) and for the host-thread engine (`kx bench --host`), and the record
//! of it in `results.json`.
//!
//! The choice ([`place`]) works on the [`Topology`] restricted to the CPUs the runner may
//! use (its affinity mask):
//!
//! - by default one vCPU per physical core (the core's first logical CPU), so two vCPUs never
//!   share a core's execution units; with `--smt` a core's SMT siblings are used too, core
//!   by core (vCPUs 0 and 1 on the two siblings of the first core, and so on);
//! - cores are taken node by node (node 0's first), so a guest without a NUMA description
//!   stays on as few host nodes as it can; with `--nodes host` vCPU `i` belongs to guest
//!   node `i % N` (the runner's round-robin, which the QEMU command line follows) and is pinned to a core
//!   of the host node that guest node mirrors;
//! - when there are more vCPUs than such cores, the ones beyond are left unpinned (they
//!   float over the allowed CPUs) and a warning says so and how to avoid it (`--smt` where
//!   the host has siblings, or fewer vCPUs): a run on an over-subscribed host is still a
//!   run, and its record says which vCPUs were not pinned;
//! - the allowed CPUs no vCPU uses are the spare ones: QEMU's other threads (main loop,
//!   I/O, RCU) are moved there when there are any; when there are none (2 vCPUs on a 2-core
//!   machine) they share the vCPUs' cores, and the record says so.
//!
//! [`apply_to_qemu`] asks QEMU over QMP ([`crate::qmp`]) for each vCPU's thread id and sets
//! the affinities with `sched_setaffinity`; host-thread mode pins its own threads to
//! [`Placement::cpus`].

use crate::accel::Accel;
use crate::topology::{Topology, TopologySummary, format_cpulist};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;

/// One vCPU's (or engine thread's) place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// vCPU index (QMP's `cpu-index`), or engine CPU.
    pub index: u32,
    /// The host CPU it is pinned to (`None`: not pinned, more vCPUs than cores).
    pub host_cpu: Option<usize>,
    /// That CPU's host node.
    pub host_node: Option<u32>,
    /// Its guest node (`--nodes host`).
    pub guest_node: Option<u32>,
}

/// A guest node of `--nodes host`: the host node it mirrors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestNode {
    /// Guest node id.
    pub guest: u32,
    /// The host node it mirrors (its vCPUs' cores, its memory).
    pub host: u32,
    /// Whether it gets memory (false: the host node is memoryless, so is the guest's).
    pub memory: bool,
}

/// `--nodes host`: the guest's nodes as mirrors of the host's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeMirror {
    /// Guest node `i` is `nodes[i]`.
    pub nodes: Vec<GuestNode>,
    /// Bind each node's memory to its host node (the host has several nodes).
    pub bind: bool,
}

/// The choice of host CPUs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// One per vCPU, by index.
    pub slots: Vec<Slot>,
    /// Allowed CPUs no slot uses (QEMU's other threads go there).
    pub spare: Vec<usize>,
    /// `--smt`: siblings used.
    pub smt: bool,
    /// `--nodes host`: the guest nodes (empty otherwise).
    pub guest_nodes: Vec<GuestNode>,
    /// What could not be done as asked.
    pub warnings: Vec<String>,
}

impl Placement {
    /// The pinned CPUs in slot order (the unpinned ones left out).
    #[must_use]
    pub fn cpus(&self) -> Vec<usize> {
        self.slots.iter().filter_map(|s| s.host_cpu).collect()
    }

    /// Whether every slot is pinned.
    #[must_use]
    pub fn complete(&self) -> bool {
        self.slots.iter().all(|s| s.host_cpu.is_some())
    }

    /// `vCPU->host CPU` pairs, `0->0 1->1`, unpinned ones as `2->-`.
    #[must_use]
    pub fn mapping(&self) -> String {
        mapping(self.slots.iter().map(|s| (s.index, s.host_cpu)))
    }
}

/// `index->host CPU` pairs joined by spaces (`0->0 1->1`; `-` for an unpinned one): the
/// one spelling of a placement in messages and notes.
fn mapping(pairs: impl Iterator<Item = (u32, Option<usize>)>) -> String {
    pairs
        .map(|(index, cpu)| match cpu {
            Some(c) => format!("{index}->{c}"),
            None => format!("{index}->-"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Chooses host CPUs for `n` vCPUs on `topo`, among `allowed` (see the module doc).
#[must_use]
pub fn place(
    topo: &Topology,
    allowed: &[usize],
    n: usize,
    smt: bool,
    nodes_host: bool,
) -> Placement {
    let usable = |c: &usize| allowed.contains(c);
    // Per host node (ascending id): the CPUs to use, in order.
    let mut per_node: Vec<(u32, Vec<usize>)> = Vec::new();
    for core in topo.cores() {
        let core: Vec<usize> = core.into_iter().filter(usable).collect();
        let Some(&first) = core.first() else { continue };
        let node = topo.node_of(first);
        let take: &[usize] = if smt { &core } else { &core[..1] };
        match per_node.iter_mut().find(|(id, _)| *id == node) {
            Some((_, list)) => list.extend_from_slice(take),
            None => per_node.push((node, take.to_vec())),
        }
    }
    per_node.sort_by_key(|(id, _)| *id);
    let mut warnings = Vec::new();
    let mut guest_nodes = Vec::new();
    let mut slots = Vec::with_capacity(n);
    if nodes_host && !per_node.is_empty() {
        let g = per_node.len().min(n.max(1));
        if g < per_node.len() {
            warnings.push(format!(
                "--nodes host: the host has {} nodes with CPUs the runner may use, the guest \
                 {n} vCPU(s): it mirrors the first {g}",
                per_node.len()
            ));
        }
        for (i, (host, _)) in per_node.iter().take(g).enumerate() {
            guest_nodes.push(GuestNode {
                guest: i as u32,
                host: *host,
                memory: topo.nodes.iter().any(|x| x.id == *host && x.memory),
            });
        }
        if guest_nodes.iter().all(|x| !x.memory) {
            // The guest needs memory somewhere: the first node gets it (bound to no node).
            guest_nodes[0].memory = true;
            warnings.push(
                "--nodes host: no mirrored host node has memory; guest node 0 gets it all"
                    .to_owned(),
            );
        }
        let mut next = vec![0usize; g];
        for i in 0..n {
            let gn = i % g;
            let list = &per_node[gn].1;
            let cpu = list.get(next[gn]).copied();
            next[gn] += 1;
            slots.push(Slot {
                index: i as u32,
                host_cpu: cpu,
                host_node: cpu.map(|c| topo.node_of(c)),
                guest_node: Some(gn as u32),
            });
        }
    } else {
        let order: Vec<usize> = per_node.iter().flat_map(|(_, l)| l.clone()).collect();
        for i in 0..n {
            let cpu = order.get(i).copied();
            slots.push(Slot {
                index: i as u32,
                host_cpu: cpu,
                host_node: cpu.map(|c| topo.node_of(c)),
                guest_node: None,
            });
        }
    }
    let unpinned: Vec<usize> = slots
        .iter()
        .filter(|s| s.host_cpu.is_none())
        .map(|s| s.index as usize)
        .collect();
    if !unpinned.is_empty() {
        let cores = per_node.iter().map(|(_, l)| l.len()).sum::<usize>();
        let what = if smt {
            "logical CPUs"
        } else {
            "physical cores"
        };
        let hint = if !smt && topo.smt() {
            "; --smt pins them to SMT siblings, or use fewer vCPUs"
        } else {
            "; use fewer vCPUs"
        };
        warnings.push(format!(
            "{n} vCPUs but {cores} {what} the runner may use{}: vCPU(s) {} not pinned (they \
             float over CPUs {}){hint}",
            if nodes_host { " on their nodes" } else { "" },
            format_cpulist(&unpinned),
            format_cpulist(allowed)
        ));
    }
    let used: Vec<usize> = slots.iter().filter_map(|s| s.host_cpu).collect();
    let spare = topo
        .cpus
        .iter()
        .map(|c| c.cpu)
        .filter(|c| allowed.contains(c) && !used.contains(c))
        .collect();
    Placement {
        slots,
        spare,
        smt,
        guest_nodes,
        warnings,
    }
}

/// The host's topology, the CPUs the runner may use and the choice made on them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPlacement {
    /// The host.
    pub topo: Topology,
    /// The runner's affinity mask.
    pub allowed: Vec<usize>,
    /// The choice.
    pub placement: Placement,
    /// `--nodes host`.
    pub nodes_host: bool,
}

impl HostPlacement {
    /// Places `n` vCPUs or threads on this host.
    pub fn choose(n: usize, smt: bool, nodes_host: bool) -> Result<HostPlacement, String> {
        let topo = Topology::host()?;
        let allowed = crate::bench::threads::sys::allowed_cpus()
            .map_err(|e| format!("cannot read this process's CPU affinity: {e}"))?;
        Ok(HostPlacement::on(topo, allowed, n, smt, nodes_host))
    }

    /// Places `n` on `topo` within `allowed`.
    #[must_use]
    pub fn on(
        topo: Topology,
        allowed: Vec<usize>,
        n: usize,
        smt: bool,
        nodes_host: bool,
    ) -> HostPlacement {
        let placement = place(&topo, &allowed, n, smt, nodes_host);
        HostPlacement {
            topo,
            allowed,
            placement,
            nodes_host,
        }
    }

    /// `--nodes host`'s guest nodes, memory bound to their host nodes where the host has
    /// several.
    #[must_use]
    pub fn mirror(&self) -> NodeMirror {
        NodeMirror {
            nodes: self.placement.guest_nodes.clone(),
            bind: self.topo.nodes.len() > 1,
        }
    }

    /// What `--nodes host` made of this host, in words.
    #[must_use]
    pub fn mirror_line(&self) -> String {
        let g = &self.placement.guest_nodes;
        if self.topo.nodes.len() <= 1 {
            return format!(
                "the host has 1 NUMA node: the guest gets {} node, its memory not bound \
                 (nothing to mirror)",
                g.len()
            );
        }
        let nodes: Vec<String> = g
            .iter()
            .map(|n| {
                format!(
                    "guest node {} -> host node {} ({})",
                    n.guest,
                    n.host,
                    if n.memory {
                        "memory bound there"
                    } else {
                        "memoryless, as the host's"
                    }
                )
            })
            .collect();
        format!(
            "the host has {} NUMA nodes: {}",
            self.topo.nodes.len(),
            nodes.join(", ")
        )
    }

    /// The record before anything is applied.
    #[must_use]
    pub fn record(&self, mode: &str, accel: Option<Accel>) -> PlacementRecord {
        PlacementRecord::new(
            mode,
            accel,
            &self.topo,
            &self.allowed,
            &self.placement,
            self.nodes_host,
        )
    }
}

/// One pinned thread in results.json: its [`Slot`] and, for a QEMU vCPU, its thread id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedThread {
    /// Where it was placed (the JSON keeps the slot's fields at this level).
    #[serde(flatten)]
    pub slot: Slot,
    /// Its host thread id (QEMU's vCPU thread; `None` for host threads, made per run).
    pub tid: Option<i32>,
}

/// QEMU's threads other than the vCPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherThreads {
    /// Their thread ids when the pinning was done.
    pub tids: Vec<i32>,
    /// The CPUs they may run on (cpulist).
    pub allowed: String,
    /// Whether there were spare cores to keep them off the vCPUs' (false: they share them).
    pub spare_cores: bool,
}

/// `results.json`'s `placement`: the host, the accelerator and where each CPU ran.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementRecord {
    /// `qemu` or `host-threads`.
    pub mode: String,
    /// The accelerator (QEMU runs).
    pub accel: Option<Accel>,
    /// The host's topology.
    pub topology: TopologySummary,
    /// The CPUs the runner may use (cpulist).
    pub allowed: String,
    /// `--smt`.
    pub smt: bool,
    /// Whether two of the threads are pinned to SMT siblings of one physical core.
    #[serde(default)]
    pub siblings_used: bool,
    /// `--nodes host`: the guest nodes and the host nodes they mirror.
    pub nodes_host: Option<Vec<GuestNode>>,
    /// One per vCPU or engine CPU.
    pub threads: Vec<PinnedThread>,
    /// QEMU's other threads.
    pub other_threads: Option<OtherThreads>,
    /// What could not be done as asked (also printed).
    pub warnings: Vec<String>,
    /// Why nothing was pinned (QMP failed), when so.
    pub error: Option<String>,
    /// Milliseconds from QEMU's start until its vCPUs were pinned.
    pub pinned_after_ms: Option<u64>,
}

impl PlacementRecord {
    /// The record of a choice, before anything is applied (tids unknown).
    #[must_use]
    pub fn new(
        mode: &str,
        accel: Option<Accel>,
        topo: &Topology,
        allowed: &[usize],
        p: &Placement,
        nodes_host: bool,
    ) -> Self {
        PlacementRecord {
            mode: mode.into(),
            accel,
            topology: topo.summary(),
            allowed: format_cpulist(allowed),
            smt: p.smt,
            siblings_used: topo.cores().iter().any(|core| {
                p.slots
                    .iter()
                    .filter(|s| s.host_cpu.is_some_and(|c| core.contains(&c)))
                    .count()
                    > 1
            }),
            nodes_host: nodes_host.then(|| p.guest_nodes.clone()),
            threads: p
                .slots
                .iter()
                .map(|&slot| PinnedThread { slot, tid: None })
                .collect(),
            other_threads: None,
            warnings: p.warnings.clone(),
            error: None,
            pinned_after_ms: None,
        }
    }

    /// `index->host CPU` pairs (`0->0 1->1`; `-` for an unpinned one).
    #[must_use]
    pub fn mapping(&self) -> String {
        mapping(self.threads.iter().map(|t| (t.slot.index, t.slot.host_cpu)))
    }

    /// One line for the terminal: `pinning: vCPU->host CPU 0->0 (tid 123) 1->1 (tid 124);
    /// other threads on 0-1 (no spare cores)`.
    #[must_use]
    pub fn line(&self) -> String {
        let what = if self.mode == "qemu" {
            "vCPU->host CPU"
        } else {
            "thread->host CPU"
        };
        let pairs: Vec<String> = self
            .threads
            .iter()
            .map(|t| {
                let cpu = t.slot.host_cpu.map_or("-".to_owned(), |c| c.to_string());
                let node = match (self.mode.as_str(), t.slot.guest_node, t.slot.host_node) {
                    ("qemu", Some(g), Some(h)) => format!(" node {g}->{h}"),
                    ("qemu", _, _) => String::new(),
                    (_, _, Some(h)) if self.topology.nodes > 1 => format!(" node {h}"),
                    _ => String::new(),
                };
                match t.tid {
                    Some(tid) => format!("{}->{cpu} (tid {tid}{node})", t.slot.index),
                    None if node.is_empty() => format!("{}->{cpu}", t.slot.index),
                    None => format!("{}->{cpu} ({})", t.slot.index, node.trim()),
                }
            })
            .collect();
        let mut s = format!("{what} {}", pairs.join(" "));
        if self.smt {
            s.push_str(", SMT siblings allowed (--smt)");
        }
        if let Some(o) = &self.other_threads {
            s.push_str(&format!(
                "; QEMU's {} other thread(s) on CPUs {} ({})",
                o.tids.len(),
                o.allowed,
                if o.spare_cores {
                    "spare cores, off the vCPUs'"
                } else {
                    "no spare cores: they share the vCPUs' cores"
                }
            ));
        }
        if let Some(e) = &self.error {
            s = format!("not pinned: {e}");
        }
        s
    }
}

/// The thread ids of process `pid` (`/proc/PID/task`).
pub fn threads_of(proc_root: &Path, pid: u32) -> std::io::Result<Vec<i32>> {
    let mut tids: Vec<i32> = std::fs::read_dir(proc_root.join(format!("{pid}/task")))?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_string_lossy().parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

/// Pins QEMU (process `pid`, QMP socket `qmp`) as `p` says, recording it in `rec`: asks QMP
/// for the vCPU thread ids (waiting until `deadline` for the socket), pins each vCPU, then
/// moves QEMU's other threads to the spare CPUs when there are any. QMP failing leaves
/// everything unpinned and says why in `rec.error`; a thread that cannot be pinned is a
/// warning.
pub fn apply_to_qemu(
    pid: u32,
    qmp: &Path,
    p: &Placement,
    rec: &mut PlacementRecord,
    started: Instant,
    deadline: Instant,
) {
    let alive = || Path::new(&format!("/proc/{pid}")).exists();
    let cpus = match crate::qmp::Qmp::connect_while(qmp, deadline, &alive)
        .and_then(|mut q| q.vcpu_threads())
    {
        Ok(c) => c,
        Err(e) => {
            rec.error = Some(format!("QMP: {e}"));
            return;
        }
    };
    apply_with(pid, Path::new("/proc"), &cpus, p, rec, &mut |tid, set| {
        crate::bench::threads::sys::set_thread_affinity(tid, set)
    });
    rec.pinned_after_ms = Some(started.elapsed().as_millis() as u64);
}

/// [`apply_to_qemu`] after QMP: `vcpus` are (cpu-index, thread-id); `set_affinity` pins.
pub fn apply_with(
    pid: u32,
    proc_root: &Path,
    vcpus: &[(u32, i32)],
    p: &Placement,
    rec: &mut PlacementRecord,
    set_affinity: &mut dyn FnMut(i32, &[usize]) -> std::io::Result<()>,
) {
    let mut vcpu_tids = Vec::new();
    for &(index, tid) in vcpus {
        vcpu_tids.push(tid);
        let Some(t) = rec.threads.iter_mut().find(|t| t.slot.index == index) else {
            rec.warnings.push(format!(
                "QMP reports vCPU {index} (tid {tid}), which the placement does not know"
            ));
            continue;
        };
        t.tid = Some(tid);
        if let Some(cpu) = t.slot.host_cpu
            && let Err(e) = set_affinity(tid, &[cpu])
        {
            rec.warnings.push(format!(
                "cannot pin vCPU {index} (tid {tid}) to CPU {cpu}: {e}"
            ));
            t.slot.host_cpu = None;
        }
    }
    if vcpu_tids.len() > 1 && vcpu_tids.iter().all(|t| *t == vcpu_tids[0]) {
        rec.warnings.push(format!(
            "all vCPUs run on one QEMU thread (tid {}): single-threaded TCG, one host CPU \
             for the whole guest; the last pinning wins",
            vcpu_tids[0]
        ));
    }
    let others: Vec<i32> = threads_of(proc_root, pid)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| !vcpu_tids.contains(t))
        .collect();
    let spare = !p.spare.is_empty();
    let allowed = if spare {
        for &tid in &others {
            if let Err(e) = set_affinity(tid, &p.spare) {
                rec.warnings.push(format!(
                    "cannot move QEMU thread {tid} to CPUs {}: {e}",
                    format_cpulist(&p.spare)
                ));
            }
        }
        format_cpulist(&p.spare)
    } else {
        rec.allowed.clone()
    };
    rec.other_threads = Some(OtherThreads {
        tids: others,
        allowed,
        spare_cores: spare,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fake;

    fn topo(f: &fake::FakeSys) -> Topology {
        Topology::read(&f.root).unwrap()
    }

    fn all(t: &Topology) -> Vec<usize> {
        t.cpus.iter().map(|c| c.cpu).collect()
    }

    #[test]
    fn this_machine_two_vcpus_two_cores_no_spare() {
        let f = fake::two_cores();
        let t = topo(&f);
        let p = place(&t, &all(&t), 2, false, false);
        assert_eq!(p.cpus(), [0, 1]);
        assert!(p.spare.is_empty() && p.warnings.is_empty() && p.complete());
        let p = place(&t, &all(&t), 1, false, false);
        assert_eq!((p.cpus(), p.spare.clone()), (vec![0], vec![1]));
        // Three vCPUs: the third floats, and the warning says so.
        let p = place(&t, &all(&t), 3, false, false);
        assert_eq!(p.mapping(), "0->0 1->1 2->-");
        assert!(
            p.warnings[0].contains("3 vCPUs but 2 physical cores")
                && p.warnings[0].contains("vCPU(s) 2 not pinned")
                && p.warnings[0].ends_with("use fewer vCPUs"),
            "{:?}",
            p.warnings
        );
        // --nodes host on a 1-node host is one node.
        let p = place(&t, &all(&t), 2, false, true);
        assert_eq!(
            p.guest_nodes,
            [GuestNode {
                guest: 0,
                host: 0,
                memory: true
            }]
        );
        assert_eq!(p.cpus(), [0, 1]);
    }

    #[test]
    fn two_sockets_one_vcpu_per_core_unless_smt() {
        let f = fake::two_sockets();
        let t = topo(&f);
        let p = place(&t, &all(&t), 4, false, false);
        // Node 0's cores first, primary threads only.
        assert_eq!(p.cpus(), [0, 1, 2, 3]);
        let p = place(&t, &all(&t), 10, false, false);
        assert_eq!(p.cpus(), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert!(p.spare.contains(&16) && p.spare.contains(&10));
        let p = place(&t, &all(&t), 4, true, false);
        assert_eq!(p.cpus(), [0, 16, 1, 17], "siblings core by core");
        // 20 vCPUs, 16 physical cores: 4 unpinned, with the --smt hint.
        let p = place(&t, &all(&t), 20, false, false);
        assert_eq!(p.cpus().len(), 16);
        assert!(
            p.warnings[0].contains("--smt pins them"),
            "{:?}",
            p.warnings
        );
        assert!(place(&t, &all(&t), 32, true, false).complete());
        // The runner's mask restricts the choice.
        let p = place(&t, &[2, 3, 18], 3, false, false);
        assert_eq!(p.mapping(), "0->2 1->3 2->-");
        let p = place(&t, &[2, 3, 18], 3, true, false);
        assert_eq!(p.cpus(), [2, 18, 3]);
    }

    #[test]
    fn nodes_host_mirrors_the_two_nodes() {
        let f = fake::two_sockets();
        let t = topo(&f);
        let p = place(&t, &all(&t), 4, false, true);
        assert_eq!(p.guest_nodes.len(), 2);
        assert_eq!(p.guest_nodes[1].host, 1);
        // vCPU i on guest node i % 2, pinned to a core of that host node.
        assert_eq!(p.cpus(), [0, 8, 1, 9]);
        assert_eq!(
            p.slots.iter().map(|s| s.guest_node).collect::<Vec<_>>(),
            [Some(0), Some(1), Some(0), Some(1)]
        );
        assert_eq!(
            p.slots.iter().map(|s| s.host_node).collect::<Vec<_>>(),
            [Some(0), Some(1), Some(0), Some(1)]
        );
        // One vCPU: one node.
        let p = place(&t, &all(&t), 1, false, true);
        assert_eq!(p.guest_nodes.len(), 1);
        assert!(p.warnings[0].contains("mirrors the first 1"));
    }

    #[test]
    fn nodes_host_says_what_it_mirrored() {
        let f = fake::two_cores();
        let t = topo(&f);
        let h = HostPlacement::on(t.clone(), all(&t), 2, false, true);
        assert_eq!(
            h.mirror_line(),
            "the host has 1 NUMA node: the guest gets 1 node, its memory not bound (nothing \
             to mirror)"
        );
        assert!(!h.mirror().bind);
        let f = fake::memoryless();
        let t = topo(&f);
        let h = HostPlacement::on(t.clone(), all(&t), 2, false, true);
        assert!(h.mirror().bind);
        assert_eq!(
            h.mirror_line(),
            "the host has 2 NUMA nodes: guest node 0 -> host node 0 (memory bound there), \
             guest node 1 -> host node 1 (memoryless, as the host's)"
        );
        let r = h.record("host-threads", None);
        assert_eq!(r.line(), "thread->host CPU 0->0 (node 0) 1->2 (node 1)");
    }

    #[test]
    fn a_memoryless_host_node_is_a_memoryless_guest_node() {
        let f = fake::memoryless();
        let t = topo(&f);
        let p = place(&t, &all(&t), 4, false, true);
        assert_eq!(
            p.guest_nodes.iter().map(|g| g.memory).collect::<Vec<_>>(),
            [true, false]
        );
        assert_eq!(p.cpus(), [0, 2, 1, 3]);
        // Only the memoryless node allowed: its guest node must still get the memory.
        let p = place(&t, &[2, 3], 2, false, true);
        assert!(p.guest_nodes[0].memory && p.guest_nodes[0].host == 1);
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("no mirrored host node has memory"))
        );
    }

    #[test]
    fn applying_pins_vcpus_and_moves_the_other_threads_to_spare_cpus() {
        let f = fake::two_sockets();
        let t = topo(&f);
        let allowed = all(&t);
        // A recorded /proc/PID/task of QEMU: main loop 100, RCU 101, vCPUs 102, 103.
        let proc_root = f.root.join("proc");
        for tid in [100, 101, 102, 103] {
            std::fs::create_dir_all(proc_root.join(format!("100/task/{tid}"))).unwrap();
        }
        let p = place(&t, &allowed, 2, false, false);
        let mut rec = PlacementRecord::new("qemu", Some(Accel::Tcg), &t, &allowed, &p, false);
        let mut calls = Vec::new();
        apply_with(
            100,
            &proc_root,
            &[(0, 102), (1, 103)],
            &p,
            &mut rec,
            &mut |tid, set| {
                calls.push((tid, set.to_vec()));
                Ok(())
            },
        );
        assert_eq!(calls[0], (102, vec![0]));
        assert_eq!(calls[1], (103, vec![1]));
        assert_eq!(calls[2].0, 100);
        assert!(!calls[2].1.contains(&0) && calls[2].1.contains(&2));
        let o = rec.other_threads.clone().unwrap();
        assert_eq!(o.tids, [100, 101]);
        assert!(o.spare_cores);
        assert_eq!(o.allowed, "2-31");
        assert!(
            rec.line()
                .starts_with("vCPU->host CPU 0->0 (tid 102) 1->1 (tid 103)")
        );

        // This machine: no spare cores, nothing moved, and the record says so.
        let f2 = fake::two_cores();
        let t2 = topo(&f2);
        let p = place(&t2, &[0, 1], 2, false, false);
        let mut rec = PlacementRecord::new("qemu", Some(Accel::Tcg), &t2, &[0, 1], &p, false);
        let mut moved = 0;
        apply_with(
            100,
            &proc_root,
            &[(0, 102), (1, 103)],
            &p,
            &mut rec,
            &mut |_, set| {
                if set.len() > 1 {
                    moved += 1;
                }
                Ok(())
            },
        );
        assert_eq!(moved, 0);
        let o = rec.other_threads.clone().unwrap();
        assert!(!o.spare_cores && o.allowed == "0-1");
        assert!(
            rec.line()
                .contains("no spare cores: they share the vCPUs' cores")
        );

        // A thread that cannot be pinned is a warning and counts as unpinned.
        let mut rec = PlacementRecord::new("qemu", None, &t2, &[0, 1], &p, false);
        apply_with(
            100,
            &proc_root,
            &[(0, 102), (1, 103)],
            &p,
            &mut rec,
            &mut |tid, _| {
                if tid == 103 {
                    Err(std::io::Error::from_raw_os_error(libc::EPERM))
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(rec.threads[1].slot.host_cpu, None);
        assert!(rec.warnings[0].contains("cannot pin vCPU 1 (tid 103)"));
    }
}
