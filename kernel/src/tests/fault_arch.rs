//! Tests of the page-fault path's x86 side: the address-space slot and PTE encoding, touch
//! routines resolved by a region handler, failures through the exception-table fixups
//! (here), and TLB shootdowns ([`shootdown`]). Each test builds its own address space with
//! the [`harness`], so tests are independent and leave the slot as they found it. Tests that
//! need several CPUs run their work with `on_cpus`; with one CPU they check what one CPU can
//! show and say so.
//!
//! Unsafe code here, and why: the fault tests build page tables by hand and write through
//! aliases of the frames they map.
#![allow(unsafe_code)]

mod harness;
mod shootdown;

use alloc::format;
use core::sync::atomic::Ordering;

use crate::arch::aspace::{self, AspaceError, MM_SLOT_START};
use crate::arch::fault::{self, FaultError, RegionError};
use crate::arch::pte::{PMD_SIZE, Pte, PteError, PteProt, pte_index};
use crate::arch::touch::{self, TouchError};
use crate::arch::vmlayout::{DIRECT_MAP_SIZE, pfn_to_kaddr};
use crate::arch::{cpu, extable};
use crate::ensure;
use crate::ktest::TestResult;
use crate::mm::frame_pool::{PoolFrames, recycle, zeroed_frame};
use crate::mm::phys_to_virt;
use crate::percpu::{self, CpuSet};
use harness::{Ctx, Space, my_stats, on_fault, pte_slot};
use ktest::ktest;
use x86_64::PhysAddr;

#[ktest]
fn fault_slot_ranges_and_links() -> TestResult {
    ensure!(
        aspace::mm_range_alloc(0) == Err(AspaceError::BadSize(0)),
        "a 0-byte range was handed out"
    );
    let a = aspace::mm_range_alloc(1).map_err(|e| format!("{e}"))?;
    let b = aspace::mm_range_alloc(3 << 30).map_err(|e| format!("{e}"))?;
    ensure!(
        a.start() % (1 << 30) == 0 && a.end() - a.start() == 1 << 30,
        "range {a:?}"
    );
    ensure!(b.end() - b.start() == 3 << 30, "range {b:?}");
    ensure!(
        a.end() <= b.start() || b.end() <= a.start(),
        "{a:?} overlaps {b:?}"
    );
    let a_start = a.start();
    aspace::mm_range_free(a).map_err(|(_, e)| format!("{e}"))?;
    let c = aspace::mm_range_alloc(1 << 30).map_err(|e| format!("{e}"))?;
    ensure!(c.start() != a_start, "a freed range was reused at once");

    let v = b.start() + 5 * PMD_SIZE + 0x1234;
    let pt = zeroed_frame().ok_or("out of frames")?;
    let link = |addr: u64, t: PhysAddr| {
        // SAFETY: for every link below: `pt` is a zeroed frame owned by this test, unlinked
        // again before the test ends; nothing is mapped through it.
        unsafe { aspace::link_pte_table(addr, t, &mut PoolFrames) }
    };
    ensure!(
        link(MM_SLOT_START - 4096, pt) == Err(AspaceError::OutsideSlot(MM_SLOT_START - 4096)),
        "link outside the slot accepted"
    );
    ensure!(
        link(a_start, pt) == Err(AspaceError::NotAllocated(a_start)),
        "link in a freed range accepted"
    );
    ensure!(
        link(v, pt + 8u64) == Err(AspaceError::BadFrame(pt.as_u64() + 8)),
        "misaligned table accepted"
    );
    link(v, pt).map_err(|e| format!("link: {e}"))?;
    ensure!(
        aspace::pte_table(v) == Some(pt),
        "pte_table does not see the link"
    );
    ensure!(
        aspace::pte_table(v + PMD_SIZE).is_none(),
        "the next 2 MiB has a table"
    );
    let other = zeroed_frame().ok_or("out of frames")?;
    ensure!(
        link(v, other)
            == Err(AspaceError::AlreadyLinked {
                vaddr: v,
                pt: pt.as_u64()
            }),
        "a second table linked over the first"
    );
    recycle(other);
    let b = match aspace::mm_range_free(b) {
        Err((b, AspaceError::StillLinked(at))) if at == v & !(PMD_SIZE - 1) => b,
        other => return Err(format!("free with a linked table: {other:?}")),
    };
    let got = aspace::unlink_pte_table(v, &CpuSet::online()).map_err(|e| format!("{e}"))?;
    ensure!(got == Some(pt), "unlink returned {got:?}, linked {pt:?}");
    ensure!(
        aspace::unlink_pte_table(v, &CpuSet::online()) == Ok(None),
        "second unlink found a table"
    );
    recycle(pt);
    aspace::mm_range_free(b).map_err(|(_, e)| format!("free: {e}"))?;
    aspace::mm_range_free(c).map_err(|(_, e)| format!("free: {e}"))?;
    Ok(())
}

#[ktest]
fn fault_pte_encoding() -> TestResult {
    let f = PhysAddr::new(0x1234_5000);
    let rw = Pte::new(f, PteProt::read_write()).map_err(|e| format!("{e}"))?;
    ensure!(rw.present() && rw.writable(), "{rw:?}");
    ensure!(rw.frame() == f && rw.pfn() == 0x12345, "{rw:?}");
    ensure!(
        rw.no_execute() == cpu::nx_enabled(),
        "NX {rw:?} vs EFER.NXE"
    );
    ensure!(!rw.accessed() && !rw.dirty(), "{rw:?}");
    let ro = Pte::new(f, PteProt::read_only()).map_err(|e| format!("{e}"))?;
    ensure!(ro.present() && !ro.writable(), "{ro:?}");
    ensure!(
        rw.wrprotect() == ro && ro.mkwrite() == rw,
        "wrprotect/mkwrite"
    );
    let ad = Pte::from_raw(rw.raw() | (1 << 5) | (1 << 6));
    ensure!(ad.accessed() && ad.dirty(), "{ad:?}");
    ensure!(ad.mkold().mkclean() == rw, "mkold/mkclean");
    ensure!(Pte::NONE.is_none() && !Pte::NONE.present(), "NONE");
    ensure!(
        Pte::new(PhysAddr::new(0x1234_5008), PteProt::read_write())
            == Err(PteError::BadFrame(0x1234_5008)),
        "a misaligned frame made an entry"
    );
    ensure!(pte_index(MM_SLOT_START + 0x5000) == 5, "pte_index");
    // The fault path's unchecked forms agree with the checked ones for every frame a
    // memmap can describe, the direct map's last one included.
    for pfn in [0, 1, 0x12345, 0xf_ffff, (DIRECT_MAP_SIZE >> 12) - 1] {
        let frame = PhysAddr::new(pfn << 12);
        for prot in [PteProt::read_write(), PteProt::read_only()] {
            let checked = Pte::new(frame, prot).map_err(|e| format!("{e}"))?;
            ensure!(
                Pte::from_pfn(pfn, prot) == checked,
                "from_pfn({pfn:#x}) = {:?}, new = {checked:?}",
                Pte::from_pfn(pfn, prot)
            );
        }
        let kaddr = phys_to_virt(frame).as_mut_ptr::<u8>();
        ensure!(
            pfn_to_kaddr(pfn) == kaddr,
            "pfn_to_kaddr({pfn:#x}) = {:p}, phys_to_virt = {kaddr:p}",
            pfn_to_kaddr(pfn)
        );
    }
    Ok(())
}

#[ktest]
fn fault_touch_maps_fresh_frame() -> TestResult {
    let ctx = Ctx::new();
    let sp = Space::new(&ctx)?;
    let (text_start, text_end) = touch::text_range();
    let a = sp.start() + 0x3000 + 8;
    let value = 0xfeed_f00d_1234_5678;
    let before = my_stats();
    touch::touch_write_u64(a, value).map_err(|e| format!("write: {e}"))?;
    let s = my_stats();
    ensure!(
        s.faults == before.faults + 1 && s.resolved == before.resolved + 1,
        "write fault not counted once as resolved: {before:?} -> {s:?}"
    );
    let info = (*ctx.last.lock()).ok_or("the handler never ran")?;
    ensure!(info.addr == a, "CR2 {:#x}, touched {a:#x}", info.addr);
    ensure!(
        info.write && !info.protection && !info.instruction_fetch && !info.user,
        "decoded {info:?}"
    );
    ensure!(info.cpu == percpu::cpu_id(), "cpu {}", info.cpu);
    ensure!(
        info.region.start == sp.start() && info.region.data == &ctx as *const Ctx as usize,
        "region {:?}",
        info.region
    );
    ensure!(
        (text_start..text_end).contains(&info.rip) && extable::search(info.rip).is_some(),
        "rip {:#x} is not a touch instruction",
        info.rip
    );
    let got = touch::touch_read_u64(a).map_err(|e| format!("read: {e}"))?;
    ensure!(got == value, "read back {got:#x}, wrote {value:#x}");
    ensure!(my_stats() == s, "reading a mapped page faulted");
    let pte = Pte::from_raw(pte_slot(a)?.load(Ordering::Acquire));
    ensure!(pte.present() && pte.writable(), "{pte:?}");
    ensure!(
        pte.accessed() && pte.dirty(),
        "MMU did not set A/D: {pte:?}"
    );
    // SAFETY: the frame the handler mapped, read through the direct map while mapped.
    let direct = unsafe {
        phys_to_virt(pte.frame() + (a & 0xfff))
            .as_ptr::<u64>()
            .read_volatile()
    };
    ensure!(direct == value, "the direct map shows {direct:#x}");

    let b = sp.start() + PMD_SIZE + 0x7000;
    let sum = touch::touch_sum_page(b).map_err(|e| format!("sum: {e}"))?;
    let info = (*ctx.last.lock()).ok_or("no fault")?;
    ensure!(sum == 0, "fresh page sums to {sum:#x}");
    ensure!(
        info.addr == b && !info.write,
        "read fault decoded as {info:?}"
    );
    let c = sp.start() + 0x9000;
    touch::touch_fill_page(c, 3).map_err(|e| format!("fill: {e}"))?;
    let sum = touch::touch_sum_page(c).map_err(|e| format!("sum: {e}"))?;
    ensure!(sum == 3 * 512, "filled page sums to {sum}");
    ensure!(
        my_stats().resolved == before.resolved + 3,
        "expected 3 resolved faults"
    );
    sp.teardown(2)
}

#[ktest]
fn fault_error_resumes_at_fixup() -> TestResult {
    let (text_start, text_end) = touch::text_range();
    let table = extable::entries();
    ensure!(
        table.len() == touch::EXTABLE_ENTRIES,
        "{} exception-table entries",
        table.len()
    );
    for e in table {
        ensure!(
            (text_start..text_end).contains(&e.insn) && (text_start..text_end).contains(&e.fixup),
            "entry {e:?} outside the touch routines"
        );
    }
    ensure!(
        touch::touch_read_u64(MM_SLOT_START - 8) == Err(TouchError::BadAddress(MM_SLOT_START - 8)),
        "a touch outside the slot was not refused"
    );
    ensure!(
        touch::touch_write_u64(MM_SLOT_START + 4, 0)
            == Err(TouchError::BadAddress(MM_SLOT_START + 4)),
        "a misaligned touch was not refused"
    );
    ensure!(
        touch::touch_fill_page(MM_SLOT_START + 8, 0)
            == Err(TouchError::BadAddress(MM_SLOT_START + 8)),
        "an unaligned page touch was not refused"
    );

    let ctx = Ctx::new();
    let sp = Space::new(&ctx)?;
    region_errors(&sp)?;
    let p = sp.start() + 0x4000;
    let before = my_stats();
    type Touch = fn(u64) -> Result<u64, TouchError>;
    let routines: [(&str, Touch, FaultError); 4] = [
        ("read", touch::touch_read_u64, FaultError::MemcgOom),
        (
            "write",
            |a| touch::touch_write_u64(a, 1).map(|()| 0),
            FaultError::NoMemory,
        ),
        (
            "fill",
            |a| touch::touch_fill_page(a, 1).map(|()| 0),
            FaultError::Injected,
        ),
        ("sum", touch::touch_sum_page, FaultError::NoPage),
    ];
    for (name, f, e) in routines {
        ctx.fail(p, e);
        let addr = if name == "read" || name == "write" {
            p + 16
        } else {
            p
        };
        let got = f(addr);
        ensure!(
            got == Err(TouchError::Fault(e)),
            "{name}: {got:?}, the handler failed with {e:?}"
        );
    }
    let s = my_stats();
    ensure!(
        s.faults == before.faults + 4
            && s.fixups == before.fixups + 4
            && s.resolved == before.resolved,
        "4 failed faults counted as {before:?} -> {s:?}"
    );
    ensure!(
        aspace::pte_table(p).is_none(),
        "a failed fault mapped something"
    );
    // The kernel goes on: the same region still resolves other pages.
    touch::touch_write_u64(p + 0x1000, 7).map_err(|e| format!("after failures: {e}"))?;
    ensure!(
        touch::touch_read_u64(p + 0x1000) == Ok(7),
        "page after the failures"
    );
    ensure!(fault::region_at(p).is_some(), "region not registered");
    sp.teardown(1)?;
    // Unregistered: a touch at `p` would now be fatal (the `run=pagefault` path).
    ensure!(fault::region_at(p).is_none(), "region still registered");
    Ok(())
}

/// Registration errors are typed and change nothing.
fn region_errors(sp: &Space) -> TestResult {
    let s = sp.start();
    let r = fault::set_region_fault_handler(s + 4096..s + 8192, on_fault, 0);
    ensure!(
        r == Err(RegionError::Overlaps {
            start: s,
            end: sp.range.end()
        }),
        "overlap: {r:?}"
    );
    let r = fault::set_region_fault_handler(0x1000..0x2000, on_fault, 0);
    ensure!(r == Err(RegionError::OutsideSlot), "outside: {r:?}");
    let r = fault::set_region_fault_handler(s + 1..s + 4096, on_fault, 0);
    ensure!(
        matches!(r, Err(RegionError::BadRange { .. })),
        "unaligned: {r:?}"
    );
    Ok(())
}
