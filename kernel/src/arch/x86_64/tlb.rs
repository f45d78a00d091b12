//! TLB flushes: on this CPU (`invlpg`, CR3 reload) and on others by shootdown IPI.
//!
//! Models Linux's `arch/x86/mm/tlb.c`: `flush_tlb_mm_range` / `native_flush_tlb_multi` send
//! a `flush_tlb_info` to the CPUs that may cache the translations, each runs `flush_tlb_func`
//! and the sender waits for all of them; `tlb_single_page_flush_ceiling` (33) decides when
//! one full flush is cheaper than `invlpg` per page. Linux ships the request through
//! `smp_call_function_many`'s per-CPU call-single queues; this kernel has a dedicated vector
//! ([`TLB_VECTOR`]) and its own slots:
//!
//! - one request slot per *sender* CPU: the addresses (at most 33) or "everything", and the
//!   mask of targets that have not acknowledged yet;
//! - one pending mask per *target* CPU: which senders have a request for it.
//!
//! A sender fills its own slot, sets its bit in each target's pending mask (`lock or`), sends
//! each target an IPI, and spins until every target has cleared its bit in the slot's
//! outstanding mask. A target's IPI handler takes its whole pending mask with one `xchg`,
//! flushes what each named slot asks for and clears its bit there. Concurrent senders never
//! share a slot, so any number of CPUs can shoot down at once; a target serves every sender
//! whose bit it finds, so IPIs that coalesce (one pending in the local APIC's IRR stands for
//! any number) lose nothing: a sender's bit is always set before its IPI is sent.
//!
//! No lock is involved, so there is nothing to deadlock on. Where a deadlock could come from
//! is a target that does not serve: while it waits for its own acks, a sender serves its own
//! pending mask in the wait loop (so two CPUs shooting down at each other both finish even
//! with interrupts disabled), and a CPU inside its page-fault handler runs with interrupts
//! enabled ([`super::fault`]), as do idle CPUs (`sti; hlt`) and thread code. A target that
//! spins with interrupts disabled on something a sender holds would block it; the kernel
//! only disables interrupts around short per-CPU sections that wait for nobody.
//!
//! Per-CPU counters ([`stats`]): shootdowns started, IPIs sent and received, requests served,
//! single-page and full flushes. All written with [`super::percpu::counter_inc`].

use super::apic;
use super::percpu::counter_inc;
use super::trap::{self, TrapFrame};
use crate::percpu::{CpuSet, MAX_CPUS, area, cpu_id};
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use x86_64::VirtAddr;

/// Vector of the shootdown IPI (after the cross-CPU call's 0xf0).
pub const TLB_VECTOR: u8 = 0xf1;

/// Most pages flushed one by one; a request for more is a full flush (Linux's
/// `tlb_single_page_flush_ceiling`).
pub const TLB_SINGLE_PAGE_FLUSH_CEILING: usize = 33;

const WORDS: usize = MAX_CPUS / 64;
/// `FlushSlot::n` for "flush everything".
const FULL: usize = usize::MAX;

/// What to flush.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlbFlush<'a> {
    /// These pages (any address inside each page); more than the ceiling flushes all.
    Pages(&'a [u64]),
    /// Every page that overlaps `[start, end)`; more than the ceiling flushes all.
    Range {
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
    },
    /// Every (non-global) translation.
    All,
}

/// Why a shootdown did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlbError {
    /// [`init`] has not run: a target would take the IPI as an unexpected interrupt.
    NotReady,
    /// A CPU in the set is not online. Nothing was sent.
    NotOnline(usize),
    /// Called while this CPU's own shootdown is in progress (from an interrupt of it).
    /// Nothing was sent.
    Reentered,
    /// The IPI to this CPU could not be sent (its request was withdrawn; every other target
    /// was flushed and has acknowledged).
    Ipi(usize),
}

impl fmt::Display for TlbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlbError::NotReady => write!(f, "TLB shootdown vector not installed"),
            TlbError::NotOnline(c) => write!(f, "cpu {c} is not online"),
            TlbError::Reentered => write!(f, "shootdown started inside this CPU's own"),
            TlbError::Ipi(c) => write!(f, "cannot send the shootdown IPI to cpu {c}"),
        }
    }
}

/// A set of CPUs as mask words (the pending and outstanding masks).
#[repr(C, align(128))]
struct Mask([AtomicU64; WORDS]);

impl Mask {
    const fn new() -> Self {
        Mask([const { AtomicU64::new(0) }; WORDS])
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(|w| w.load(Ordering::Acquire) == 0)
    }
}

/// One sender's request. Only its owner writes `n`, `addrs` and `busy`, and only while no
/// target is outstanding; targets read the request, then clear their `outstanding` bit.
#[repr(C, align(128))]
struct FlushSlot {
    n: AtomicUsize,
    addrs: [AtomicU64; TLB_SINGLE_PAGE_FLUSH_CEILING],
    busy: AtomicBool,
    outstanding: Mask,
}

static SLOTS: [FlushSlot; MAX_CPUS] = [const {
    FlushSlot {
        n: AtomicUsize::new(0),
        addrs: [const { AtomicU64::new(0) }; TLB_SINGLE_PAGE_FLUSH_CEILING],
        busy: AtomicBool::new(false),
        outstanding: Mask::new(),
    }
}; MAX_CPUS];

/// `PENDING[t]`: senders with a request for CPU `t`.
static PENDING: [Mask; MAX_CPUS] = [const { Mask::new() }; MAX_CPUS];

static READY: AtomicBool = AtomicBool::new(false);

/// One CPU's counters, written only by that CPU.
#[repr(C, align(128))]
struct Counters {
    shootdowns: AtomicU64,
    ipis_sent: AtomicU64,
    ipis_received: AtomicU64,
    requests_served: AtomicU64,
    page_flushes: AtomicU64,
    full_flushes: AtomicU64,
}

static COUNTERS: [Counters; MAX_CPUS] = [const {
    Counters {
        shootdowns: AtomicU64::new(0),
        ipis_sent: AtomicU64::new(0),
        ipis_received: AtomicU64::new(0),
        requests_served: AtomicU64::new(0),
        page_flushes: AtomicU64::new(0),
        full_flushes: AtomicU64::new(0),
    }
}; MAX_CPUS];

fn counters() -> &'static Counters {
    &COUNTERS[cpu_id() % MAX_CPUS]
}

/// TLB counts of one CPU, or summed over all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlbStats {
    /// Shootdowns this CPU started (with at least one target).
    pub shootdowns: u64,
    /// Shootdown IPIs it sent.
    pub ipis_sent: u64,
    /// Shootdown IPIs it took.
    pub ipis_received: u64,
    /// Requests of other CPUs it carried out (from the IPI or while waiting for its own).
    pub requests_served: u64,
    /// `invlpg`s it executed.
    pub page_flushes: u64,
    /// Full flushes (CR3 reloads) it executed.
    pub full_flushes: u64,
}

impl TlbStats {
    /// Field-wise `self - earlier`.
    #[must_use]
    pub fn since(&self, earlier: &TlbStats) -> TlbStats {
        TlbStats {
            shootdowns: self.shootdowns - earlier.shootdowns,
            ipis_sent: self.ipis_sent - earlier.ipis_sent,
            ipis_received: self.ipis_received - earlier.ipis_received,
            requests_served: self.requests_served - earlier.requests_served,
            page_flushes: self.page_flushes - earlier.page_flushes,
            full_flushes: self.full_flushes - earlier.full_flushes,
        }
    }
}

/// CPU `cpu`'s counts (zero for a CPU that does not exist).
#[must_use]
pub fn stats(cpu: usize) -> TlbStats {
    COUNTERS.get(cpu).map_or(TlbStats::default(), |c| TlbStats {
        shootdowns: c.shootdowns.load(Ordering::Relaxed),
        ipis_sent: c.ipis_sent.load(Ordering::Relaxed),
        ipis_received: c.ipis_received.load(Ordering::Relaxed),
        requests_served: c.requests_served.load(Ordering::Relaxed),
        page_flushes: c.page_flushes.load(Ordering::Relaxed),
        full_flushes: c.full_flushes.load(Ordering::Relaxed),
    })
}

/// Installs the shootdown IPI handler. Boot CPU, once, before any shootdown.
pub fn init() {
    trap::register(TLB_VECTOR, ipi_handler);
    READY.store(true, Ordering::Release);
}

/// Drops this CPU's translation of the page containing `addr` (`invlpg`; also drops the
/// paging-structure caches' entries, SDM vol. 3, 4.10.4.1).
pub fn flush_tlb_local(addr: u64) {
    x86_64::instructions::tlb::flush(VirtAddr::new_truncate(addr));
    counter_inc(&counters().page_flushes);
}

/// Drops every non-global translation of this CPU (CR3 reload). The slot's entries are
/// never global ([`super::pte`]), so this covers all of them.
pub fn flush_tlb_local_all() {
    x86_64::instructions::tlb::flush_all();
    counter_inc(&counters().full_flushes);
}

/// What a request comes to on one CPU: nothing, up to the ceiling pages, or everything
/// (Linux's `tlb_single_page_flush_ceiling` decision), without copying the pages.
enum Plan<'a> {
    Nothing,
    Pages(&'a [u64]),
    /// `n` pages from `first`.
    Range {
        first: u64,
        n: usize,
    },
    Everything,
}

impl<'a> Plan<'a> {
    fn of(f: &TlbFlush<'a>) -> Plan<'a> {
        match *f {
            TlbFlush::All => Plan::Everything,
            TlbFlush::Pages(p) if p.len() > TLB_SINGLE_PAGE_FLUSH_CEILING => Plan::Everything,
            TlbFlush::Pages([]) => Plan::Nothing,
            TlbFlush::Pages(p) => Plan::Pages(p),
            TlbFlush::Range { start, end } if end <= start => Plan::Nothing,
            TlbFlush::Range { start, end } => {
                let first = start & !0xfff;
                let pages = (end - first).div_ceil(4096);
                if pages > TLB_SINGLE_PAGE_FLUSH_CEILING as u64 {
                    Plan::Everything
                } else {
                    Plan::Range {
                        first,
                        n: pages as usize,
                    }
                }
            }
        }
    }

    /// Calls `page` for each page to drop; false (and no calls) for a full flush.
    fn for_each_page(&self, mut page: impl FnMut(usize, u64)) -> bool {
        match *self {
            Plan::Nothing => {}
            Plan::Pages(p) => p.iter().enumerate().for_each(|(i, &a)| page(i, a)),
            Plan::Range { first, n } => (0..n).for_each(|i| page(i, first + 4096 * i as u64)),
            Plan::Everything => return false,
        }
        true
    }
}

/// A request reduced to what a CPU executes, copied for the CPUs it is sent to: up to the
/// ceiling pages, or everything.
struct Work {
    n: usize,
    addrs: [u64; TLB_SINGLE_PAGE_FLUSH_CEILING],
}

impl Work {
    fn of(f: &TlbFlush<'_>) -> Work {
        let mut w = Work {
            n: 0,
            addrs: [0; TLB_SINGLE_PAGE_FLUSH_CEILING],
        };
        if !Plan::of(f).for_each_page(|i, a| {
            w.addrs[i] = a;
            w.n = i + 1;
        }) {
            w.n = FULL;
        }
        w
    }

    fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// Carries out `flush` on this CPU only, straight from the request (the fault path calls
/// this for every unmapped batch, so it builds no [`Work`]).
pub fn flush_tlb_local_request(flush: &TlbFlush<'_>) {
    if !Plan::of(flush).for_each_page(|_, a| flush_tlb_local(a)) {
        flush_tlb_local_all();
    }
}

/// Carries out `flush` on every CPU in `cpus`: this one directly if it is in the set, the
/// others by [`flush_tlb_others`].
pub fn flush_tlb_cpus(cpus: &CpuSet, flush: &TlbFlush<'_>) -> Result<(), TlbError> {
    if cpus.contains(cpu_id()) {
        flush_tlb_local_request(flush);
    }
    flush_tlb_others(cpus, flush)
}

/// Carries out `flush` on every CPU in `cpus` except this one, and returns when all of
/// them have done it: their TLBs hold no translation the request names.
///
/// May be called with interrupts enabled or disabled (requests to this CPU are served while
/// it waits either way), from thread context or a page-fault handler; not from an interrupt
/// handler. The caller must not hold anything that a target might spin on with interrupts
/// disabled.
pub fn flush_tlb_others(cpus: &CpuSet, flush: &TlbFlush<'_>) -> Result<(), TlbError> {
    let me = cpu_id();
    let mut targets = [0u64; WORDS];
    for c in cpus.iter().filter(|&c| c != me) {
        if area(c).is_none() {
            return Err(TlbError::NotOnline(c));
        }
        targets[c / 64] |= 1 << (c % 64);
    }
    let work = Work::of(flush);
    if targets.iter().all(|&w| w == 0) || work.is_empty() {
        return Ok(());
    }
    if !READY.load(Ordering::Acquire) {
        return Err(TlbError::NotReady);
    }
    let slot = &SLOTS[me];
    if slot.busy.swap(true, Ordering::Acquire) {
        return Err(TlbError::Reentered);
    }
    slot.n.store(work.n, Ordering::Relaxed);
    if work.n != FULL {
        for (s, &a) in slot.addrs.iter().zip(&work.addrs[..work.n]) {
            s.store(a, Ordering::Relaxed);
        }
    }
    for (o, &t) in slot.outstanding.0.iter().zip(&targets) {
        o.store(t, Ordering::Relaxed);
    }
    let c = counters();
    counter_inc(&c.shootdowns);
    let (word, bit) = (me / 64, 1u64 << (me % 64));
    let mut result = Ok(());
    for t in (0..MAX_CPUS).filter(|&t| targets[t / 64] & (1 << (t % 64)) != 0) {
        // Publishes the request (Release; `lock or` is also a full barrier before the IPI).
        PENDING[t].0[word].fetch_or(bit, Ordering::Release);
        let apic_id = area(t).map_or(u32::MAX, |a| a.apic_id());
        let sent = apic::send_ipi(
            apic_id,
            apic::icr::FIXED | apic::icr::ASSERT | u32::from(TLB_VECTOR),
        );
        if sent.is_ok() {
            counter_inc(&c.ipis_sent);
            continue;
        }
        // Withdraw the request unless the target already took it (then it acknowledges).
        if PENDING[t].0[word].fetch_and(!bit, Ordering::AcqRel) & bit != 0 {
            slot.outstanding.0[t / 64].fetch_and(!(1 << (t % 64)), Ordering::Release);
        }
        if result.is_ok() {
            result = Err(TlbError::Ipi(t));
        }
    }
    wait_for_acks(me, slot);
    slot.busy.store(false, Ordering::Release);
    result
}

/// Spins until every target of `slot` has acknowledged, serving requests to this CPU
/// meanwhile. Says so once on the console if that takes more than a second (a target that
/// does not serve IPIs is a kernel bug that would otherwise hang silently).
fn wait_for_acks(me: usize, slot: &FlushSlot) {
    let start = super::tsc::now_ns();
    let mut warned = false;
    while !slot.outstanding.is_empty() {
        serve_pending(me);
        core::hint::spin_loop();
        if !warned && super::tsc::hz() != 0 && super::tsc::now_ns() - start > 1_000_000_000 {
            warned = true;
            let waiting: alloc::vec::Vec<usize> = (0..MAX_CPUS)
                .filter(|&t| {
                    slot.outstanding.0[t / 64].load(Ordering::Relaxed) & (1 << (t % 64)) != 0
                })
                .collect();
            let line = alloc::format!(
                "tlb: cpu {me} has waited 1 s for shootdown acks from cpus {waiting:?}\n"
            );
            crate::console::emergency_write(format_args!("{line}"));
        }
    }
}

/// Carries out every request pending for CPU `me` (which must be the running CPU) and
/// acknowledges each. Safe to run from thread context and from the IPI handler at once:
/// each request is taken from the pending mask by exactly one `xchg`.
fn serve_pending(me: usize) {
    let c = &COUNTERS[me];
    for (w, word) in PENDING[me].0.iter().enumerate() {
        if word.load(Ordering::Relaxed) == 0 {
            continue;
        }
        let mut senders = word.swap(0, Ordering::Acquire);
        while senders != 0 {
            let s = w * 64 + senders.trailing_zeros() as usize;
            senders &= senders - 1;
            let slot = &SLOTS[s];
            let n = slot.n.load(Ordering::Relaxed);
            if n == FULL {
                flush_tlb_local_all();
            } else {
                for a in &slot.addrs[..n.min(TLB_SINGLE_PAGE_FLUSH_CEILING)] {
                    flush_tlb_local(a.load(Ordering::Relaxed));
                }
            }
            counter_inc(&c.requests_served);
            slot.outstanding.0[me / 64].fetch_and(!(1 << (me % 64)), Ordering::Release);
        }
    }
}

fn ipi_handler(_frame: &mut TrapFrame) {
    counter_inc(&counters().ipis_received);
    apic::eoi();
    serve_pending(cpu_id());
}
