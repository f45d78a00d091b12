//! Shared setup of the fault-path host tests: an allocator over made-up frames backed by a
//! software MMU's arena, a QSBR RCU domain, and a `Vm`.
#![allow(dead_code)]

use ksync::Ticket;
use mm::context::{Vm, VmConfig};
use mm::soft_mmu::SoftMmu;
use page_alloc::{HeapStorage, NumaTopology, PageAlloc, PcpConfig, PfnRange};

/// `mem_cgroup_per_node` layout of the tests (patch 1), grouped `lru_gen_folio`.
pub type Pn = memcg::MemCgroupPerNodePaired<Ticket, lru::LruGenFolioGrouped>;
/// The tests' context.
pub type TestVm = Vm<Pn, SoftMmu>;

/// First frame of the made-up RAM (1 MiB).
pub const BASE_PFN: u64 = 0x100;
/// First address of the address spaces' range.
pub const VA: u64 = 0x10_0000_0000;
/// Size of each address space's range.
pub const VA_LEN: u64 = 1 << 30;

/// Everything a test needs; leaked (it is small, and frames outlive the test's scope).
pub struct World {
    pub pa: &'static PageAlloc,
    pub mmu: &'static SoftMmu,
    pub rcu: &'static ksync::Rcu<Ticket>,
    pub vm: Box<TestVm>,
}

/// `cpus` CPUs, `pages` frames on one node, the context configured by `tweak`.
pub fn world(cpus: usize, pages: u64, tweak: impl FnOnce(&mut VmConfig)) -> World {
    let numa =
        NumaTopology::round_robin(1, cpus, &[(0, PfnRange::new(BASE_PFN, BASE_PFN + pages))])
            .expect("one node");
    let pa: &'static PageAlloc = Box::leak(Box::new(
        PageAlloc::with_all_free(numa, &mut HeapStorage::new(), PcpConfig::default())
            .expect("allocator"),
    ));
    let mmu = SoftMmu::new(BASE_PFN, pages);
    let rcu: &'static ksync::Rcu<Ticket> = Box::leak(Box::new(ksync::Rcu::new(cpus)));
    for c in 0..cpus {
        rcu.online(c).unwrap();
    }
    let mut cfg = VmConfig::new(cpus);
    tweak(&mut cfg);
    let vm = Vm::new(pa, mmu, rcu, rcu, cfg).expect("vm");
    World { pa, mmu, rcu, vm }
}

impl World {
    /// A grace period while every CPU is quiet (the test thread stands in for all of them),
    /// then the callbacks it covers (region tables and regions freed by unmaps, memcgs).
    pub fn grace_period(&self) {
        for c in 0..self.rcu.nr_cpus() {
            self.rcu.offline(c).unwrap();
        }
        self.rcu.synchronize(None).unwrap();
        for c in 0..self.rcu.nr_cpus() {
            self.rcu.online(c).unwrap();
        }
        self.rcu.run_callbacks();
    }

    /// Free frames once every per-CPU list is drained.
    pub fn free_frames(&self) -> u64 {
        self.pa.drain_all();
        self.pa.nr_free_pages()
    }
}

/// `f` on a thread of its own, which must finish within 10 s: a retry loop that never
/// ends fails the test binary instead of hanging it. It exits the whole process, since
/// other tests of the binary that reach the same loop would keep it from ever finishing.
pub fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .unwrap_or_else(|_| {
            // Straight to stderr: the harness's capture of `eprintln!` dies with the exit.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "{what} did not finish within 10 s: a loop that never ends"
            );
            std::process::exit(101)
        })
}
