//! The fault path on the real machine: loads and stores in an address space of the slot trap
//! into `handle_mm_fault`, on every CPU at once.
//!
//! - anonymous memory, 64 MiB per CPU in 4 MiB windows, filled and summed through the touch
//!   routines and zapped window by window: every page faults exactly once per window and
//!   every frame comes back;
//! - mmtests pft: every CPU faults its own slice of ONE region, in both `vm_area_struct`
//!   layouts, three rounds with a zap (and its shootdowns) between them;
//! - memory.max below a file's working set while CPUs read it and load from a mapping of
//!   part of it: usage never passes max, reclaim evicts through the reverse map, pages
//!   refault, and every page read or loaded has the backing store's contents;
//! - readtwice on the classic lists, a memcg full of anonymous pages failing the next
//!   touch through the exception table, fault injection (the command line's
//!   `fail_page_alloc=` / `fail_charge=`, or defaults), and a soak of everything mixed;
//! - page-cache lookups (faults through a mapping, buffered reads) racing with one CPU's
//!   truncations, meant for many vCPUs per host core and `race_delay=`.
//!
//! Each test ends with the invariant checker and the frame count: free frames plus the
//! slot's upper-level tables are what they were before it started.

use crate::arch::fault::{self as xfault, FaultError as XFault};
use crate::arch::mmu::{flush_failures, upper_table_frames};
use crate::arch::tlb;
use crate::arch::touch::{
    TouchError, touch_fill_page, touch_read_u64, touch_sum_page, touch_write_u64,
};
use crate::ensure;
use crate::ktest::TestResult;
use crate::mm::page_alloc;
use crate::percpu::{self, on_each_cpu};
use crate::vm::aspace::KernelMm;
use crate::vm::{self as kvm, KernelVm};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use ktest::ktest;
use lru::NodeId;
use mm::backing;
use mm::context::VmConfig;
use mm::counters::VmEvent;
use mm::fault::FaultError;
use mm::fault_inject::FaultSpec;
use mm::filemap::ReadError;
use mm::mmap::MapRequest;
use mm::object::{Object, ObjectKind};
use mm::vma::{VmArea, VmAreaA, VmAreaB};
use spin::Mutex;

/// The `mem_cgroup_per_node` layout of the tests: patch 1's pairs, grouped MGLRU.
type Pn = memcg::MemCgroupPerNodePaired<ksync::Ticket, lru::LruGenFolioGrouped>;
type TestVm = KernelVm<Pn>;

const PAGE: u64 = 4096;

fn new_vm(tweak: impl FnOnce(&mut VmConfig)) -> Result<Box<TestVm>, String> {
    kvm::new_vm::<Pn>(tweak).map_err(|e| format!("no context: {e:?}"))
}

fn new_mm<'v, V: VmArea>(vm: &'v TestVm, size: u64) -> Result<KernelMm<'v, Pn, V>, String> {
    KernelMm::new(vm, size).map_err(|e| format!("no address space: {e:?}"))
}

fn anon(start: u64, pages: u64, node: NodeId) -> MapRequest<'static> {
    MapRequest {
        start,
        len: pages * PAGE,
        write: true,
        object: None,
        node,
    }
}

/// An address space whose first `pages` pages are an anonymous region charged to `m`, each
/// page written by this CPU (which joins the address space) with `first` plus its index.
fn written_anon_mm<'v>(
    vm: &'v TestVm,
    m: &memcg::MemcgRef<'v, Pn, mm::folios::VmFolios>,
    pages: u64,
    first: u64,
) -> Result<KernelMm<'v, Pn, VmAreaA>, String> {
    let mm = new_mm::<VmAreaA>(vm, 1 << 30)?;
    let base = mm.base();
    vm.mmap(mm.mm(), &anon(base, pages, 0), m)
        .map_err(|e| format!("mmap: {e:?}"))?;
    mm.use_mm();
    for p in 0..pages {
        touch_write_u64(base + p * PAGE, first + p).map_err(|e| format!("{e:?}"))?;
    }
    Ok(mm)
}

/// Free frames (every per-CPU list drained, every RCU callback run) plus the slot's
/// upper-level tables: constant across a test that gives everything back.
fn frames() -> Result<u64, String> {
    crate::rcu::rcu_barrier().map_err(|e| format!("rcu_barrier: {e:?}"))?;
    page_alloc::drain_all_pages();
    let pa = page_alloc::get().ok_or("no page allocator")?;
    Ok(pa.nr_free_pages() + upper_table_frames())
}

/// Runs `f(cpu)` on every CPU; the first error any of them returned fails the test.
fn every_cpu(f: &(dyn Fn(usize) -> TestResult + Sync)) -> TestResult {
    let first: Mutex<Option<String>> = Mutex::new(None);
    on_each_cpu(&|cpu| {
        if let Err(e) = f(cpu) {
            first.lock().get_or_insert(format!("cpu {cpu}: {e}"));
        }
        crate::rcu::quiescent();
    })
    .map_err(|e| format!("on_each_cpu: {e:?}"))?;
    first.into_inner().map_or(Ok(()), Err)
}

fn resolved(cpu: usize) -> u64 {
    xfault::stats(cpu).resolved
}

/// A small xorshift stream per CPU.
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// The expected wrapping sum of page `index` of `obj`.
fn page_sum(obj: &Object, index: u64) -> u64 {
    (0..backing::PAGE_WORDS).fold(0u64, |a, w| {
        a.wrapping_add(backing::word(obj.id(), index, w))
    })
}

#[ktest]
fn vm_anon_windows_every_cpu() -> TestResult {
    const SIZE: u64 = 64 << 20;
    const WINDOW: u64 = 1024; // pages: 4 MiB
    const SALT: u64 = 0x5eed_0000_0000_0001;
    let vm = new_vm(|_| {})?;
    let root = vm.tree().root();
    let m = root.create_child().map_err(|e| format!("memcg: {e:?}"))?;
    let ncpu = percpu::nr_cpu_ids();
    let mut mms = Vec::new();
    for cpu in 0..ncpu {
        let mm = new_mm::<VmAreaA>(&vm, SIZE)?;
        let req = anon(mm.base(), SIZE / PAGE, percpu::cpu_to_node(cpu));
        vm.mmap(mm.mm(), &req, &m)
            .map_err(|e| format!("mmap: {e:?}"))?;
        mms.push(mm);
    }
    let before = frames()?;
    let faults0: Vec<u64> = (0..ncpu).map(resolved).collect();
    every_cpu(&|cpu| {
        let mm = &mms[cpu];
        mm.use_mm();
        for w in 0..SIZE / PAGE / WINDOW {
            let start = mm.base() + w * WINDOW * PAGE;
            for p in 0..WINDOW {
                let va = start + p * PAGE;
                touch_fill_page(va, va ^ SALT).map_err(|e| format!("fill {va:#x}: {e:?}"))?;
            }
            for p in 0..WINDOW {
                let va = start + p * PAGE;
                let sum = touch_sum_page(va).map_err(|e| format!("sum {va:#x}: {e:?}"))?;
                ensure!(
                    sum == (va ^ SALT).wrapping_mul(512),
                    "page {va:#x} lost its contents"
                );
            }
            vm.zap_page_range(mm.mm(), cpu, start, start + WINDOW * PAGE);
            ensure!(!vm.pte_present(mm.mm(), start), "zap left a PTE");
            crate::rcu::quiescent();
        }
        Ok(())
    })?;
    for (cpu, f0) in faults0.iter().enumerate() {
        let n = resolved(cpu) - f0;
        ensure!(
            n == SIZE / PAGE,
            "cpu {cpu} resolved {n} faults, not {}",
            SIZE / PAGE
        );
    }
    let total = vm.counters().total(VmEvent::Fault);
    ensure!(total == ncpu as u64 * SIZE / PAGE, "{total} faults counted");
    let refs: Vec<_> = mms.iter().map(KernelMm::mm).collect();
    let c = vm.check(0, &refs, &[]).map_err(|e| format!("{e:?}"))?;
    ensure!(
        (c.lru_folios, c.mapped_ptes, c.charged) == (0, 0, 0),
        "after the zaps: {c:?}"
    );
    ensure!(m.usage() == 0, "memcg still charged {} pages", m.usage());
    drop(refs);
    drop(mms);
    let after = frames()?;
    ensure!(
        after == before,
        "{before} frames before, {after} after: {} missing",
        before as i64 - after as i64
    );
    Ok(())
}

/// A CPU that only ever loaded a page another CPU mapped (a TLB fill, no fault) must still
/// be shot down when that page is unmapped: it joined the address space with `use_mm`.
#[ktest]
fn vm_shootdown_reaches_cpus_that_never_faulted() -> TestResult {
    const PAGES: u64 = 8;
    let vm = new_vm(|_| {})?;
    let root = vm.tree().root();
    let m = root.create_child().map_err(|e| format!("memcg: {e:?}"))?;
    let mm = written_anon_mm(&vm, &m, PAGES, 111)?;
    let base = mm.base();
    let me = percpu::cpu_id();
    let mmr = &mm;
    let expect = |first: u64| {
        move |cpu: usize| -> TestResult {
            if cpu == me {
                return Ok(());
            }
            mmr.use_mm();
            let faults = resolved(cpu);
            for p in 0..PAGES {
                let v = touch_read_u64(base + p * PAGE).map_err(|e| format!("{e:?}"))?;
                ensure!(v == first + p, "page {p} reads {v}, not {}", first + p);
            }
            ensure!(
                resolved(cpu) == faults,
                "the loads faulted: the PTEs were present"
            );
            Ok(())
        }
    };
    every_cpu(&expect(111))?;
    vm.zap_page_range(mm.mm(), me, base, base + PAGES * PAGE);
    for p in 0..PAGES {
        touch_write_u64(base + p * PAGE, 222 + p).map_err(|e| format!("{e:?}"))?;
    }
    // A CPU still holding the old translations would read 111.. from the freed frames.
    every_cpu(&expect(222))?;
    Ok(())
}

/// mmtests pft: every CPU faults its own slice of ONE region, three rounds.
fn pft<V: VmArea>() -> TestResult {
    const PER: u64 = 2048;
    let vm = new_vm(|_| {})?;
    let root = vm.tree().root();
    let m = root.create_child().map_err(|e| format!("memcg: {e:?}"))?;
    let ncpu = percpu::nr_cpu_ids();
    let before = frames()?;
    let mm = new_mm::<V>(&vm, 1 << 30)?;
    let base = mm.base();
    let len = PER * ncpu as u64;
    vm.mmap(mm.mm(), &anon(base, len, 0), &m)
        .map_err(|e| format!("mmap: {e:?}"))?;
    for round in 0..3 {
        let faults0: Vec<u64> = (0..ncpu).map(resolved).collect();
        every_cpu(&|cpu| {
            mm.use_mm();
            for p in 0..PER {
                let va = base + (cpu as u64 * PER + p) * PAGE;
                touch_write_u64(va, va).map_err(|e| format!("{va:#x}: {e:?}"))?;
            }
            Ok(())
        })?;
        for (cpu, f0) in faults0.iter().enumerate() {
            let n = resolved(cpu) - f0;
            ensure!(
                n == PER,
                "round {round}: cpu {cpu} resolved {n} faults, not {PER}"
            );
            ensure!(
                mm.mm().cpumask().contains(cpu),
                "cpu {cpu} is not in the cpumask"
            );
        }
        let c = vm.check(0, &[mm.mm()], &[]).map_err(|e| format!("{e:?}"))?;
        ensure!(
            (c.mapped_ptes, c.lru_folios, c.charged) == (len, len, len),
            "round {round}: {c:?}"
        );
        // Every page holds what its CPU stored.
        for p in 0..len {
            let va = base + p * PAGE;
            let v = touch_read_u64(va).map_err(|e| format!("{va:#x}: {e:?}"))?;
            ensure!(v == va, "{va:#x} holds {v:#x}");
        }
        let shoot0 = tlb::stats(0).shootdowns;
        vm.zap_page_range(mm.mm(), 0, base, base + len * PAGE);
        if ncpu > 1 {
            ensure!(
                tlb::stats(0).shootdowns > shoot0,
                "round {round}: the zap shot down no other CPU"
            );
        }
        let c = vm.check(0, &[mm.mm()], &[]).map_err(|e| format!("{e:?}"))?;
        ensure!(
            (c.mapped_ptes, c.lru_folios, c.charged) == (0, 0, 0),
            "round {round} after the zap: {c:?}"
        );
    }
    vm.munmap(mm.mm(), 0, base, len * PAGE)
        .map_err(|e| format!("munmap: {e:?}"))?;
    drop(mm);
    let after = frames()?;
    ensure!(after == before, "{before} frames before, {after} after");
    Ok(())
}

#[ktest]
fn vm_memory_max_file_pages() -> TestResult {
    const MAPPED: u64 = 64;
    const OPS: u64 = 3000;
    // Each CPU may hold up to a charge batch (64 pages) in its stock and a folio batch (15)
    // off the LRU, and reclaim isolates up to 32 at a time: a limit below what the CPUs
    // keep in flight can fail a charge outright (Linux would OOM-kill there). So the limit
    // grows with the CPUs, and the file is three times the limit.
    let ncpu = percpu::nr_cpu_ids() as u64;
    let max: u64 = 96 + 64 * ncpu;
    let pages: u64 = 3 * max;
    let vm = new_vm(|_| {})?;
    let root = vm.tree().root();
    let m = root.create_child().map_err(|e| format!("memcg: {e:?}"))?;
    m.set_max(0, max)
        .map_err(|e| format!("memory.max: {e:?}"))?;
    let obj = Object::new(ObjectKind::File, pages as usize);
    let before = frames()?;
    let mm = new_mm::<VmAreaA>(&vm, 1 << 30)?;
    let base = mm.base();
    let req = MapRequest {
        start: base,
        len: MAPPED * PAGE,
        write: false,
        object: Some((&obj, 0)),
        node: 0,
    };
    vm.mmap(mm.mm(), &req, &m)
        .map_err(|e| format!("mmap: {e:?}"))?;
    let over = AtomicU64::new(0);
    every_cpu(&|cpu| {
        mm.use_mm();
        let mut rnd = rng(0x9e37_79b9 ^ cpu as u64);
        let node = percpu::cpu_to_node(cpu);
        for i in 0..OPS {
            let index = rnd() % pages;
            if i % 5 == 0 && index < MAPPED {
                let va = base + index * PAGE;
                let sum = touch_sum_page(va).map_err(|e| format!("load {va:#x}: {e:?}"))?;
                ensure!(sum == page_sum(&obj, index), "mapped page {index} is wrong");
            } else {
                vm.filemap_read(&obj, &m, cpu, node, index, true)
                    .map_err(|e| format!("read {index}: {e:?}"))?;
            }
            if m.usage() > max {
                over.fetch_add(1, Ordering::Relaxed);
            }
            if i % 64 == 0 {
                crate::rcu::quiescent();
            }
        }
        Ok(())
    })?;
    let over = over.load(Ordering::Relaxed);
    ensure!(over == 0, "usage was above memory.max {over} times");
    let c = vm.counters();
    let (evicted, refaults, verified) = (
        c.total(VmEvent::Evicted),
        c.total(VmEvent::Refault),
        c.total(VmEvent::Verified),
    );
    ensure!(evicted > 100, "only {evicted} evictions");
    ensure!(refaults > 100, "only {refaults} refaults");
    ensure!(verified > 2000, "only {verified} pages checked");
    m.flush_stats();
    ensure!(
        m.memory_stat(lru::NodeStatItem::WorkingsetRefaultFile) > 0,
        "memory.stat shows no file refault"
    );
    let census = vm
        .check(0, &[mm.mm()], &[&obj])
        .map_err(|e| format!("{e:?}"))?;
    ensure!(census.charged <= max, "{} charged", census.charged);
    ensure!(census.shadows > 0, "no shadow entries");
    vm.munmap(mm.mm(), 0, base, MAPPED * PAGE)
        .map_err(|e| format!("munmap: {e:?}"))?;
    drop(mm);
    vm.truncate(&obj, 0);
    let census = vm
        .check::<VmAreaA>(0, &[], &[&obj])
        .map_err(|e| format!("{e:?}"))?;
    ensure!(
        (census.cached_folios, census.charged) == (0, 0),
        "after truncate: {census:?}"
    );
    let after = frames()?;
    ensure!(after == before, "{before} frames before, {after} after");
    Ok(())
}

#[ktest]
fn vm_readtwice_activates() -> TestResult {
    let vm = new_vm(|c| c.mglru = false)?;
    let root = vm.tree().root();
    let m = root.create_child().map_err(|e| format!("memcg: {e:?}"))?;
    let obj = Object::new(ObjectKind::File, 256);
    let cpu = percpu::cpu_id();
    for pass in 0..2 {
        for i in 0..256 {
            vm.filemap_read(&obj, &m, cpu, 0, i, pass == 1)
                .map_err(|e| format!("read {i}: {e:?}"))?;
        }
        vm.lru_add_drain_all(cpu);
        let lv = m.lruvec(0).map_err(|e| format!("lruvec: {e:?}"))?;
        let active = lv.lru_size(lru::LruList::ActiveFile);
        let want = if pass == 0 { 0 } else { 256 };
        ensure!(active == want, "pass {pass}: {active} active, not {want}");
    }
    vm.check::<VmAreaA>(cpu, &[], &[&obj])
        .map_err(|e| format!("{e:?}"))?;
    vm.truncate(&obj, cpu);
    Ok(())
}

/// Each CPU's folio batches and charge stock are its own (Linux's `local_lock`, no
/// atomic): the folios a CPU faults in wait in its batch and its charges come from its
/// stock, no CPU can name another's, and `lru_add_drain_all` and `drain_all_stock` on CPU 0
/// have every CPU drain its own.
#[ktest]
fn vm_folio_batches_are_cpu_local() -> TestResult {
    const PER: u64 = 4;
    let vm = new_vm(|_| {})?;
    let m = vm
        .tree()
        .root()
        .create_child()
        .map_err(|e| format!("memcg: {e:?}"))?;
    let mm = new_mm::<VmAreaA>(&vm, 1 << 30)?;
    let base = mm.base();
    let ncpu = percpu::nr_cpu_ids();
    vm.mmap(mm.mm(), &anon(base, PER * ncpu as u64, 0), &m)
        .map_err(|e| format!("mmap: {e:?}"))?;
    let batches = vm.batches();
    every_cpu(&|cpu| {
        mm.use_mm();
        for p in 0..PER {
            let va = base + (cpu as u64 * PER + p) * PAGE;
            touch_write_u64(va, p).map_err(|e| format!("{e:?}"))?;
        }
        let mine = batches.pending(cpu);
        ensure!(mine == Ok(PER as usize), "own batch: {mine:?}");
        let stocked = vm.tree().stocks().stocked(cpu, &m);
        ensure!(
            stocked == Ok(memcg::MEMCG_CHARGE_BATCH - PER),
            "own stock: {stocked:?}"
        );
        let other = (cpu + 1) % ncpu;
        if other != cpu {
            let refused = lru::LruError::NotThisCpu { owner: other, cpu };
            let r = batches.pending(other);
            ensure!(
                r == Err(refused),
                "cpu {other}'s batch from cpu {cpu}: {r:?}"
            );
            let r = vm.tree().stocks().stocked(other, &m);
            ensure!(
                r == Err(memcg::MemcgError::NotThisCpu { owner: other, cpu }),
                "cpu {other}'s stock from cpu {cpu}: {r:?}"
            );
        }
        Ok(())
    })?;
    vm.lru_add_drain_all(percpu::cpu_id());
    let drained = vm.tree().stocks().drain_all(|_| true);
    ensure!(drained == ncpu, "{drained} stocks drained");
    every_cpu(&|cpu| {
        let r = batches.pending(cpu);
        ensure!(r == Ok(0), "after lru_add_drain_all: {r:?}");
        let r = vm.tree().stocks().stocked(cpu, &m);
        ensure!(r == Ok(0), "after drain_all_stock: {r:?}");
        Ok(())
    })?;
    let c = vm.check(0, &[mm.mm()], &[]).map_err(|e| format!("{e:?}"))?;
    let n = PER * ncpu as u64;
    ensure!((c.lru_folios, c.charged) == (n, n), "{c:?}");
    Ok(())
}

#[ktest]
fn vm_memcg_full_fails_touch() -> TestResult {
    let vm = new_vm(|_| {})?;
    let root = vm.tree().root();
    let m = root.create_child().map_err(|e| format!("memcg: {e:?}"))?;
    m.set_max(0, 40).map_err(|e| format!("memory.max: {e:?}"))?;
    let mm = new_mm::<VmAreaB>(&vm, 1 << 30)?;
    let base = mm.base();
    vm.mmap(mm.mm(), &anon(base, 64, 0), &m)
        .map_err(|e| format!("mmap: {e:?}"))?;
    mm.use_mm();
    for p in 0..40 {
        touch_write_u64(base + p * PAGE, p).map_err(|e| format!("page {p}: {e:?}"))?;
    }
    let cpu = percpu::cpu_id();
    let free = frames()?;
    let fixups = xfault::stats(cpu).fixups;
    let va = base + 40 * PAGE;
    let r = touch_write_u64(va, 1);
    ensure!(
        r == Err(TouchError::Fault(XFault::MemcgOom)),
        "the 41st page: {r:?}"
    );
    ensure!(
        xfault::stats(cpu).fixups == fixups + 1,
        "not resumed at the fixup"
    );
    ensure!(!vm.pte_present(mm.mm(), va), "a PTE after a failed fault");
    let n = vm.counters().total(VmEvent::FaultFailMemcg);
    ensure!(n == 1, "{n} memcg failures counted");
    ensure!(frames()? == free, "the failed fault kept a frame");
    let c = vm.check(0, &[mm.mm()], &[]).map_err(|e| format!("{e:?}"))?;
    ensure!((c.lru_folios, c.charged) == (40, 40), "{c:?}");
    for p in 0..40 {
        let v = touch_read_u64(base + p * PAGE).map_err(|e| format!("{e:?}"))?;
        ensure!(v == p, "page {p} holds {v}");
    }
    Ok(())
}

#[ktest]
fn vm_fault_injection() -> TestResult {
    const PER: u64 = 500;
    let (cmd_pa, cmd_ch) = kvm::cmdline_faults();
    let defaults = cmd_pa.is_none() && cmd_ch.is_none();
    let spec_pa = cmd_pa.unwrap_or(if defaults {
        FaultSpec::Every(7)
    } else {
        FaultSpec::Off
    });
    let spec_ch = cmd_ch.unwrap_or(if defaults {
        FaultSpec::Probability {
            percent: 10.0,
            seed: 3,
        }
    } else {
        FaultSpec::Off
    });
    crate::println!("  fail_page_alloc {spec_pa:?}, fail_charge {spec_ch:?}");
    let before = frames()?;
    let vm = new_vm(|c| {
        c.fail_page_alloc = spec_pa;
        c.fail_charge = spec_ch;
    })?;
    let root = vm.tree().root();
    let m = root.create_child().map_err(|e| format!("memcg: {e:?}"))?;
    let ncpu = percpu::nr_cpu_ids();
    let mm = new_mm::<VmAreaA>(&vm, 1 << 30)?;
    let base = mm.base();
    vm.mmap(mm.mm(), &anon(base, PER * ncpu as u64, 0), &m)
        .map_err(|e| format!("mmap: {e:?}"))?;
    let failed = AtomicU64::new(0);
    every_cpu(&|cpu| {
        mm.use_mm();
        for p in 0..PER {
            let va = base + (cpu as u64 * PER + p) * PAGE;
            match touch_write_u64(va, va) {
                Ok(()) => {}
                Err(TouchError::Fault(XFault::Injected)) => {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => return Err(format!("{va:#x}: {e:?}")),
            }
        }
        Ok(())
    })?;
    let failed = failed.load(Ordering::Relaxed);
    let (pa, ch) = vm.fault_attrs();
    crate::println!(
        "  {failed} of {} touches failed: {} frame allocations, {} charges",
        PER * ncpu as u64,
        pa.injected(),
        ch.injected()
    );
    if defaults {
        ensure!(
            pa.injected() > 50 && ch.injected() > 20,
            "{} and {} injected",
            pa.injected(),
            ch.injected()
        );
    }
    ensure!(
        failed == pa.injected() + ch.injected(),
        "{failed} failed touches, {} injected failures",
        pa.injected() + ch.injected()
    );
    let counted = vm.counters().total(VmEvent::FaultFailInjected);
    ensure!(counted == failed, "{counted} counted");
    let c = vm.check(0, &[mm.mm()], &[]).map_err(|e| format!("{e:?}"))?;
    let want = PER * ncpu as u64 - failed;
    ensure!(
        c.mapped_ptes == want,
        "{} mapped, not {want}",
        c.mapped_ptes
    );
    drop(mm);
    drop(m);
    drop(root);
    drop(vm);
    let after = frames()?;
    ensure!(after == before, "{before} frames before, {after} after");
    Ok(())
}

/// Turns the kernel MMU's flush-failure injection off when dropped (however the test ends).
struct InjectFlushFailures;

impl InjectFlushFailures {
    fn every(n: u64) -> Self {
        flush_failures().set_every(n);
        InjectFlushFailures
    }
}

impl Drop for InjectFlushFailures {
    fn drop(&mut self) {
        flush_failures().set_every(0);
    }
}

/// A TLB flush that fails (injected into the kernel MMU) frees nothing it covered: the pages
/// a zap cleared (when other CPUs use the address space, so the zap shoots down) and the
/// page table exit_mmap unlinks are kept, retries that fail keep them, and the first flush
/// that succeeds lets them all go, so every frame comes back.
#[ktest]
fn vm_failed_flush_keeps_frames() -> TestResult {
    const PAGES: u64 = 16;
    let before = frames()?;
    let vm = new_vm(|_| {})?;
    let root = vm.tree().root();
    let m = root.create_child().map_err(|e| format!("memcg: {e:?}"))?;
    let mm = written_anon_mm(&vm, &m, PAGES, 0)?;
    let base = mm.base();
    let me = percpu::cpu_id();
    every_cpu(&|_| {
        mm.use_mm();
        Ok(())
    })?;
    let pages = if percpu::nr_cpu_ids() > 1 { PAGES } else { 0 };
    let inject = InjectFlushFailures::every(1);
    vm.zap_page_range(mm.mm(), me, base, base + PAGES * PAGE);
    let k = vm.tlb_kept();
    ensure!(
        k.kept == pages && k.now as u64 == pages && k.released == 0,
        "after a zap whose shootdown failed: {k:?}, not {pages} pages kept"
    );
    ensure!(
        vm.counters().total(VmEvent::Released) == PAGES - pages,
        "a page was released after its shootdown failed"
    );
    // exit_mmap: the one PTE table's unlink fails, and so does the retry.
    drop(mm);
    let k = vm.tlb_kept();
    ensure!(
        k.now as u64 == pages + 1 && k.released == 0,
        "after exit_mmap with failing flushes: {k:?}, not {} kept",
        pages + 1
    );
    drop(inject);
    vm.release_kept(me);
    let k = vm.tlb_kept();
    ensure!(
        k.now == 0 && k.released == k.kept && k.leaked == 0,
        "after a flush that succeeded: {k:?}"
    );
    ensure!(
        vm.counters().total(VmEvent::Released) == PAGES,
        "{} pages released, not {PAGES}",
        vm.counters().total(VmEvent::Released)
    );
    drop(m);
    drop(root);
    drop(vm);
    let after = frames()?;
    ensure!(after == before, "{before} frames before, {after} after");
    Ok(())
}

/// Teardown once the address spaces are gone: truncates `objects`, waits for RCU, reaps
/// the zombie memcgs, and checks that no folio is left on an LRU and no page charged.
fn empty_objects(vm: &TestVm, objects: &[&Object]) -> TestResult {
    for obj in objects {
        vm.truncate(obj, 0);
    }
    crate::rcu::rcu_barrier().map_err(|e| format!("rcu_barrier: {e:?}"))?;
    vm.tree().reap(0);
    let census = vm
        .check::<VmAreaA>(0, &[], objects)
        .map_err(|e| format!("{e:?}"))?;
    ensure!(
        (census.lru_folios, census.charged) == (0, 0),
        "after teardown: {census:?}"
    );
    Ok(())
}

/// Page-cache lookups racing with truncation, on every CPU: CPU 0 truncates a small shmem
/// object and a small file over and over while the others fault the shmem pages back in
/// through a mapping and read the file's pages. A lookup that pinned a folio the
/// truncation then removed drops the last reference when the truncation's put came first,
/// and must release the folio (the 12-vCPU soak once found one left on its LRU with no
/// reference). Meant to be run with many vCPUs per host core and `race_delay=`, which
/// widen the window between a lookup's pin and its re-check; it passes without them too.
fn truncate_races_lookups(truncations: u64) -> TestResult {
    const PAGES: u64 = 8;
    let before = frames()?;
    let vm = new_vm(|_| {})?;
    let root = vm.tree().root();
    let a = root.create_child().map_err(|e| format!("memcg: {e:?}"))?;
    let file = Object::new(ObjectKind::File, PAGES as usize);
    let shmem = Object::new(ObjectKind::Shmem, PAGES as usize);
    let mm = new_mm::<VmAreaA>(&vm, 1 << 30)?;
    let shm_va = mm.base();
    let req = MapRequest {
        start: shm_va,
        len: PAGES * PAGE,
        write: true,
        object: Some((&shmem, 0)),
        node: 0,
    };
    vm.mmap(mm.mm(), &req, &a)
        .map_err(|e| format!("mmap: {e:?}"))?;
    let ncpu = percpu::nr_cpu_ids();
    // CPU 0 truncates `truncations` times; the others fault and read until it is done.
    let done = AtomicU64::new(0);
    let reads = AtomicU64::new(0);
    let started = AtomicU64::new(0);
    every_cpu(&|cpu| {
        mm.use_mm();
        if cpu == 0 || ncpu == 1 {
            // Truncate only once every reader is running (CPUs enter at different times;
            // a truncating CPU that finished before the others began would race nobody).
            let mut spins = 0u64;
            while started.load(Ordering::Acquire) < ncpu as u64 - 1 {
                spins += 1;
                if spins > 1 << 32 {
                    return Err("the readers never started".into());
                }
                core::hint::spin_loop();
            }
            for i in 0..truncations {
                vm.truncate(if i % 2 == 0 { &shmem } else { &file }, cpu);
                crate::rcu::quiescent();
            }
            done.store(1, Ordering::Release);
            if ncpu > 1 {
                return Ok(());
            }
        }
        let mut rnd = rng(0x0072_756e_6361_7465 ^ ((cpu as u64 + 1) * 0x9e37_79b9));
        let node = percpu::cpu_to_node(cpu);
        // At most `limit` each: with many vCPUs per host core the truncating CPU runs
        // slowly (each truncation waits for every CPU to take its shootdown), and the
        // readers need not outlast it.
        let limit = truncations * 200;
        let mut n = 0;
        while n == 0 || (done.load(Ordering::Acquire) == 0 && n < limit) {
            n += 1;
            if rnd().is_multiple_of(2) {
                let va = shm_va + rnd() % PAGES * PAGE;
                touch_write_u64(va, va).map_err(|e| format!("shmem fault: {e:?}"))?;
            } else {
                let index = rnd() % PAGES;
                vm.filemap_read(&file, &a, cpu, node, index, true)
                    .map_err(|e| format!("read {index}: {e:?}"))?;
            }
            if n == 1 {
                started.fetch_add(1, Ordering::Release);
            }
            crate::rcu::quiescent();
        }
        reads.fetch_add(n, Ordering::Relaxed);
        Ok(())
    })?;
    crate::rcu::rcu_barrier().map_err(|e| format!("rcu_barrier: {e:?}"))?;
    vm.check(0, &[mm.mm()], &[&file, &shmem])
        .map_err(|e| format!("{e:?}"))?;
    crate::println!(
        "  {truncations} truncations, {} faults and reads, {} faults, {} cache hits, {} faults \
         raced a truncation, race windows stalled {} times",
        reads.load(Ordering::Relaxed),
        vm.counters().total(VmEvent::Fault),
        vm.counters().total(VmEvent::CacheHit),
        vm.counters().total(VmEvent::FaultRaced),
        ksync::race::stalls()
    );
    drop(mm);
    empty_objects(&vm, &[&file, &shmem])?;
    drop(a);
    drop(root);
    drop(vm);
    let after = frames()?;
    ensure!(after == before, "{before} frames before, {after} after");
    Ok(())
}

/// Faults and zaps of anonymous memory, shmem faults and truncation, file reads,
/// memory.reclaim, memory.max changes and short-lived memcgs, mixed on every CPU.
fn soak(ops: u64) -> TestResult {
    const SLICE: u64 = 256;
    let ncpu = percpu::nr_cpu_ids();
    let before = frames()?;
    let vm = new_vm(|_| {})?;
    let root = vm.tree().root();
    let a = root.create_child().map_err(|e| format!("memcg: {e:?}"))?;
    a.set_max(0, 700)
        .map_err(|e| format!("memory.max: {e:?}"))?;
    let file = Object::new(ObjectKind::File, 1024);
    let shmem = Object::new(ObjectKind::Shmem, 64);
    let mm = new_mm::<VmAreaA>(&vm, 1 << 30)?;
    let base = mm.base();
    vm.mmap(mm.mm(), &anon(base, SLICE * ncpu as u64, 0), &a)
        .map_err(|e| format!("mmap: {e:?}"))?;
    let shm_va = base + (256 << 20);
    let req = MapRequest {
        start: shm_va,
        len: 64 * PAGE,
        write: true,
        object: Some((&shmem, 0)),
        node: 0,
    };
    vm.mmap(mm.mm(), &req, &a)
        .map_err(|e| format!("mmap: {e:?}"))?;
    let tolerable = |r: Result<(), TouchError>, what: &str| match r {
        Ok(()) | Err(TouchError::Fault(XFault::MemcgOom)) => Ok(()),
        Err(e) => Err(format!("{what}: {e:?}")),
    };
    every_cpu(&|cpu| {
        mm.use_mm();
        let mut rnd = rng(0x1234_5678_9abc_def0 ^ ((cpu as u64 + 1) * 0x9e37_79b9));
        let slice = base + cpu as u64 * SLICE * PAGE;
        let node = percpu::cpu_to_node(cpu);
        for _ in 0..ops {
            match rnd() % 100 {
                0..=39 => {
                    let va = slice + rnd() % SLICE * PAGE;
                    tolerable(touch_write_u64(va, va), "anonymous fault")?;
                }
                40..=47 => {
                    let off = rnd() % (SLICE / 64) * 64;
                    let start = slice + off * PAGE;
                    vm.zap_page_range(mm.mm(), cpu, start, start + 64 * PAGE);
                }
                48..=52 => {
                    let va = shm_va + rnd() % 64 * PAGE;
                    tolerable(touch_write_u64(va, va), "shmem fault")?;
                }
                53..=82 => {
                    let index = rnd() % file.nr_pages();
                    match vm.filemap_read(&file, &a, cpu, node, index, true) {
                        Ok(_) | Err(ReadError::Fault(FaultError::MemcgOom)) => {}
                        Err(e) => return Err(format!("read {index}: {e:?}")),
                    }
                }
                83..=87 => {
                    let _ = a.memory_reclaim(cpu, memcg::ReclaimRequest::pages(32));
                }
                88..=90 => {
                    let _ = a.set_max(cpu, 400 + rnd() % 400);
                }
                91..=92 if cpu == 0 => {
                    vm.truncate(&shmem, cpu);
                }
                93..=95 => {
                    if let Ok(c) = root.create_child() {
                        for _ in 0..4 {
                            let index = rnd() % file.nr_pages();
                            let _ = vm.filemap_read(&file, &c, cpu, node, index, true);
                        }
                        let id = c.id();
                        drop(c);
                        let _ = vm.tree().offline(id, cpu);
                        // Free the zombies nothing pins any more, as Linux's css release
                        // work does in the background (those still charged for cached
                        // file pages stay, as Linux's zombie memcgs do).
                        let _ = vm.tree().reap(cpu);
                    }
                }
                _ => {}
            }
            // Between operations this CPU holds no RCU-protected reference.
            crate::rcu::quiescent();
        }
        Ok(())
    })?;
    crate::rcu::rcu_barrier().map_err(|e| format!("rcu_barrier: {e:?}"))?;
    vm.tree().reap(0);
    let census = vm
        .check(0, &[mm.mm()], &[&file, &shmem])
        .map_err(|e| format!("{e:?}"))?;
    ensure!(census.lru_folios > 0, "nothing on the LRU: {census:?}");
    crate::println!(
        "  {} ops per CPU: {} faults, {} evictions, {} refaults",
        ops,
        vm.counters().total(VmEvent::Fault),
        vm.counters().total(VmEvent::Evicted),
        vm.counters().total(VmEvent::Refault)
    );
    if ksync::race::delay() != 0 {
        crate::println!(
            "  race windows stalled {} times, {} faults raced a truncation",
            ksync::race::stalls(),
            vm.counters().total(VmEvent::FaultRaced)
        );
    }
    drop(mm);
    empty_objects(&vm, &[&file, &shmem])?;
    drop(a);
    drop(root);
    drop(vm);
    let after = frames()?;

    ensure!(after == before, "{before} frames before, {after} after");
    Ok(())
}

#[ktest]
fn vm_pft_layout_a() -> TestResult {
    pft::<VmAreaA>()
}

#[ktest]
fn vm_pft_layout_b() -> TestResult {
    pft::<VmAreaB>()
}

#[ktest]
fn vm_soak() -> TestResult {
    soak(1500)
}

#[ktest]
fn vm_truncate_races_lookups() -> TestResult {
    truncate_races_lookups(200)
}

/// Run only when named (`test=vm_soak_long`): the soak at 500 times the length (3 million
/// operations at 4 CPUs).
#[ktest(slow)]
fn vm_soak_long() -> TestResult {
    soak(750_000)
}
