//! What the seeds' scenarios need from a platform beyond CPUs and a clock: the fault core
//! (`mm`) over the platform's memory, and address spaces whose loads and stores fault.
//!
//! The kernel provides contexts over its page allocator and RCU, and address spaces in its
//! address-space slot, where a store is a real store that traps into `handle_mm_fault`
//! ([`VmHost`] in `kernel/src/bench/vmhost.rs`). The host runner provides contexts over an
//! arena of host memory handed to the same buddy allocator, with the software MMU, where a
//! store is [`mm::context::Vm::touch`] and a write through the software PTE (a function
//! call, not a trap). The scenarios are written once against [`VmHost`] and [`Space`].
//!
//! [`Ctx`] is what every scenario instance holds: one context, its memcgs, its objects and
//! its address spaces, torn down in the one order that is safe (address spaces first, then
//! the objects' page caches, the memcgs, pending RCU callbacks, and the context last), and
//! checked by the fault core's invariant checker after every run.
//!
//! The context itself is not in the [`Ctx`]: it is kept in the engine's
//! [`Storage`] for the point, which outlives the instance, so the
//! borrowers a `Ctx` keeps (address spaces, memcg references) borrow it with the storage's
//! lifetime and the borrow checker sees that none outlives it. This module has no unsafe
//! code; its [`soft`] submodule has, and says why.

pub mod soft;

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use ksync::Ticket;
use lru::NodeId;
use memcg::{MemCgroupPerNode, MemcgRef, MemcgTree};
use mm::check::VmCensus;
use mm::context::{Vm, VmConfig};
use mm::counters::VmEvent;
use mm::fault::FaultError;
use mm::folios::VmFolios;
use mm::mm_struct::MmStruct;
use mm::mmap::MapRequest;
use mm::object::{Object, ObjectKind};
use mm::pgtable::Mmu;
use mm::vma::VmArea;

use crate::engine::Storage;

/// `mem_cgroup_per_node` layouts the scenarios instantiate (all on the ticket lock).
pub trait Pn: MemCgroupPerNode<Family = Ticket> + 'static {}
impl<T: MemCgroupPerNode<Family = Ticket> + 'static> Pn for T {}

/// How many of a context's memcgs [`Ctx::objects`] names (seed002 makes thousands).
pub const OBJECT_MEMCGS: usize = 8;

/// Seed 001's "before": the per-node info as Linux had it, grouped MGLRU folio.
pub type PnBase = memcg::MemCgroupPerNodeBase<Ticket, lru::LruGenFolioGrouped>;
/// Seed 001's patch 1: the read-mostly line paired with the cold group.
pub type PnPaired = memcg::MemCgroupPerNodePaired<Ticket, lru::LruGenFolioGrouped>;
/// Seed 000's "before": mainline's per-node info (the lruvec after the memcg-v1 fields, not
/// line-aligned) with the `lru_gen_folio` whose atomics sit among the hot fields.
pub type PnGenBase = memcg::MemCgroupPerNodeV1<Ticket, lru::LruGenFolioBase>;
/// Seed 000's patch: the same per-node info with the grouped `lru_gen_folio`.
pub type PnGenGrouped = memcg::MemCgroupPerNodeV1<Ticket, lru::LruGenFolioGrouped>;

/// An address space of a [`VmHost`], live for accesses.
pub trait Space<V: VmArea, M: Mmu>: Send + Sync {
    /// The fault core's address space.
    fn mm(&self) -> &MmStruct<V, M>;
    /// First address of its range.
    fn base(&self) -> u64;
    /// CPU `cpu` (the running one) is about to access it (`kthread_use_mm`).
    fn use_mm(&self, cpu: usize);
    /// Stores `value` at `va` (8-aligned) on the running CPU `cpu`, faulting the page in.
    fn write(&self, cpu: usize, va: u64, value: u64) -> Result<(), FaultError>;
    /// Stores each page's address to the first word of `pages` pages from `start` (page
    /// aligned), in order, on the running CPU `cpu`: a benchmark worker's loop of stores.
    /// One call per batch, so a worker pays one dynamic dispatch per batch rather than per
    /// page, as the `limit` floor's loop of stores does: the default body is compiled per
    /// implementor, so its calls of `write` are static. On failure, the address that
    /// failed and why.
    fn write_pages(&self, cpu: usize, start: u64, pages: u64) -> Result<(), (u64, FaultError)> {
        for p in 0..pages {
            let va = start + p * 4096;
            self.write(cpu, va, va).map_err(|e| (va, e))?;
        }
        Ok(())
    }
    /// Loads the word at `va` (8-aligned) on the running CPU `cpu`, faulting the page in.
    fn read(&self, cpu: usize, va: u64) -> Result<u64, FaultError>;
}

/// The fault core on a platform.
pub trait VmHost: Sync {
    /// The platform's side of the page tables.
    type Mmu: Mmu + 'static;

    /// CPUs a context serves (every CPU the benchmark may use).
    fn nr_cpus(&self) -> usize;

    /// Bytes the heap has left, where the platform's heap is bounded and an allocation
    /// failure would stop the machine (the kernel's); `None` where it grows on demand.
    /// Setup checks it before each memcg, so a configuration too large for the machine
    /// fails with a message instead of an allocation failure.
    fn heap_free(&self) -> Option<usize> {
        None
    }

    /// The NUMA node of CPU `cpu` (where its regions allocate first).
    fn node_of(&self, cpu: usize) -> u32 {
        let _ = cpu;
        0
    }

    /// A context with `cfg` (its `nr_cpus` is set to [`Self::nr_cpus`]).
    fn new_vm<P: Pn>(&self, cfg: VmConfig) -> Result<Box<Vm<P, Self::Mmu>>, String>;

    /// An address space of at least `size` bytes in `vm`.
    fn new_space<'v, P: Pn, V: VmArea + 'static>(
        &self,
        vm: &'v Vm<P, Self::Mmu>,
        size: u64,
    ) -> Result<Box<dyn Space<V, Self::Mmu> + 'v>, String>;

    /// With every CPU idle: waits for a grace period and runs every queued RCU callback
    /// (regions and region tables freed by unmaps, memcgs freed after offline). An error
    /// (a CPU still inside a read-side section: a leaked guard) instead of a wait forever.
    fn rcu_barrier(&self) -> Result<(), String>;
}

/// Heap a memcg may not eat into: what the rest of the setup, the runs and the output
/// still allocate (see [`VmHost::heap_free`]).
const HEAP_RESERVE: usize = 8 << 20;

/// One context with what a scenario instance built in it.
///
/// The context lives in the engine's [`Storage`] for `'a`; the borrowers (address spaces,
/// memcg references) borrow it for `'a`. [`Ctx::shutdown`] (run by `teardown` and by
/// `Drop`) releases them in the one safe order and checks that nothing is left; the
/// context's own structure goes with the storage.
pub struct Ctx<'a, H: VmHost, P: Pn, V: VmArea + 'static> {
    host: &'a H,
    spaces: Vec<Box<dyn Space<V, H::Mmu> + 'a>>,
    memcgs: Vec<MemcgRef<'a, P, VmFolios>>,
    /// Boxed: regions and page-cache folios point at their object, so it must not move
    /// when the vector grows.
    #[allow(clippy::vec_box)]
    objects: Vec<Box<Object>>,
    /// `None` once shut down.
    vm: Option<&'a Vm<P, H::Mmu>>,
}

impl<'a, H: VmHost, P: Pn, V: VmArea + 'static> Ctx<'a, H, P, V> {
    /// A context with `cfg` on `host`, kept in `storage`.
    pub fn new(host: &'a H, storage: &'a Storage, cfg: VmConfig) -> Result<Self, String> {
        let vm = storage.keep(host.new_vm::<P>(cfg)?);
        Ok(Ctx {
            host,
            spaces: Vec::new(),
            memcgs: Vec::new(),
            objects: Vec::new(),
            vm: Some(vm),
        })
    }

    /// The context.
    #[must_use]
    pub fn vm(&self) -> &'a Vm<P, H::Mmu> {
        self.vm.expect("present until shutdown")
    }

    /// The hierarchy, borrowed from the storage that keeps the context: it cannot outlive
    /// it.
    ///
    /// ```compile_fail,E0515
    /// use bench::engine::Storage;
    /// use bench::vm::{Ctx, Pn, VmHost};
    /// use memcg::MemcgTree;
    /// use mm::context::VmConfig;
    /// use mm::folios::VmFolios;
    /// use mm::vma::VmArea;
    ///
    /// fn keep<H: VmHost, P: Pn, V: VmArea>(host: &H) -> &'static MemcgTree<P, VmFolios> {
    ///     let storage = Storage::new();
    ///     let ctx = Ctx::<H, P, V>::new(host, &storage, VmConfig::new(1)).unwrap();
    ///     ctx.tree() // the storage is dropped here: the tree goes with it
    /// }
    /// ```
    #[must_use]
    pub fn tree(&self) -> &'a MemcgTree<P, VmFolios> {
        self.vm().tree()
    }

    /// A new memcg under `parent` (`None`: the root) with memory.max `max` pages (`None`:
    /// no limit); returns its index.
    pub fn add_memcg(&mut self, parent: Option<usize>, max: Option<u64>) -> Result<usize, String> {
        if let Some(free) = self.host.heap_free()
            && free < HEAP_RESERVE
        {
            return Err(format!(
                "the heap is nearly exhausted after {} memcgs ({} KiB left): boot with more \
                 memory (kx --mem) or ask for fewer memcgs",
                self.memcgs.len(),
                free / 1024
            ));
        }
        let tree = self.tree();
        let m = match parent {
            None => tree.root().create_child(),
            Some(i) => self.memcgs[i].create_child(),
        }
        .map_err(|e| format!("memcg: {e:?}"))?;
        if let Some(max) = max {
            m.set_max(0, max)
                .map_err(|e| format!("memory.max {max}: {e:?}"))?;
        }
        self.memcgs.push(m);
        Ok(self.memcgs.len() - 1)
    }

    /// Memcg `i`, borrowed from the context (a clone is a reference that cannot outlive it).
    #[must_use]
    pub fn memcg(&self, i: usize) -> &MemcgRef<'_, P, VmFolios> {
        &self.memcgs[i]
    }

    /// The memcg objects every operation of this context can share between CPUs, for the
    /// coherence report: the root's and the first [`OBJECT_MEMCGS`] memcgs' per-node info
    /// (`mem_cgroup_per_node` with its lruvec and `lru_gen_folio` expanded in place) and
    /// page counter, and each node's `pglist_data` (its `lru_lock` and memcg FIFO).
    #[must_use]
    pub fn objects(&self) -> Vec<crate::engine::ObjectDesc> {
        use crate::engine::ObjectDesc;
        let mut v = Vec::new();
        let pn_fields = memcg::pn::layout::pn_fields::<P>();
        let pc_fields = memcg::pn::layout::page_counter_fields();
        let root = self.tree().root();
        let mut memcgs: Vec<(String, &memcg::MemCgroup<P>)> = alloc::vec![("root".into(), &*root)];
        for (i, m) in self.memcgs.iter().take(OBJECT_MEMCGS).enumerate() {
            memcgs.push((format!("{i}"), m));
        }
        for (name, m) in &memcgs {
            for node in 0..m.nr_nodes() {
                let Ok(pn) = m.nodeinfo(node as NodeId) else {
                    continue;
                };
                v.push(ObjectDesc {
                    label: format!("mem_cgroup_per_node (memcg {name}, node {node})"),
                    addr: core::ptr::from_ref(pn) as usize,
                    size: core::mem::size_of::<P>(),
                    fields: pn_fields.clone(),
                });
            }
            v.push(ObjectDesc {
                label: format!("page_counter memory (memcg {name})"),
                addr: core::ptr::from_ref(m.memory()) as usize,
                size: core::mem::size_of::<memcg::PageCounter>(),
                fields: pc_fields.clone(),
            });
        }
        for node in 0..root.nr_nodes() {
            if let Ok(lv) = root.lruvec(node as NodeId) {
                let pgdat = lv.pgdat();
                v.push(ObjectDesc {
                    label: format!("pglist_data (node {node})"),
                    addr: core::ptr::from_ref(pgdat) as usize,
                    size: core::mem::size_of_val(pgdat),
                    fields: lru::pgdat::pgdat_fields::<P>().to_vec(),
                });
            }
        }
        v
    }

    /// How many memcgs were added.
    #[must_use]
    pub fn nr_memcgs(&self) -> usize {
        self.memcgs.len()
    }

    /// A new object of `pages` pages; returns its index.
    pub fn add_object(&mut self, kind: ObjectKind, pages: usize) -> usize {
        self.objects.push(Box::new(Object::new(kind, pages)));
        self.objects.len() - 1
    }

    /// Object `i`.
    #[must_use]
    pub fn object(&self, i: usize) -> &Object {
        &self.objects[i]
    }

    /// A new address space of at least `size` bytes; returns its index.
    pub fn add_space(&mut self, size: u64) -> Result<usize, String> {
        let s = self.host.new_space::<P, V>(self.vm(), size)?;
        self.spaces.push(s);
        Ok(self.spaces.len() - 1)
    }

    /// Address space `i`.
    #[must_use]
    pub fn space(&self, i: usize) -> &dyn Space<V, H::Mmu> {
        &*self.spaces[i]
    }

    /// Maps `pages` pages at `start` of space `space`, charged to memcg `memcg`: anonymous,
    /// or object `object` from its first page, allocating from `node` first.
    pub fn map(
        &self,
        space: usize,
        start: u64,
        pages: u64,
        object: Option<usize>,
        memcg: usize,
        node: NodeId,
    ) -> Result<(), String> {
        let obj: Option<&Object> = object.map(|i| &*self.objects[i]);
        let req = MapRequest {
            start,
            len: pages * 4096,
            write: true,
            object: obj.map(|o| (o, 0)),
            node,
        };
        self.vm()
            .mmap(self.spaces[space].mm(), &req, &self.memcgs[memcg])
            .map(|_| ())
            .map_err(|e| format!("mmap: {e:?}"))
    }

    /// The invariant checker over every address space and object, from CPU 0 with every
    /// CPU idle.
    pub fn check(&self) -> Result<VmCensus, String> {
        let mms: Vec<&MmStruct<V, H::Mmu>> = self.spaces.iter().map(|s| s.mm()).collect();
        let objs: Vec<&Object> = self.objects.iter().map(|o| &**o).collect();
        self.vm()
            .check(0, &mms, &objs)
            .map_err(|e| format!("invariant: {e}"))
    }

    /// Memcg `i`'s usage is within its memory.max (the invariant of a scenario that runs
    /// against a limit: reclaim keeps it there).
    pub fn check_within_max(&self, i: usize) -> Result<(), String> {
        let m = self.memcg(i);
        if m.usage() > m.memory().max() {
            return Err(format!(
                "usage {} above max {}",
                m.usage(),
                m.memory().max()
            ));
        }
        Ok(())
    }

    /// The fault core's event counts, by name, for the run records.
    #[must_use]
    pub fn counters(&self) -> Vec<(String, i64)> {
        let c = self.vm().counters();
        VmEvent::ALL
            .iter()
            .map(|&e| (String::from(e.name()), c.total(e) as i64))
            .collect()
    }

    /// Releases everything in order; afterwards the context is empty (its structure stays
    /// in the storage until the point ends). Fails when the invariant checker's last
    /// census finds anything still charged, cached or on an LRU, when a memcg other than
    /// the root is still in the tree (linked, offline or waiting to be freed), or when a
    /// grace period cannot complete.
    /// Safe to call twice.
    pub fn shutdown(&mut self) -> Result<(), String> {
        let Some(vm) = self.vm else {
            return Ok(());
        };
        // Address spaces: every region unmapped, page tables freed.
        self.spaces.clear();
        for o in &self.objects {
            vm.truncate(o, 0);
        }
        // Folios still in a CPU's batch hold their charge, and with it their memcg, until
        // the batch drains: drain every CPU's now, so offlined memcgs can be freed below.
        vm.lru_add_drain_all(0);
        self.host.rcu_barrier()?;
        let offline: Vec<_> = self.memcgs.iter().map(|m| m.id()).collect();
        self.memcgs.clear();
        for id in offline.into_iter().rev() {
            let _ = vm.tree().offline(id, 0);
        }
        // The first reap after a grace period unlinks the offlined memcgs and starts the
        // grace period after which the second frees them (and their per-node slab chunks):
        // the context stays in the storage until the point ends, but its memcgs do not.
        self.host.rcu_barrier()?;
        vm.tree().reap(0);
        self.host.rcu_barrier()?;
        vm.tree().reap(0);
        let objs: Vec<&Object> = self.objects.iter().map(|o| &**o).collect();
        let result = vm
            .check::<V>(0, &[], &objs)
            .map_err(|e| format!("invariant at teardown: {e}"))
            .and_then(|c| {
                if c.lru_folios != 0 || c.charged != 0 || c.cached_folios != 0 {
                    Err(format!("left behind at teardown: {c:?}"))
                } else {
                    Ok(())
                }
            })
            .and_then(|()| {
                let tree = vm.tree();
                let (linked, zombies, dying) =
                    (tree.nr_memcgs(), tree.nr_zombies(), tree.nr_dying());
                if (linked, zombies, dying) == (1, 0, 0) {
                    Ok(())
                } else {
                    Err(format!(
                        "memcgs left behind at teardown: {linked} linked (with the root), \
                         {zombies} offline, {dying} waiting for a grace period"
                    ))
                }
            });
        self.objects.clear();
        self.vm = None;
        result
    }
}

impl<H: VmHost, P: Pn, V: VmArea + 'static> Drop for Ctx<'_, H, P, V> {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
