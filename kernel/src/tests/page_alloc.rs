//! Page allocator tests on the real machine: the handover's figures, exhaustion from every
//! CPU at once, order 10 after fragmentation, node-local allocation with fallback, and the
//! memmap's placement.
//!
//! Each test starts by draining every per-CPU list and checking that the free count is the
//! handover's figure minus the frames the kernel has taken for itself since (page tables
//! and stacks, [`frame::late_frames`]): no frame was lost by an earlier test. They run their
//! work through `on_each_cpu`, so one boot at 1, 4 or 8 vCPUs, with or without `--nodes`,
//! checks that configuration. Allocated frames are held on intrusive lists threaded through
//! the folios themselves (no heap), and each is marked with an atomic flag on the way out
//! so that a frame handed out twice is caught.

use crate::arch::{numa, paging};
use crate::ensure;
use crate::ktest::TestResult;
use crate::mm::{frame, page_alloc};
use crate::percpu::{self, CpuSet, PerCpuShared, on_cpus, on_each_cpu};
use crate::sync::Barrier;
use ::page_alloc::{AllocError, Memmap, PageAlloc, PageStats};
use alloc::format;
use alloc::string::String;
use core::num::NonZeroU32;
use core::sync::atomic::{AtomicU64, Ordering};
use ktest::ktest;
use lru::FolioFlags;
use lru::NodeId;
use lru::list::{CheckedFolioList, checked_folio_list};

/// The flag that marks a frame as held by a test (nothing else sets it on a fresh frame).
const HELD: FolioFlags = FolioFlags::WORKINGSET;

fn pa() -> Result<&'static PageAlloc, String> {
    page_alloc::get().ok_or_else(|| "no page allocator".into())
}

/// Drains every list and checks that no frame went missing since the handover; returns
/// the free count.
fn settled(pa: &PageAlloc) -> Result<u64, String> {
    page_alloc::drain_all_pages();
    let boot = page_alloc::boot_figures().ok_or("no handover figures")?;
    let free = pa.nr_free_pages();
    let late = frame::late_frames();
    ensure!(
        free + late + pa.bad_pages() == boot.total_free(),
        "{free} free + {late} taken by the kernel + {} leaked != {} free after the handover",
        pa.bad_pages(),
        boot.total_free()
    );
    pa.check().map_err(|e| format!("inconsistent: {e}"))?;
    Ok(free)
}

/// Takes a frame into `list`, failing on a frame that is already held.
fn hold(list: &mut CheckedFolioList, f: &'static lru::Folio) -> Result<(), String> {
    if f.test_and_set(HELD) {
        return Err(format!("pfn {:#x} handed out twice", f.pfn()));
    }
    if f.refcount() != 1 {
        return Err(format!(
            "pfn {:#x} handed out with refcount {}",
            f.pfn(),
            f.refcount()
        ));
    }
    list.push_back(f);
    Ok(())
}

/// Frees every frame of `list` on `cpu`; returns how many, or the first error.
fn release(pa: &PageAlloc, cpu: usize, list: &mut CheckedFolioList) -> Result<u64, String> {
    let mut n = 0;
    while let Some(f) = list.pop_front() {
        f.clear(HELD);
        match pa.free_page(cpu, f) {
            Ok(true) => n += 1,
            Ok(false) => return Err(format!("pfn {:#x} still referenced", f.pfn())),
            Err(e) => return Err(format!("free: {e}")),
        }
    }
    Ok(n)
}

fn stats_total(pa: &PageAlloc) -> PageStats {
    pa.total_stats()
}

/// The handover left every present frame either managed or reserved, the reserved ones
/// include the kernel image and the first MiB, and the zones add up to the NUMA layout.
#[ktest]
fn pagealloc_handover_figures() -> TestResult {
    let pa = pa()?;
    let boot = page_alloc::boot_figures().ok_or("no handover figures")?;
    let numa = numa::info().ok_or("no NUMA layout")?;
    settled(pa)?;
    let present: u64 = pa.zones().map(|z| z.present_pages()).sum();
    let managed: u64 = pa.zones().map(|z| z.managed()).sum();
    let ram: u64 = numa.topology.nodes().iter().map(|n| n.pages()).sum();
    ensure!(
        present == ram,
        "zones hold {present} frames, the layout {ram}"
    );
    ensure!(
        managed == boot.handed_over,
        "{managed} managed, {} handed over",
        boot.handed_over
    );
    ensure!(
        managed > 0 && managed < present,
        "{managed} of {present} managed"
    );
    let (k0, k1) = paging::kernel_image();
    for pfn in [k0 / 4096, (k1 - 1) / 4096, 0, 0x9e] {
        let Some(f) = pa.pfn_to_folio(pfn) else {
            continue;
        };
        ensure!(
            Memmap::is_reserved(f),
            "pfn {pfn:#x} (image or low memory) is not reserved"
        );
    }
    // Every CPU's per-CPU node is the layout's.
    for cpu in 0..percpu::nr_cpu_ids() {
        let (a, b) = (percpu::cpu_to_node(cpu), numa.topology.cpu_to_node(cpu));
        ensure!(a == b, "cpu {cpu}: per-CPU node {a}, layout node {b}");
    }
    let seen: PerCpuShared<AtomicU64> = PerCpuShared::new(|_| AtomicU64::new(u64::MAX));
    on_each_cpu(&|cpu| {
        if let Some(s) = seen.get(cpu) {
            s.store(u64::from(percpu::numa_node_id()), Ordering::Relaxed);
        }
    })
    .map_err(|e| format!("on_each_cpu: {e}"))?;
    for cpu in 0..percpu::nr_cpu_ids() {
        let got = seen
            .get(cpu)
            .map_or(u64::MAX, |s| s.load(Ordering::Relaxed));
        let want = u64::from(numa.topology.cpu_to_node(cpu));
        ensure!(
            got == want,
            "cpu {cpu} says it is on node {got}, layout {want}"
        );
    }
    Ok(())
}

/// Every frame of RAM has its folio with the layout's node and its zone; every section's
/// array lies in RAM of the section's own node (or the fallback was counted), reserved.
#[ktest]
fn pagealloc_memmap_placement() -> TestResult {
    let pa = pa()?;
    let numa = numa::info().ok_or("no NUMA layout")?;
    let boot = page_alloc::boot_figures().ok_or("no handover figures")?;
    for &(node, r) in pa.memmap().present() {
        for pfn in [r.start, r.start + r.pages() / 2, r.end - 1] {
            let f = pa
                .pfn_to_folio(pfn)
                .ok_or(format!("no folio for pfn {pfn:#x}"))?;
            ensure!(
                f.pfn() == pfn,
                "pfn {pfn:#x} maps to folio of {:#x}",
                f.pfn()
            );
            ensure!(
                f.node() == node,
                "pfn {pfn:#x}: folio node {} != {node}",
                f.node()
            );
            ensure!(
                f.zone() == ::page_alloc::pfn::zone_for_pfn(pfn),
                "pfn {pfn:#x}: zone {:?}",
                f.zone()
            );
            ensure!(pa.folio_zone(f).is_some(), "pfn {pfn:#x}: no zone");
        }
    }
    let mut off_node = 0;
    for s in pa.memmap().sections() {
        let virt = s.map_addr() as u64;
        let phys = virt.checked_sub(paging::PHYS_OFFSET).ok_or(format!(
            "section {} array at {virt:#x} is not in the direct map",
            s.nr()
        ))?;
        let pfn = phys / 4096;
        let holder = numa.topology.pfn_to_node(pfn);
        ensure!(
            holder == Some(s.map_node()),
            "section {}: array in node {holder:?}, recorded {}",
            s.nr(),
            s.map_node()
        );
        let own = pa.pfn_to_folio(s.span().start).map(|f| f.node());
        if own != Some(s.map_node()) {
            off_node += 1;
        }
        let f = pa.pfn_to_folio(pfn).ok_or("array frame without a folio")?;
        ensure!(
            Memmap::is_reserved(f),
            "section {} array frame {pfn:#x} not reserved",
            s.nr()
        );
    }
    ensure!(
        off_node == boot.memmap_off_node,
        "{off_node} arrays off their node, {} counted",
        boot.memmap_off_node
    );
    Ok(())
}

/// Every CPU allocates order-0 frames until there are none; together they got exactly the
/// free count, nothing twice; then every order fails cleanly; everything freed and drained
/// gives the free count back.
#[ktest]
fn pagealloc_exhaust_every_cpu() -> TestResult {
    let pa = pa()?;
    let free0 = settled(pa)?;
    let before = stats_total(pa);
    let n = percpu::nr_cpu_ids();
    let b = Barrier::new(NonZeroU32::new(n as u32).unwrap_or(NonZeroU32::MIN));
    let got: PerCpuShared<AtomicU64> = PerCpuShared::new(|_| AtomicU64::new(0));
    let freed: PerCpuShared<AtomicU64> = PerCpuShared::new(|_| AtomicU64::new(0));
    let errors: spin::Mutex<Option<String>> = spin::Mutex::new(None);
    let fail = |e: String| {
        errors.lock().get_or_insert(e);
    };
    let left_at_exhaustion = AtomicU64::new(u64::MAX);
    on_each_cpu(&|cpu| {
        let node = percpu::cpu_to_node(cpu);
        let mut list = checked_folio_list();
        b.wait();
        let mut count = 0;
        while let Some(f) = pa.alloc_page(cpu, node) {
            if let Err(e) = hold(&mut list, f) {
                fail(e);
                break;
            }
            count += 1;
        }
        if let Some(g) = got.get(cpu) {
            g.store(count, Ordering::Relaxed);
        }
        b.wait();
        if cpu == 0 {
            left_at_exhaustion.store(pa.nr_free_pages(), Ordering::Relaxed);
            for order in [0, 1, 4, ::page_alloc::MAX_ORDER] {
                if pa.alloc_pages(cpu, node, order).is_some()
                    || pa.alloc_pages_buddy(cpu, node, order).is_some()
                {
                    fail(format!(
                        "an order-{order} allocation succeeded after exhaustion"
                    ));
                }
            }
            if pa.try_alloc_pages(cpu, node, 0).err() != Some(AllocError::NoMemory) {
                fail("exhaustion is not NoMemory".into());
            }
        }
        b.wait();
        match release(pa, cpu, &mut list) {
            Ok(k) => {
                if let Some(f) = freed.get(cpu) {
                    f.store(k, Ordering::Relaxed);
                }
            }
            Err(e) => fail(e),
        }
    })
    .map_err(|e| format!("on_each_cpu: {e}"))?;
    if let Some(e) = errors.lock().take() {
        return Err(e);
    }
    let total: u64 = got.iter().map(|g| g.load(Ordering::Relaxed)).sum();
    let back: u64 = freed.iter().map(|g| g.load(Ordering::Relaxed)).sum();
    let per_cpu: alloc::vec::Vec<u64> = got.iter().map(|g| g.load(Ordering::Relaxed)).collect();
    crate::println!("  {n} CPUs took {total} frames ({per_cpu:?}) of {free0} free");
    ensure!(
        total == free0,
        "the CPUs got {total} frames, {free0} were free"
    );
    ensure!(back == total, "{back} freed of {total}");
    let left = left_at_exhaustion.load(Ordering::Relaxed);
    ensure!(left == 0, "{left} frames free when every CPU had failed");
    let after = settled(pa)?;
    ensure!(
        after == free0,
        "{after} free after freeing everything, {free0} before"
    );
    let d = stats_total(pa).since(&before);
    ensure!(
        d.alloc == total,
        "{} order-0 allocations counted, {total} made",
        d.alloc
    );
    ensure!(
        d.free == total,
        "{} order-0 frees counted, {total} made",
        d.free
    );
    ensure!(
        d.alloc_fail >= n as u64,
        "{} failures counted",
        d.alloc_fail
    );
    ensure!(
        d.pcp_pages() == 0,
        "counters leave {} frames on lists",
        d.pcp_pages()
    );
    Ok(())
}

/// After every frame was taken and every other one given back, no order-1 block exists;
/// with the rest back, an order-10 block can be allocated again.
#[ktest]
fn pagealloc_order10_after_fragmentation() -> TestResult {
    let pa = pa()?;
    let free0 = settled(pa)?;
    let node = percpu::numa_node_id();
    let mut even = checked_folio_list();
    let mut odd = checked_folio_list();
    while let Some(f) = pa.alloc_page(0, node) {
        if f.pfn() % 2 == 0 {
            hold(&mut even, f)?;
        } else {
            hold(&mut odd, f)?;
        }
    }
    release(pa, 0, &mut odd)?;
    page_alloc::drain_all_pages();
    pa.check().map_err(|e| format!("fragmented: {e}"))?;
    let fragmented = pa.alloc_pages(0, node, 1);
    if let Some(f) = fragmented {
        let _ = pa.free_pages(0, f, 1);
        release(pa, 0, &mut even)?;
        return Err(format!(
            "an order-1 block at {:#x} with every even frame held",
            f.pfn()
        ));
    }
    let singles: u64 = pa
        .zones()
        .map(|z| pa.free_blocks(z).iter().filter(|&&(_, o)| o == 0).count() as u64)
        .sum();
    ensure!(
        singles == pa.nr_free_pages(),
        "{singles} order-0 blocks, {} free",
        pa.nr_free_pages()
    );
    release(pa, 0, &mut even)?;
    page_alloc::drain_all_pages();
    let big = pa
        .alloc_pages(0, node, ::page_alloc::MAX_ORDER)
        .ok_or("no order-10 block after freeing everything")?;
    ensure!(big.pfn() % 1024 == 0, "order-10 block at {:#x}", big.pfn());
    pa.free_pages(0, big, ::page_alloc::MAX_ORDER)
        .map_err(|e| format!("free order 10: {e}"))?;
    let after = settled(pa)?;
    ensure!(after == free0, "{after} free, {free0} before");
    Ok(())
}

/// Each CPU in turn takes every frame: zones come in its zonelist's order (its own node's
/// zones first, highest first, then the other nodes by distance), each zone emptied before
/// the next is touched, and every zone gives exactly what it had free.
#[ktest]
fn pagealloc_node_local_then_fallback() -> TestResult {
    let pa = pa()?;
    let free0 = settled(pa)?;
    for cpu in 0..percpu::nr_cpu_ids() {
        page_alloc::drain_all_pages();
        let node = percpu::cpu_to_node(cpu);
        let zonelist = pa
            .zonelist(node)
            .ok_or(format!("node {node} has no zonelist"))?;
        let expect: alloc::vec::Vec<u64> = zonelist
            .zones()
            .iter()
            .map(|z| pa.zone(z.node, z.kind).map_or(0, |z| z.nr_free()))
            .collect();
        let own_free = pa.nr_free_node(node);
        let result: spin::Mutex<Result<alloc::vec::Vec<u64>, String>> =
            spin::Mutex::new(Err("did not run".into()));
        let mut set = CpuSet::new();
        set.insert(cpu);
        on_cpus(&set, &|cpu| {
            *result.lock() = take_everything(pa, cpu, node, zonelist, own_free);
        })
        .map_err(|e| format!("on_cpus: {e}"))?;
        let per_zone = result.into_inner()?;
        ensure!(
            per_zone == expect,
            "cpu {cpu} (node {node}): frames per zonelist entry {per_zone:?}, free before {expect:?}"
        );
        crate::println!("  cpu {cpu} (node {node}): frames per zonelist entry {per_zone:?}");
    }
    let after = settled(pa)?;
    ensure!(after == free0, "{after} free, {free0} before");
    Ok(())
}

/// `cpu` allocates every frame from `node`'s zonelist, checking the order zones come in;
/// returns the frames per zonelist entry, after freeing them all again.
fn take_everything(
    pa: &PageAlloc,
    cpu: usize,
    node: NodeId,
    zonelist: &::page_alloc::zonelist::Zonelist,
    own_free: u64,
) -> Result<alloc::vec::Vec<u64>, String> {
    let mut list = checked_folio_list();
    let mut per_zone = alloc::vec![0u64; zonelist.zones().len()];
    let mut last = 0;
    let mut first_node = None;
    let mut bad = None;
    while let Some(f) = pa.alloc_page(cpu, node) {
        hold(&mut list, f)?;
        first_node.get_or_insert(f.node());
        let z = ::page_alloc::zonelist::ZoneRef {
            node: f.node(),
            kind: f.zone(),
        };
        let Some(at) = zonelist.position(z) else {
            bad = Some(format!(
                "pfn {:#x} from a zone not in the zonelist",
                f.pfn()
            ));
            break;
        };
        if at < last {
            bad = Some(format!(
                "cpu {cpu}: zonelist entry {at} after {last} (pfn {:#x})",
                f.pfn()
            ));
            break;
        }
        last = at;
        per_zone[at] += 1;
    }
    if bad.is_none() && own_free > 0 && first_node != Some(node) {
        bad = Some(format!(
            "cpu {cpu} on node {node} ({own_free} free there) got its first frame from node \
             {first_node:?}"
        ));
    }
    release(pa, cpu, &mut list)?;
    match bad {
        Some(e) => Err(e),
        None => Ok(per_zone),
    }
}

/// CPUs whose APIC IDs only an x2APIC affinity entry can name (above 255) land on the node
/// the SRAT gives them; a CPU the SRAT does not name goes round-robin. QEMU 7.2's TCG cannot
/// boot such a machine (no x2APIC), so the layout is built from a decoded SRAT here; the
/// decoding of the entries is hw's (`acpi::tests::x2apic_affinity_entries`).
#[ktest]
fn numa_srat_x2apic_ids() -> TestResult {
    use hw::acpi::{Srat, SratCpu, SratMemory};
    let cpu = |pxm, apic_id, x2apic| SratCpu {
        pxm,
        apic_id,
        x2apic,
    };
    let mem = |pxm, base, len| SratMemory {
        pxm,
        base,
        len,
        hotplug: false,
    };
    let srat = Srat {
        memory: alloc::vec![mem(7, 0, 64 << 20), mem(9, 64 << 20, 64 << 20)],
        cpus: alloc::vec![
            cpu(7, 0, false),
            cpu(9, 0x100, true),
            cpu(9, 0x1_0001, true)
        ],
        disabled: 0,
        other: 0,
    };
    let ram = [::page_alloc::numa::PfnRange::new(0, (128 << 20) >> 12)];
    let info = numa::from_srat(&ram, &[0, 0x100, 0x1_0001, 0x300], &srat, None)?;
    let t = &info.topology;
    let nodes: alloc::vec::Vec<NodeId> = (0..4).map(|c| t.cpu_to_node(c)).collect();
    ensure!(
        nodes == [0, 1, 1, 0],
        "CPUs 0-3 (APIC IDs 0, 0x100, 0x10001, unnamed 0x300) on nodes {nodes:?}"
    );
    ensure!(info.pxm == [7, 9], "proximity domains {:?}", info.pxm);
    Ok(())
}
