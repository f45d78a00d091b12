//! A soak of the fault path on host threads: faults and unmaps of anonymous memory, reads
//! and truncations of file-like and shmem-like objects, memory.reclaim, memory.max changes
//! and memcg create/offline, mixed on every thread; the invariants must hold at the end and
//! every frame come back. `VM_SOAK_OPS` sets the operations per thread (default 6000).

use crate::vm_common;

use mm::fault::FaultError;
use mm::filemap::ReadError;
use mm::mmap::MapRequest;
use mm::object::{Object, ObjectKind};
use mm::vma::VmAreaA;
use vm_common::*;

const CPUS: usize = 3;
const SLICE: u64 = 256;

#[test]
fn mixed_operations_keep_every_invariant() {
    let ops: u64 = std::env::var("VM_SOAK_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6000);
    let w = world(CPUS, 8192, |_| {});
    let free0 = w.free_frames();
    let root = w.vm.tree().root();
    let a = root.create_child().unwrap();
    a.set_max(0, 700).unwrap();
    let file = Object::new(ObjectKind::File, 1024);
    let shmem = Object::new(ObjectKind::Shmem, 64);
    let mut mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
    w.vm.mmap(
        &mm,
        &MapRequest {
            start: VA,
            len: SLICE * CPUS as u64 * 4096,
            write: true,
            object: None,
            node: 0,
        },
        &a,
    )
    .unwrap();
    let shm_va = VA + (64 << 20);
    w.vm.mmap(
        &mm,
        &MapRequest {
            start: shm_va,
            len: 64 * 4096,
            write: true,
            object: Some((&shmem, 0)),
            node: 0,
        },
        &a,
    )
    .unwrap();
    std::thread::scope(|s| {
        for cpu in 0..CPUS {
            let (w, mm, a, root, file, shmem) = (&w, &*mm, &a, &root, &file, &shmem);
            s.spawn(move || {
                ksync::cpu::set_this_thread_cpu(cpu);
                let mut x = 0x1234_5678_9abc_def0u64 ^ ((cpu as u64 + 1) * 0x9e37_79b9);
                let mut rnd = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                let base = VA + cpu as u64 * SLICE * 4096;
                for _ in 0..ops {
                    match rnd() % 100 {
                        0..=39 => {
                            let va = base + rnd() % SLICE * 4096;
                            match w.vm.touch(mm, cpu, va, true) {
                                Ok(()) | Err(FaultError::MemcgOom) => {}
                                Err(e) => panic!("anon fault: {e:?}"),
                            }
                        }
                        40..=47 => {
                            let off = rnd() % (SLICE / 64) * 64;
                            w.vm.zap_page_range(
                                mm,
                                cpu,
                                base + off * 4096,
                                base + (off + 64) * 4096,
                            );
                        }
                        48..=52 => {
                            let va = shm_va + rnd() % 64 * 4096;
                            match w.vm.touch(mm, cpu, va, true) {
                                Ok(()) | Err(FaultError::MemcgOom) => {}
                                Err(e) => panic!("shmem fault: {e:?}"),
                            }
                        }
                        53..=82 => {
                            let index = rnd() % file.nr_pages();
                            match w.vm.filemap_read(file, a, cpu, 0, index, true) {
                                Ok(_) | Err(ReadError::Fault(FaultError::MemcgOom)) => {}
                                Err(e) => panic!("read: {e:?}"),
                            }
                        }
                        83..=87 => {
                            let _ = a.memory_reclaim(cpu, memcg::ReclaimRequest::pages(32));
                        }
                        88..=90 => {
                            let _ = a.set_max(cpu, 400 + rnd() % 400);
                        }
                        91..=92 if cpu == 0 => {
                            // Truncate the shmem object's pages beyond what is mapped? All of
                            // it is mapped: truncation unmaps it from the region first.
                            w.vm.truncate(shmem, cpu);
                        }
                        93..=95 => {
                            // A short-lived memcg that reads a few pages, then goes offline
                            // (its pages and charges move to the root).
                            if let Ok(c) = root.create_child() {
                                for _ in 0..4 {
                                    let index = rnd() % file.nr_pages();
                                    let _ = w.vm.filemap_read(file, &c, cpu, 0, index, true);
                                }
                                let id = c.id();
                                drop(c);
                                let _ = w.vm.tree().offline(id, cpu);
                            }
                        }
                        _ => {}
                    }
                    // Between operations this CPU holds no RCU-protected reference.
                    let _ = w.rcu.quiescent_state(cpu);
                }
            });
        }
    });
    w.grace_period();
    w.vm.tree().reap(0);
    let census =
        w.vm.check(0, &[&*mm], &[&file, &shmem])
            .expect("invariants");
    assert!(census.lru_folios > 0);
    w.vm.destroy_mm(&mut mm, 0);
    w.vm.truncate(&file, 0);
    w.vm.truncate(&shmem, 0);
    w.grace_period();
    w.vm.tree().reap(0);
    let census =
        w.vm.check::<VmAreaA>(0, &[], &[&file, &shmem])
            .expect("invariants");
    assert_eq!((census.lru_folios, census.charged), (0, 0));
    assert_eq!(w.free_frames(), free0, "every frame came back");
}
