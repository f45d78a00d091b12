//! The table's notes on what the platform can show, written by the runner, which knows what
//! the kernel does not: the accelerator as decided, whether the vCPUs were pinned (one per
//! physical core or on SMT siblings), where QEMU's other threads ran, how many host nodes the
//! vCPUs spanned, and other processes' load on the host during the runs.
//!
//! The kernel prints its own platform note for TCG (`qemu-tcg: ...`, from its CPUID
//! hypervisor check); [`apply`] replaces it in place with the runner's, and adds one for KVM
//! (where the kernel prints none) and the host-load line. The kernel's table is untouched:
//! the runner's table, results.json and the HTML page carry these notes.

use crate::accel::Accel;
use crate::hostload::HostLoadRecord;
use crate::placement::PlacementRecord;

/// The prefixes of platform notes the runner replaces (the kernel's).
const REPLACED: [&str; 2] = ["qemu-tcg:", "qemu-kvm:"];

/// What the placement means for cache effects between vCPUs, one sentence.
fn placement_sentence(accel: Accel, rec: &PlacementRecord) -> String {
    if let Some(e) = &rec.error {
        return format!(
            "the vCPUs were not pinned ({e}): the host scheduler may move them and stack two \
             on one core, which blurs effects between cores and adds noise"
        );
    }
    let pinned = rec
        .threads
        .iter()
        .filter(|t| t.slot.host_cpu.is_some())
        .count();
    let mut s = if rec.threads.is_empty() {
        "no vCPU placement was recorded".to_owned()
    } else if pinned == 0 {
        "no vCPU could be pinned".to_owned()
    } else if rec.siblings_used {
        format!(
            "vCPUs pinned ({}), some on SMT siblings of one core (--smt): siblings share the \
             core's L1 and L2, so a line they share does not move between caches and sharing \
             effects between them shrink{}",
            rec.mapping(),
            if accel == Accel::Tcg {
                ""
            } else {
                "; they also share the core's execution units"
            }
        )
    } else {
        format!(
            "vCPUs pinned one per physical core ({}){}",
            rec.mapping(),
            if accel == Accel::Kvm {
                ": each has its own L1 and L2, so shared lines move between cores' caches as on \
                 a bare machine"
            } else {
                ""
            }
        )
    };
    if pinned > 0 && pinned < rec.threads.len() {
        s.push_str(&format!(
            "; {} vCPU(s) not pinned (more vCPUs than cores)",
            rec.threads.len() - pinned
        ));
    }
    if let Some(o) = &rec.other_threads {
        s.push_str(if o.spare_cores {
            "; QEMU's other threads kept on spare cores"
        } else {
            "; QEMU's other threads (main loop, I/O) share the vCPUs' cores (no spare core), \
             so their work takes vCPU time"
        });
    }
    let mut nodes: Vec<u32> = rec
        .threads
        .iter()
        .filter_map(|t| t.slot.host_node)
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    if rec.topology.nodes > 1 {
        match nodes.len() {
            0 => {}
            1 => s.push_str(&format!(
                "; all on host node {}: no traffic between nodes (a multi-node machine's \
                 node-wide effects do not show; --nodes host spreads them)",
                nodes[0]
            )),
            n => s.push_str(&format!(
                "; spread over {n} host nodes: lines cross between nodes as on the host"
            )),
        }
    }
    s
}

/// The runner's platform note for a QEMU run under `accel` placed as `rec`.
#[must_use]
pub fn platform_note(accel: Accel, rec: &PlacementRecord) -> String {
    let head = match accel {
        Accel::Tcg => {
            "qemu-tcg: timings are the emulator's (every vCPU a host thread running translated \
             code; atomics, fences and invlpg emulated): compare variants as ratios within this \
             boot, never absolute rates across runs; same-line sharing and lock contention \
             show, the 128-byte pair effect (the host prefetcher pairing lines two vCPUs \
             write) and few-percent effects are diluted by the emulator's own memory traffic \
             and do not"
        }
        Accel::Kvm => {
            "qemu-kvm: the vCPUs run natively on the host's cores (-cpu host): cache-line \
             effects between cores (same-line sharing, the 128-byte pair through the spatial \
             prefetcher, lock contention) can show, as ratios; absolute rates are a guest's \
             (VM exits, the host's timer) and compare only within a boot"
        }
    };
    format!("{head}; {}", placement_sentence(accel, rec))
}

/// Replaces the kernel's platform note in `notes` with the runner's (in its place, or at the
/// end where there is none), and adds the host-load lines.
pub fn apply(notes: &mut Vec<String>, accel: Accel, rec: &PlacementRecord, load: &HostLoadRecord) {
    let replaced = |n: &String| REPLACED.iter().any(|p| n.starts_with(p));
    let at = notes.iter().position(replaced);
    notes.retain(|n| !replaced(n));
    let at = at.unwrap_or(notes.len()).min(notes.len());
    notes.insert(at, platform_note(accel, rec));
    if let Some(b) = load.before.as_ref().filter(|b| b.busy) {
        notes.push(b.line());
    }
    notes.push(load.line());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hostload::{HostLoadRecord, RunLoad};
    use crate::placement::{HostPlacement, OtherThreads};
    use crate::topology::{Topology, fake};

    fn record(f: &fake::FakeSys, n: usize, smt: bool, nodes_host: bool) -> PlacementRecord {
        let t = Topology::read(&f.root).unwrap();
        let all = t.cpus.iter().map(|c| c.cpu).collect();
        HostPlacement::on(t, all, n, smt, nodes_host).record("qemu", Some(Accel::Kvm))
    }

    #[test]
    fn tcg_on_this_machine_says_pinned_and_no_spare_core() {
        let f = fake::two_cores();
        let mut rec = record(&f, 2, false, false);
        rec.other_threads = Some(OtherThreads {
            tids: vec![1],
            allowed: "0-1".into(),
            spare_cores: false,
        });
        let n = platform_note(Accel::Tcg, &rec);
        assert!(n.starts_with("qemu-tcg: timings are the emulator's"), "{n}");
        assert!(
            n.contains("vCPUs pinned one per physical core (0->0 1->1)"),
            "{n}"
        );
        assert!(n.contains("share the vCPUs' cores (no spare core)"), "{n}");
        assert!(
            !n.contains("host node"),
            "one node: nothing about nodes: {n}"
        );
    }

    #[test]
    fn kvm_notes_tell_cores_siblings_nodes_and_unpinned_apart() {
        let f = fake::two_sockets();
        let n = platform_note(Accel::Kvm, &record(&f, 4, false, false));
        assert!(n.starts_with("qemu-kvm: the vCPUs run natively"), "{n}");
        assert!(n.contains("each has its own L1 and L2"), "{n}");
        assert!(n.contains("all on host node 0"), "{n}");
        let n = platform_note(Accel::Kvm, &record(&f, 4, true, false));
        assert!(
            n.contains("some on SMT siblings of one core (--smt)"),
            "{n}"
        );
        assert!(!n.contains("each has its own L1"), "{n}");
        let n = platform_note(Accel::Kvm, &record(&f, 4, false, true));
        assert!(n.contains("spread over 2 host nodes"), "{n}");
        let n = platform_note(Accel::Kvm, &record(&f, 20, false, false));
        assert!(n.contains("4 vCPU(s) not pinned"), "{n}");
        let mut failed = record(&f, 2, false, false);
        failed.error = Some("QMP: QEMU did not answer within 15.0 s".into());
        let n = platform_note(Accel::Kvm, &failed);
        assert!(
            n.contains("the vCPUs were not pinned (QMP: QEMU did not answer"),
            "{n}"
        );
    }

    #[test]
    fn the_kernels_note_is_replaced_in_place_and_the_load_added() {
        let f = fake::two_cores();
        let rec = record(&f, 2, false, false);
        let mut notes = vec![
            "limit: one #PF per op".to_owned(),
            "qemu-tcg: timings are the emulator's; ... the 128-byte pair effect does not"
                .to_owned(),
            "other".to_owned(),
        ];
        let mut load = HostLoadRecord {
            threshold_cores: 0.1,
            ..HostLoadRecord::default()
        };
        load.runs.push(RunLoad {
            run: 0,
            scenario: "limit".into(),
            config: "anon".into(),
            variant: "floor".into(),
            cpus: 2,
            round: 1,
            order: 1,
            host_load: Some(0.4),
            interval_s: 0.1,
            flagged: true,
        });
        load.flagged = 1;
        load.max_cores = 0.4;
        apply(&mut notes, Accel::Tcg, &rec, &load);
        assert_eq!(notes.len(), 4, "{notes:?}");
        assert!(
            notes[1].contains("vCPUs pinned one per physical core"),
            "{notes:?}"
        );
        assert_eq!(notes[2], "other");
        assert!(
            notes[3].contains("1 of 1 measured runs above 0.1 core")
                && notes[3].contains("limit anon floor cpus=2 round=1 (0.40)"),
            "{}",
            notes[3]
        );
        // Under KVM the kernel prints no platform note: the runner's is added.
        let mut notes = vec!["limit: one #PF per op".to_owned()];
        apply(&mut notes, Accel::Kvm, &rec, &load);
        assert!(notes[1].starts_with("qemu-kvm:"));
    }
}
