//! SMP bring-up: find the CPUs in the MADT and start each application processor (AP).
//!
//! Models Linux's `native_smp_prepare_cpus` / `do_boot_cpu` / `wakeup_secondary_cpu_via_init`
//! (`arch/x86/kernel/smpboot.c`) and `trampoline_64.S`, in the spirit of Asterinas ostd's
//! `arch/x86/boot/smp.rs`.
//!
//! An AP wakes from power-on in real mode and waits for a Startup IPI. The boot CPU (BSP)
//! wakes it with the INIT-SIPI-SIPI sequence of the Intel SDM (vol. 3, 9.4.4): INIT resets the
//! AP into the wait-for-SIPI state; after 10 ms a SIPI whose vector `v` makes it start
//! executing 16-bit code at physical `v << 12` (CS = `v << 8`, IP = 0). So the entry must sit
//! in a 4 KiB page below 1 MiB: we copy the trampoline below to [`TRAMPOLINE_PHYS`] (0x8000;
//! the frame allocator never hands out the first MiB). If the AP has not started 200 us after
//! the first SIPI, a second one is sent (older CPUs can miss the first).
//!
//! The trampoline goes 16-bit real mode -> 32-bit protected mode (its own tiny GDT) -> long
//! mode: PAE in CR4, the kernel's CR3, the boot CPU's EFER (LME and NXE: the kernel's tables
//! use NX), then the boot CPU's CR0 (paging, write-protect, and the SSE-friendly MP/!EM/!TS
//! bits), a far jump into a 64-bit segment, the boot CPU's full CR4 (OSFXSR/OSXMMEXCPT: SSE
//! is usable before the first Rust instruction), GS base (the per-CPU area), and finally a
//! call into [`ap_entry`] on the AP's own guarded kernel stack. The page at 0x8000 is
//! identity-mapped executable only while APs start, since the instruction after enabling
//! paging is fetched from it; it is unmapped afterwards.
//!
//! APs are started one at a time, each by its own APIC ID (never a broadcast, which would
//! also wake CPUs that firmware disabled or that `cpus=` excludes), so the single parameter
//! block in the trampoline page is never shared. The AP claims the block with `lock xchg`
//! before using it; if it has not come online within [`AP_TIMEOUT_MS`], the BSP revokes the
//! claim (a late AP then parks itself in `hlt`), sends it an INIT to put it back into
//! wait-for-SIPI, reports it with the last stage it reached, and moves on to the next one.
//! CPU ids stay dense: a failed AP's id goes to the next AP.
//!
//! Unsafe code here, and why: the AP trampoline is assembly copied to low memory, and
//! starting an AP hands it a stack and page tables through raw memory.
#![allow(unsafe_code)]

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicU32, Ordering};

use super::acpi::{self, MadtCpus, RsdpSource};
use super::apic::{self, ApicMode, icr};
use super::tsc::{self, TscInfo};
use super::{gdt, paging, trap};
use crate::mm::stack;
use crate::percpu::{self, CpuState, on_each_cpu};
use x86_64::registers::control::{Cr0, Cr3, Cr4};
use x86_64::registers::model_specific::Efer;
use x86_64::structures::paging::PageTableFlags as F;
use x86_64::{PhysAddr, VirtAddr};

/// Physical (and, during bring-up, virtual) address of the trampoline page.
pub const TRAMPOLINE_PHYS: u64 = 0x8000;
/// How long an AP has to come online after its SIPIs.
pub const AP_TIMEOUT_MS: u64 = 2000;
/// Pages of each AP's kernel stack (64 KiB, like the boot CPU's).
pub const AP_STACK_PAGES: u64 = 16;

/// The trampoline's parameter block, filled by the BSP for one AP at a time.
#[repr(C)]
struct Params {
    /// 1 while the block is offered; the AP swaps in 0 to take it.
    claim: u32,
    /// How far the AP got: 1 real mode, 2 protected mode, 3 long mode, 4 Rust.
    stage: u32,
    cr3: u64,
    efer: u64,
    cr0: u64,
    cr4: u64,
    stack_top: u64,
    entry: u64,
    gs_base: u64,
    cpu: u64,
}

/// Offset of the parameter block in the trampoline page (after a jump over it).
const PARAMS_OFF: usize = 16;
/// Offset of the trampoline's GDT (four descriptors) and of its GDTR.
const GDT_OFF: usize = (PARAMS_OFF + core::mem::size_of::<Params>()).next_multiple_of(16);
const GDTR_OFF: usize = GDT_OFF + 32;

// Memory operands use the fixed offsets above (LLVM's Intel-syntax parser rejects label
// differences there); `install_trampoline` checks that the labels really sit at them.
core::arch::global_asm!(
    r#"
    .section .rodata.smp_trampoline, "a"
    .balign 16
    .global smp_trampoline_start
smp_trampoline_start:
    .code16
    jmp smp_trampoline_16
    .balign 16
    .global smp_trampoline_params
smp_trampoline_params:
    .space {params_size}
    .balign 16
    .global smp_trampoline_gdt
smp_trampoline_gdt:
    .quad 0
    .quad 0x00cf9a000000ffff
    .quad 0x00cf92000000ffff
    .quad 0x00af9a000000ffff
    .word 4 * 8 - 1
    .long {base} + {gdt}

smp_trampoline_16:
    cli
    cld
    mov ax, cs
    mov ds, ax
    xor eax, eax
    lock xchg dword ptr [{params} + {p_claim}], eax
    test eax, eax
    jz 3f
    mov dword ptr [{params} + {p_stage}], 1
    lgdt [{gdtr}]
    mov eax, cr0
    or eax, 1
    mov cr0, eax
    .byte 0x66, 0xea
    .long {base} + smp_trampoline_32 - smp_trampoline_start
    .word 0x08
3:
    cli
    hlt
    jmp 3b

    .code32
smp_trampoline_32:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    mov ebx, {base} + {params}
    mov dword ptr [ebx + {p_stage}], 2
    mov eax, cr4
    or eax, 1 << 5
    mov cr4, eax
    mov eax, dword ptr [ebx + {p_cr3}]
    mov cr3, eax
    mov ecx, 0xC0000080
    mov eax, dword ptr [ebx + {p_efer}]
    mov edx, dword ptr [ebx + {p_efer} + 4]
    wrmsr
    mov eax, dword ptr [ebx + {p_cr0}]
    mov cr0, eax
    .byte 0xea
    .long {base} + smp_trampoline_64 - smp_trampoline_start
    .word 0x18

    .code64
smp_trampoline_64:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    mov ebx, {base} + {params}
    mov rax, qword ptr [rbx + {p_cr4}]
    mov cr4, rax
    mov ecx, 0xC0000101
    mov eax, dword ptr [rbx + {p_gs}]
    mov edx, dword ptr [rbx + {p_gs} + 4]
    wrmsr
    mov dword ptr [rbx + {p_stage}], 3
    mov rsp, qword ptr [rbx + {p_stack}]
    mov rdi, qword ptr [rbx + {p_cpu}]
    mov rax, qword ptr [rbx + {p_entry}]
    xor ebp, ebp
    call rax
    ud2
    .global smp_trampoline_end
smp_trampoline_end:
    .text
    "#,
    base = const TRAMPOLINE_PHYS,
    params = const PARAMS_OFF,
    gdt = const GDT_OFF,
    gdtr = const GDTR_OFF,
    p_claim = const core::mem::offset_of!(Params, claim),
    p_stage = const core::mem::offset_of!(Params, stage),
    p_cr3 = const core::mem::offset_of!(Params, cr3),
    p_efer = const core::mem::offset_of!(Params, efer),
    p_cr0 = const core::mem::offset_of!(Params, cr0),
    p_cr4 = const core::mem::offset_of!(Params, cr4),
    p_stack = const core::mem::offset_of!(Params, stack_top),
    p_entry = const core::mem::offset_of!(Params, entry),
    p_gs = const core::mem::offset_of!(Params, gs_base),
    p_cpu = const core::mem::offset_of!(Params, cpu),
    params_size = const core::mem::size_of::<Params>(),
);

unsafe extern "C" {
    static smp_trampoline_start: u8;
    static smp_trampoline_params: u8;
    static smp_trampoline_gdt: u8;
    static smp_trampoline_end: u8;
}

/// What happened to one MADT processor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuOutcome {
    /// Online with this CPU id.
    Online(usize),
    /// Not started: `cpus=` limit reached.
    Limited,
    /// Not started: could not be addressed or set up (reason).
    Skipped(String),
    /// Started but did not come online in time; the last trampoline stage it reached.
    TimedOut(u32),
    /// Came in but failed its own setup (reason).
    Failed(String),
}

/// The result of bring-up, kept for the system summary and the tests.
#[derive(Clone, Debug)]
pub struct SmpInfo {
    /// TSC frequency and source.
    pub tsc: Result<TscInfo, tsc::TscError>,
    /// Local APIC mode (None: no APIC, single CPU).
    pub apic_mode: Option<ApicMode>,
    /// Where the MADT came from, or why there is none.
    pub acpi: Result<RsdpSource, acpi::AcpiError>,
    /// The usable MADT processors and their fate (the boot CPU first).
    pub cpus: Vec<(acpi::MadtCpu, CpuOutcome)>,
    /// Disabled / duplicate MADT entries skipped.
    pub madt_disabled: u32,
    /// Duplicate APIC IDs skipped.
    pub madt_duplicates: u32,
    /// The boot CPU's APIC ID.
    pub bsp_apic_id: u32,
    /// `cpus=` as given.
    pub limit: Option<u32>,
}

impl SmpInfo {
    /// CPUs online.
    #[must_use]
    pub fn online(&self) -> usize {
        percpu::nr_cpu_ids()
    }

    /// Usable processors the MADT lists (1 without ACPI).
    #[must_use]
    pub fn found(&self) -> usize {
        self.cpus.len().max(1)
    }
}

static INFO: spin::Once<SmpInfo> = spin::Once::new();

/// The bring-up result (`None` before [`init`]).
#[must_use]
pub fn info() -> Option<&'static SmpInfo> {
    INFO.get()
}

/// Brings up the CPUs: TSC, local APIC, MADT, per-CPU areas, then each AP in turn, at most
/// `limit` CPUs in all. Runs once, on the boot CPU, after paging, stacks and the heap.
pub fn init(bootloader_rsdp: Option<u64>, limit: Option<u32>) -> &'static SmpInfo {
    if let Some(i) = INFO.get() {
        return i;
    }
    let tsc = tsc::init();
    let apic_mode = apic::init_bsp().ok();
    let bsp_apic_id = if apic_mode.is_some() { apic::id() } else { 0 };
    let acpi = acpi::discover(bootloader_rsdp);
    let madt = match &acpi {
        Ok((_, m)) => m.clone(),
        Err(_) => MadtCpus::default(),
    };
    let max = limit
        .map_or(percpu::MAX_CPUS, |l| l as usize)
        .min(percpu::MAX_CPUS);
    percpu::init_boot_cpu(madt.cpus.len().clamp(1, max), bsp_apic_id);

    let mut info = SmpInfo {
        tsc,
        apic_mode,
        acpi: acpi.as_ref().map(|(s, _)| *s).map_err(Clone::clone),
        cpus: Vec::new(),
        madt_disabled: madt.disabled,
        madt_duplicates: madt.duplicates,
        bsp_apic_id,
        limit,
    };
    let bsp_entry = madt
        .cpus
        .iter()
        .find(|c| c.apic_id == bsp_apic_id)
        .copied()
        .unwrap_or(acpi::MadtCpu {
            apic_id: bsp_apic_id,
            acpi_uid: 0,
            online_capable: false,
            x2apic_entry: false,
        });
    info.cpus.push((bsp_entry, CpuOutcome::Online(0)));
    let aps: Vec<_> = madt
        .cpus
        .iter()
        .filter(|c| c.apic_id != bsp_apic_id)
        .copied()
        .collect();

    let can_start = apic_mode.is_some() && info.tsc.is_ok() && !aps.is_empty() && max > 1;
    if can_start {
        trap::register(on_each_cpu::CALL_VECTOR, on_each_cpu::call_ipi_handler);
    }
    let mut trampoline = None;
    if can_start {
        match install_trampoline() {
            Ok(()) => trampoline = Some(()),
            Err(e) => {
                for ap in &aps {
                    info.cpus
                        .push((*ap, CpuOutcome::Skipped(alloc::format!("{e}"))));
                }
            }
        }
    }
    if trampoline.is_some() {
        let mut next_cpu = 1;
        for ap in &aps {
            let outcome = if next_cpu >= max {
                CpuOutcome::Limited
            } else {
                start_ap(next_cpu, ap.apic_id)
            };
            if matches!(outcome, CpuOutcome::Online(_)) {
                next_cpu += 1;
            }
            info.cpus.push((*ap, outcome));
        }
        remove_trampoline();
    } else if !can_start {
        for ap in &aps {
            let why = if max <= 1 {
                CpuOutcome::Limited
            } else {
                CpuOutcome::Skipped(String::from("no usable local APIC or TSC"))
            };
            info.cpus.push((*ap, why));
        }
    }
    let info = INFO.call_once(|| info);
    report(info);
    info
}

/// Prints bring-up's outcome on the boot log: one line, plus one per CPU that did not start.
fn report(info: &SmpInfo) {
    if let Err(e) = &info.acpi {
        crate::println!("smp: no ACPI MADT ({e}); continuing on the boot CPU only");
    }
    if let Err(e) = &info.tsc {
        crate::println!("smp: no usable TSC ({e:?}); continuing on the boot CPU only");
    }
    if info.apic_mode.is_none() {
        crate::println!("smp: no local APIC; continuing on the boot CPU only");
    }
    for (cpu, outcome) in &info.cpus {
        match outcome {
            CpuOutcome::Online(_) | CpuOutcome::Limited => {}
            o => crate::println!("smp: APIC ID {} not started: {o}", cpu.apic_id),
        }
    }
    crate::println!(
        "smp: {} of {} CPUs online{}",
        info.online(),
        info.found(),
        match info.limit {
            Some(k) => alloc::format!(" (cpus={k})"),
            None => String::new(),
        }
    );
}

/// Writes the CPU part of the system summary: clock, APIC mode, and every CPU found with its
/// APIC ID and what became of it.
pub fn describe(w: &mut dyn fmt::Write) -> fmt::Result {
    let Some(info) = info() else {
        return writeln!(w, "cpus: bring-up has not run");
    };
    match &info.tsc {
        Ok(t) => writeln!(
            w,
            "tsc: {}.{:03} MHz from {:?}{}",
            t.hz / 1_000_000,
            t.hz / 1_000 % 1_000,
            t.source,
            if t.invariant { ", invariant" } else { "" }
        )?,
        Err(e) => writeln!(w, "tsc: unusable ({e:?})")?,
    }
    match info.apic_mode {
        Some(m) => writeln!(
            w,
            "local apic: {m:?}, boot CPU APIC ID {}",
            info.bsp_apic_id
        )?,
        None => writeln!(w, "local apic: none")?,
    }
    match &info.acpi {
        Ok(src) => writeln!(
            w,
            "acpi madt: {} usable processors (RSDP {}), {} disabled, {} duplicate entries",
            info.cpus.len(),
            match src {
                RsdpSource::Bootloader(a) => alloc::format!("from the loader at {a:#x}"),
                RsdpSource::BiosSearch => String::from("found by BIOS area search"),
            },
            info.madt_disabled,
            info.madt_duplicates
        )?,
        Err(e) => writeln!(w, "acpi madt: none ({e}): one CPU")?,
    }
    writeln!(
        w,
        "cpus: {} found, {} started{}",
        info.found(),
        info.online(),
        match info.limit {
            Some(k) => alloc::format!(" (cpus={k})"),
            None => String::new(),
        }
    )?;
    for (cpu, outcome) in &info.cpus {
        writeln!(
            w,
            "  apic id {:>3} (acpi uid {}{}{}): {outcome}",
            cpu.apic_id,
            cpu.acpi_uid,
            if cpu.x2apic_entry {
                ", x2apic entry"
            } else {
                ""
            },
            if cpu.online_capable {
                ", online-capable"
            } else {
                ""
            },
        )?;
    }
    Ok(())
}

impl fmt::Display for CpuOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuOutcome::Online(c) => write!(f, "online as cpu {c}"),
            CpuOutcome::Limited => write!(f, "not started (cpus= limit)"),
            CpuOutcome::Skipped(why) => write!(f, "skipped: {why}"),
            CpuOutcome::TimedOut(stage) => write!(
                f,
                "did not answer within {AP_TIMEOUT_MS} ms (last trampoline stage {stage}: {})",
                match stage {
                    0 => "never ran",
                    1 => "real mode",
                    2 => "protected mode",
                    3 => "long mode",
                    _ => "Rust entry",
                }
            ),
            CpuOutcome::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

#[derive(Debug)]
enum TrampolineError {
    Map(paging::PagingError),
    TooBig(usize),
    Layout(usize, usize),
    Cr3Above4G(u64),
    NotUsableRam,
}

impl fmt::Display for TrampolineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrampolineError::Map(e) => write!(f, "cannot map the trampoline page: {e:?}"),
            TrampolineError::TooBig(n) => write!(f, "trampoline is {n} bytes, over a page"),
            TrampolineError::Layout(p, g) => write!(
                f,
                "trampoline layout: params at {p} (want {PARAMS_OFF}), gdt at {g} (want {GDT_OFF})"
            ),
            TrampolineError::NotUsableRam => write!(
                f,
                "the memory map does not list the trampoline page {TRAMPOLINE_PHYS:#x} as usable RAM"
            ),
            TrampolineError::Cr3Above4G(a) => {
                write!(
                    f,
                    "kernel PML4 at {a:#x} is above 4 GiB (32-bit mov to CR3)"
                )
            }
        }
    }
}

fn trampoline_params() -> *mut Params {
    paging::phys_to_virt(PhysAddr::new(TRAMPOLINE_PHYS + PARAMS_OFF as u64)).as_mut_ptr()
}

fn install_trampoline() -> Result<(), TrampolineError> {
    // Firmware may keep data in low memory (some UEFI maps reserve pages there): write the
    // page only if the map says it is plain RAM.
    let usable = crate::boot_info::get().regions().iter().any(|r| {
        r.kind == crate::boot_info::MemKind::Usable
            && r.start <= TRAMPOLINE_PHYS
            && r.end() >= TRAMPOLINE_PHYS + 4096
    });
    if !usable {
        return Err(TrampolineError::NotUsableRam);
    }
    let start = &raw const smp_trampoline_start;
    let len = &raw const smp_trampoline_end as usize - start as usize;
    if len > 4096 {
        return Err(TrampolineError::TooBig(len));
    }
    let params = &raw const smp_trampoline_params as usize - start as usize;
    let gdt = &raw const smp_trampoline_gdt as usize - start as usize;
    if params != PARAMS_OFF || gdt != GDT_OFF {
        return Err(TrampolineError::Layout(params, gdt));
    }
    let cr3 = Cr3::read().0.start_address().as_u64();
    if cr3 >= 1 << 32 {
        return Err(TrampolineError::Cr3Above4G(cr3));
    }
    let dst = paging::phys_to_virt(PhysAddr::new(TRAMPOLINE_PHYS)).as_mut_ptr::<u8>();
    // SAFETY: the first MiB is never handed out by the frame allocator, so the page at
    // TRAMPOLINE_PHYS is ours; source and destination do not overlap (the image is at 1 MiB).
    unsafe { core::ptr::copy_nonoverlapping(start, dst, len) };
    // SAFETY: identity-maps a page nobody else maps or uses; it is executable (no NX) because
    // the AP fetches its next instruction from it right after enabling paging.
    let r = unsafe {
        paging::map_page(
            VirtAddr::new(TRAMPOLINE_PHYS),
            PhysAddr::new(TRAMPOLINE_PHYS),
            F::PRESENT | F::WRITABLE,
        )
    };
    match r {
        Ok(()) | Err(paging::PagingError::AlreadyMapped) => Ok(()),
        Err(e) => Err(TrampolineError::Map(e)),
    }
}

fn remove_trampoline() {
    // SAFETY: every AP has either come online (it left the page long ago) or been parked
    // with INIT; nothing executes from or reads the identity mapping any more.
    let _ = unsafe { paging::unmap_page(VirtAddr::new(TRAMPOLINE_PHYS)) };
}

/// Set by an AP that came in but failed its own setup (read by the BSP for the report).
static AP_ERROR: AtomicU32 = AtomicU32::new(0);

fn start_ap(cpu: usize, apic_id: u32) -> CpuOutcome {
    if apic::mode() == ApicMode::XApic && apic_id > 0xff {
        return CpuOutcome::Skipped(alloc::format!(
            "APIC ID {apic_id} needs x2APIC, which this CPU lacks"
        ));
    }
    let stack = match stack::alloc(AP_STACK_PAGES) {
        Ok(s) => s,
        Err(e) => return CpuOutcome::Skipped(alloc::format!("no stack: {e:?}")),
    };
    let Some(area) = percpu::prepare(cpu, apic_id, Some(stack)) else {
        return CpuOutcome::Skipped(String::from("no per-CPU area"));
    };
    AP_ERROR.store(0, Ordering::Relaxed);
    let p = trampoline_params();
    // SAFETY: the parameter block is inside the trampoline page (direct map); no AP holds it
    // (the previous one came online or was parked with INIT and its claim revoked).
    unsafe {
        p.write_volatile(Params {
            claim: 1,
            stage: 0,
            cr3: Cr3::read().0.start_address().as_u64(),
            efer: Efer::read_raw(),
            cr0: Cr0::read_raw(),
            cr4: Cr4::read_raw(),
            stack_top: stack.top.as_u64(),
            entry: ap_entry as *const () as u64,
            gs_base: area as u64,
            cpu: cpu as u64,
        });
    }
    // The IPI must not overtake the parameter stores (x2APIC ICR writes are not serialising).
    core::sync::atomic::fence(Ordering::SeqCst);
    let sipi = icr::STARTUP | icr::ASSERT | (TRAMPOLINE_PHYS >> 12) as u32;
    let send = |low| apic::send_ipi(apic_id, low).is_ok();
    if !send(icr::INIT | icr::ASSERT | icr::LEVEL) {
        return CpuOutcome::Skipped(String::from("INIT IPI failed"));
    }
    tsc::delay_us(10_000);
    let claim = || {
        // SAFETY: `claim` is an aligned u32 inside the block; the AP changes it only with a
        // locked xchg, so reading it as an atomic is sound.
        unsafe { &*(&raw mut (*p).claim as *const AtomicU32) }
    };
    send(sipi);
    tsc::delay_us(200);
    if claim().load(Ordering::Acquire) != 0 {
        send(sipi);
    }
    // SAFETY: `area` was just prepared and is not freed.
    let area = unsafe { &*area };
    let deadline = tsc::now_ns() + AP_TIMEOUT_MS * 1_000_000;
    while tsc::now_ns() < deadline {
        match area.state() {
            CpuState::Online => {
                percpu::publish(cpu);
                return CpuOutcome::Online(cpu);
            }
            CpuState::Failed => {
                return CpuOutcome::Failed(ap_error_text(AP_ERROR.load(Ordering::Acquire)));
            }
            CpuState::Starting => core::hint::spin_loop(),
        }
    }
    // Revoke the offer (a late AP then parks itself) and put the AP back to sleep.
    let untouched = claim().swap(0, Ordering::AcqRel) != 0;
    let _ = send(icr::INIT | icr::ASSERT | icr::LEVEL);
    // SAFETY: as above, `stage` is an aligned u32 in the block.
    let stage = unsafe { (&raw const (*p).stage).read_volatile() };
    CpuOutcome::TimedOut(if untouched { 0 } else { stage })
}

fn ap_error_text(code: u32) -> String {
    match code {
        1 => String::from("cannot allocate its GDT/TSS/IST stacks"),
        2 => String::from("its APIC ID differs from the one it was started as"),
        c => alloc::format!("error {c}"),
    }
}

/// First Rust code on an AP: GDT/TSS/IST, IDT, local APIC, then the idle loop.
extern "C" fn ap_entry(cpu: usize) -> ! {
    let p = trampoline_params();
    // SAFETY: the block stays mapped until every AP is up or parked.
    unsafe { (&raw mut (*p).stage).write_volatile(4) };
    let fail = |code: u32| -> ! {
        AP_ERROR.store(code, Ordering::Release);
        if let Some(a) = percpu::this_area() {
            a.state.store(CpuState::Failed as u8, Ordering::Release);
        }
        super::cpu::halt_forever()
    };
    if gdt::init_ap().is_err() {
        fail(1);
    }
    trap::load_idt();
    apic::init_this_cpu();
    let Some(area) = percpu::this_area() else {
        fail(3)
    };
    if area.apic_id() != apic::id() || area.cpu() != cpu {
        fail(2);
    }
    area.state.store(CpuState::Online as u8, Ordering::Release);
    on_each_cpu::idle_loop()
}
