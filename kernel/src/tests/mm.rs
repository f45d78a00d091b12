//! Memory-management tests: frames, page-table permissions, direct map, guard pages, heap.
//!
//! Unsafe code here, and why: the memory tests read and write through raw (volatile)
//! pointers to check mappings and aliases.
#![allow(unsafe_code)]

use crate::arch::{cpu, paging};
use crate::ensure;
use crate::ktest::TestResult;
use crate::mm::{frame, heap, phys_to_virt, stack};
use alloc::boxed::Box;
use alloc::vec::Vec;
use ktest::ktest;
use x86_64::structures::paging::PageTableFlags as F;
use x86_64::{PhysAddr, VirtAddr};

/// Every CPU allocates small blocks (through its magazine) and frees the blocks the
/// previous CPU allocated (into its own): every block keeps its contents while two CPUs use
/// their magazines at once, blocks move between magazines, and when all are freed the
/// heap's use is back where it was.
#[ktest]
fn mm_heap_small_blocks_across_cpus() -> TestResult {
    use crate::percpu::{self, on_each_cpu};
    use crate::sync::Barrier;
    use core::num::NonZeroU32;
    const PER_CPU: usize = 4_000;
    let n = percpu::nr_cpu_ids();
    let (used0, _) = heap::usage();
    let made: alloc::vec::Vec<spin::Mutex<alloc::vec::Vec<Box<[u64; 5]>>>> = (0..n)
        .map(|_| spin::Mutex::new(alloc::vec::Vec::new()))
        .collect();
    let bad = core::sync::atomic::AtomicUsize::new(0);
    let b = Barrier::new(NonZeroU32::new(n as u32).unwrap_or(NonZeroU32::MIN));
    on_each_cpu(&|cpu| {
        let mine: alloc::vec::Vec<Box<[u64; 5]>> = (0..PER_CPU)
            .map(|i| Box::new([(cpu * PER_CPU + i) as u64; 5]))
            .collect();
        *made[cpu].lock() = mine;
        b.wait();
        // Free the previous CPU's blocks here, checking them, while allocating more.
        let theirs = core::mem::take(&mut *made[(cpu + n - 1) % n].lock());
        let from = (cpu + n - 1) % n;
        for (i, blk) in theirs.into_iter().enumerate() {
            let extra = Box::new([i as u64; 3]);
            if blk.iter().any(|&x| x != (from * PER_CPU + i) as u64) || extra[2] != i as u64 {
                bad.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            }
        }
    })
    .map_err(|e| alloc::format!("on_each_cpu: {e}"))?;
    let bad = bad.load(core::sync::atomic::Ordering::Relaxed);
    ensure!(
        bad == 0,
        "{bad} blocks corrupted while CPUs used their magazines"
    );
    drop(made);
    let (used1, _) = heap::usage();
    ensure!(
        used1 == used0,
        "heap use {used0} -> {used1} bytes after every block was freed"
    );
    Ok(())
}

#[ktest]
fn mm_frames_distinct() -> TestResult {
    let (k0, k1) = paging::kernel_image();
    let mut got: Vec<u64> = Vec::new();
    for i in 0..64u64 {
        let f = frame::alloc().ok_or("out of frames")?;
        let a = f.start_address().as_u64();
        ensure!(a >= 0x10_0000, "frame {a:#x} below 1 MiB");
        ensure!(
            a + 4096 <= k0 || a >= k1,
            "frame {a:#x} inside the kernel image"
        );
        ensure!(!got.contains(&a), "frame {a:#x} handed out twice");
        let v = phys_to_virt(PhysAddr::new(a)).as_mut_ptr::<u64>();
        // SAFETY: a fresh frame, owned by this test, reached through the direct map.
        unsafe { v.write_volatile(0x5a5a_0000 + i) };
        got.push(a);
    }
    for (i, &a) in got.iter().enumerate() {
        // SAFETY: as above; the frames are still owned by this test.
        let x = unsafe {
            phys_to_virt(PhysAddr::new(a))
                .as_ptr::<u64>()
                .read_volatile()
        };
        ensure!(
            x == 0x5a5a_0000 + i as u64,
            "frame {a:#x} lost its value (aliasing?)"
        );
    }
    Ok(())
}

#[ktest]
fn mm_image_permissions() -> TestResult {
    let text = mm_image_permissions as *const () as u64;
    static RODATA: [u8; 8] = *b"readonly";
    static mut DATA: u64 = 0;
    let ro = core::ptr::addr_of!(RODATA) as u64;
    let rw = core::ptr::addr_of!(DATA) as u64;
    let nx = cpu::nx_enabled();
    let flags = |a: u64| {
        paging::translate(VirtAddr::new(a))
            .map(|(_, f)| f)
            .ok_or("unmapped")
    };
    let t = flags(text)?;
    ensure!(!t.contains(F::WRITABLE), "text is writable: {t:?}");
    ensure!(!t.contains(F::NO_EXECUTE), "text is not executable: {t:?}");
    let r = flags(ro)?;
    ensure!(!r.contains(F::WRITABLE), "rodata is writable: {r:?}");
    ensure!(
        !nx || r.contains(F::NO_EXECUTE),
        "rodata is executable: {r:?}"
    );
    let d = flags(rw)?;
    ensure!(d.contains(F::WRITABLE), "data is read-only: {d:?}");
    ensure!(
        !nx || d.contains(F::NO_EXECUTE),
        "data is executable: {d:?}"
    );
    ensure!(nx, "EFER.NXE is off: no W^X protection");
    Ok(())
}

#[ktest]
fn mm_null_page_unmapped() -> TestResult {
    for a in [0u64, 0x1000, 0xb8000, crate::crash::UNMAPPED] {
        ensure!(
            paging::translate(VirtAddr::new(a)).is_none(),
            "{a:#x} is mapped"
        );
    }
    Ok(())
}

#[ktest]
fn mm_direct_map_aliases_image() -> TestResult {
    static PROBE: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
    PROBE.store(0x1234_5678_9abc_def0, core::sync::atomic::Ordering::SeqCst);
    let virt = VirtAddr::from_ptr(&PROBE);
    let (phys, _) = paging::translate(virt).ok_or("probe unmapped")?;
    ensure!(
        phys.as_u64() == virt.as_u64(),
        "image not mapped at its physical address"
    );
    let alias = phys_to_virt(phys).as_ptr::<u64>();
    // SAFETY: the direct-map alias of an atomic; a volatile read of an aligned u64.
    let seen = unsafe { alias.read_volatile() };
    ensure!(seen == 0x1234_5678_9abc_def0, "direct map shows {seen:#x}");
    let (_, f) = paging::translate(phys_to_virt(phys)).ok_or("alias unmapped")?;
    ensure!(f.contains(F::WRITABLE), "direct map is read-only");
    Ok(())
}

#[ktest]
fn mm_stack_guard_unmapped() -> TestResult {
    let s = crate::main_stack().ok_or("no main stack recorded")?;
    let here = VirtAddr::from_ptr(&s);
    ensure!(
        here >= s.bottom && here < s.top,
        "not running on the main stack"
    );
    ensure!(
        paging::translate(s.guard).is_none(),
        "guard page {:?} is mapped",
        s.guard
    );
    ensure!(
        paging::translate(s.bottom).is_some(),
        "stack bottom unmapped"
    );
    let extra = stack::alloc(2).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(
        paging::translate(extra.guard).is_none(),
        "new stack's guard is mapped"
    );
    ensure!(extra.guard > s.top, "stacks overlap");
    Ok(())
}

#[ktest]
fn mm_heap_alloc_free() -> TestResult {
    let (used0, _) = heap::usage();
    {
        let mut v: Vec<u64> = (0..100_000).collect();
        v.reverse();
        ensure!(v[0] == 99_999 && v[99_999] == 0, "vector contents wrong");
        let boxes: Vec<Box<[u8; 4096]>> = (0..64).map(|i| Box::new([i as u8; 4096])).collect();
        for (i, b) in boxes.iter().enumerate() {
            ensure!(b.iter().all(|&x| x == i as u8), "box {i} corrupted");
        }
        let s = alloc::format!("{}-{}", "heap", 42);
        ensure!(s == "heap-42", "format gave {s}");
        // Small objects come from the size classes: thousands of them, each keeping its
        // contents, none overlapping (each holds its own index).
        let small: Vec<Box<[u64; 6]>> = (0..20_000u64).map(|i| Box::new([i; 6])).collect();
        for (i, b) in small.iter().enumerate() {
            ensure!(b.iter().all(|&x| x == i as u64), "small box {i} corrupted");
        }
        ensure!(
            heap::usage().0 >= used0 + 20_000 * 64,
            "20,000 small boxes not counted as used"
        );
    }
    ensure!(
        heap::cached() >= 20_000 * 64,
        "freed small boxes not kept in their class"
    );
    let (used1, _) = heap::usage();
    ensure!(used1 == used0, "heap leaked: {used0} -> {used1} bytes used");
    Ok(())
}

#[ktest]
fn mm_memmove_overlap() -> TestResult {
    let mut buf: [u8; 64] = core::array::from_fn(|i| i as u8);
    let p = buf.as_mut_ptr();
    // SAFETY: both ranges lie inside `buf`; `copy` is memmove.
    unsafe { core::ptr::copy(p, p.add(5), 40) };
    ensure!(
        buf[5..45].iter().enumerate().all(|(i, &x)| x == i as u8),
        "forward overlap wrong"
    );
    let mut buf: [u8; 64] = core::array::from_fn(|i| i as u8);
    let p = buf.as_mut_ptr();
    // SAFETY: as above.
    unsafe { core::ptr::copy(p.add(7), p, 40) };
    ensure!(
        buf[..40]
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (i + 7) as u8),
        "backward overlap wrong"
    );
    ensure!(
        buf[40..]
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (i + 40) as u8),
        "tail clobbered"
    );
    Ok(())
}
