//! Every guest memory access, sorted into runs and windows and fed to the caches.
//!
//! The plugin calls [`Tracker::access`] for each access with the vCPU, the physical address,
//! whether it stores, whether its instruction is a locked read-modify-write, and the
//! instruction's address. QEMU reports an atomic RMW once, as a store (multi-threaded TCG's
//! atomic helpers), or as a load and then a store (code translated without atomics): either
//! way the model sees stores only, so the RMW is one RFO, and the RMW is counted once, on
//! its store. Stores to the kernel's mark page (`abi::coherence`) begin and end
//! runs and windows; a pause mark stops counting a vCPU (not modelling its accesses) until
//! its resume mark, around work the benchmark does not time. Between runs nothing is modelled (one atomic load per access); a run
//! begins with cold caches, so its counts are its own; while any window of the run is open
//! every vCPU's accesses move lines in the model, and those of a vCPU inside its own window
//! are counted. A run's report is written as one JSON line when its end mark arrives (or
//! when the next run begins, or at exit, marked incomplete).
//!
//! A vCPU's counters are its own: loads, stores and RMWs are relaxed atomics only its thread
//! adds to, and its transactions and hot lines sit behind a mutex only its thread takes while
//! the run is open (the mark handler takes them all at a run's end, when every window has
//! closed), so the hot path takes no lock that another vCPU contends.

use crate::block::Block;
use crate::config::Config;
use crate::model::{Caches, Kind, Outcome};
use crate::report::{
    Header, HotLine, Line, ModelReport, PcCount, RmwSite, RunReport, Transactions, VcpuAccesses,
    Window,
};
use abi::coherence::{MARK_SIZE, Mark};
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// The model with its runs and windows.
pub struct Tracker {
    mark: u64,
    top: usize,
    sockets: Vec<u32>,
    models: Vec<Caches>,
    open: AtomicU32,
    vcpus: Vec<Slot>,
    run: Mutex<RunState>,
    sink: Mutex<Box<dyn Write + Send>>,
}

/// One vCPU's counters: written by its thread on every access, so each slot sits on its own
/// 128-byte pair of host lines.
#[derive(Default)]
#[repr(align(128))]
struct Slot {
    in_window: AtomicBool,
    /// Inside its window, between a pause mark and the resume mark (untimed work).
    paused: AtomicBool,
    loads: AtomicU64,
    stores: AtomicU64,
    rmws: AtomicU64,
    insns: AtomicU64,
    blocks: AtomicU64,
    unchained: AtomicU64,
    /// The block counted last ([`Block::word`]; 0: none since the window opened, resumed
    /// or stopped counting), for the transition to the next.
    prev: AtomicU64,
    local: Mutex<Local>,
}

#[derive(Default)]
struct Local {
    /// Per model.
    tx: Vec<Transactions>,
    /// Per model: unit address -> what happened there.
    hot: Vec<HashMap<u64, HotAcc>>,
    /// Opened and closed, ns after the run began.
    window: Option<(u64, Option<u64>)>,
    /// Instruction address -> locked RMWs it made inside the window.
    rmw_pcs: HashMap<u64, u64>,
}

#[derive(Default)]
struct HotAcc {
    counts: Transactions,
    vcpus: u64,
    pcs: HashMap<u64, u64>,
}

struct RunState {
    next: u64,
    current: Option<(u64, Instant)>,
}

impl Slot {
    /// Whether this vCPU's accesses and instructions count now: inside its window and not
    /// paused.
    fn counted(&self) -> bool {
        self.in_window.load(Relaxed) && !self.paused.load(Relaxed)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Tracker {
    /// A tracker for `vcpus` vCPUs writing to `sink`; writes the header line.
    pub fn new(
        config: &Config,
        vcpus: u32,
        api: (i32, i32),
        sink: Box<dyn Write + Send>,
    ) -> Result<Tracker, String> {
        let models = config
            .geometries()
            .into_iter()
            .map(|g| Caches::new(g, vcpus as usize))
            .collect::<Result<Vec<_>, _>>()?;
        let t = Tracker {
            mark: config.mark,
            top: config.top,
            sockets: (0..vcpus).map(|v| v % config.sockets).collect(),
            models,
            open: AtomicU32::new(0),
            vcpus: (0..vcpus).map(|_| Slot::default()).collect(),
            run: Mutex::new(RunState {
                next: 0,
                current: None,
            }),
            sink: Mutex::new(sink),
        };
        let header = Header {
            api,
            vcpus,
            sockets: t.sockets.clone(),
            cache_kib: config.cache_kib,
            ways: config.ways,
            line_bytes: t.models.iter().map(|m| m.geometry().line_bytes).collect(),
        };
        t.write(&Line::Header(header))?;
        Ok(t)
    }

    fn write(&self, line: &Line) -> Result<(), String> {
        let text = serde_json::to_string(line).map_err(|e| e.to_string())?;
        let mut s = lock(&self.sink);
        writeln!(s, "{text}")
            .and_then(|()| s.flush())
            .map_err(|e| format!("cannot write the coherence report: {e}"))
    }

    /// One access by `vcpu` at physical address `pa` made by the instruction at `pc`.
    /// `rmw`: the instruction is a locked read-modify-write (modelled as a store).
    pub fn access(&self, vcpu: u32, pa: u64, store: bool, rmw: bool, pc: u64) {
        if pa & !(MARK_SIZE - 1) == self.mark {
            if store && let Some(m) = Mark::at(pa - self.mark) {
                self.on_mark(vcpu, m);
            }
            return;
        }
        if self.open.load(Relaxed) == 0 {
            return;
        }
        let Some(slot) = self.vcpus.get(vcpu as usize) else {
            return;
        };
        let counted = slot.counted();
        if counted {
            let c = if store { &slot.stores } else { &slot.loads };
            c.store(c.load(Relaxed) + 1, Relaxed);
            if rmw && store {
                slot.rmws.store(slot.rmws.load(Relaxed) + 1, Relaxed);
                // Only this vCPU's thread takes its `local` while its window is open.
                *lock(&slot.local).rmw_pcs.entry(pc).or_default() += 1;
            }
        }
        for (k, m) in self.models.iter().enumerate() {
            let o = m.access(vcpu as usize, pa, store || rmw);
            if counted && (o.kind.is_some() || o.invalidations > 0) {
                let addr = m.line_of(pa) * m.geometry().line_bytes;
                self.record(slot, vcpu, k, addr, pc, &o);
            }
        }
    }

    /// `vcpu` starts the translated block `b`: its instructions count, and so does the
    /// transition from the block before it when QEMU cannot chain the two
    /// ([`Block::unchained_to`]). The first block after a window opens or resumes has no
    /// transition.
    pub fn executed(&self, vcpu: u32, b: Block) {
        if self.open.load(Relaxed) == 0 {
            return;
        }
        let Some(slot) = self.vcpus.get(vcpu as usize) else {
            return;
        };
        if !slot.counted() {
            slot.prev.store(0, Relaxed);
            return;
        }
        // While its window is open only this vCPU's thread writes its slot (its own marks
        // included; the run's end resets it once every window has closed): plain loads and
        // stores, no locked instruction per block.
        let add = |c: &AtomicU64, n: u64| c.store(c.load(Relaxed) + n, Relaxed);
        add(&slot.insns, b.insns());
        add(&slot.blocks, 1);
        let prev = slot.prev.load(Relaxed);
        slot.prev.store(b.word(), Relaxed);
        if Block::from_word(prev).is_some_and(|p| p.unchained_to(b)) {
            add(&slot.unchained, 1);
        }
    }

    fn record(&self, slot: &Slot, vcpu: u32, model: usize, addr: u64, pc: u64, o: &Outcome) {
        let mut l = lock(&slot.local);
        if l.tx.len() < self.models.len() {
            l.tx.resize(self.models.len(), Transactions::default());
            l.hot.resize_with(self.models.len(), HashMap::new);
        }
        let cross = o
            .from
            .is_some_and(|f| self.sockets.get(f as usize) != self.sockets.get(vcpu as usize));
        let add = |t: &mut Transactions| {
            match o.kind {
                Some(Kind::ReadHitm) => t.read_hitm += 1,
                Some(Kind::RfoHitm) => t.rfo_hitm += 1,
                Some(Kind::Upgrade) => t.upgrades += 1,
                None => {}
            }
            t.invalidations += u64::from(o.invalidations);
            t.cross_socket += u64::from(cross);
        };
        add(&mut l.tx[model]);
        let h = l.hot[model].entry(addr).or_default();
        add(&mut h.counts);
        h.vcpus |= o.peers | 1 << vcpu;
        *h.pcs.entry(pc).or_default() += 1;
    }

    fn on_mark(&self, vcpu: u32, mark: Mark) {
        let mut run = lock(&self.run);
        match mark {
            Mark::RunBegin => {
                self.finish(&mut run, false);
                for m in &self.models {
                    m.clear();
                }
                let n = run.next;
                run.next += 1;
                run.current = Some((n, Instant::now()));
            }
            Mark::RunEnd => self.finish(&mut run, true),
            Mark::WindowPause | Mark::WindowResume => {
                if let Some(slot) = self.vcpus.get(vcpu as usize) {
                    slot.paused.store(mark == Mark::WindowPause, Relaxed);
                    slot.prev.store(0, Relaxed);
                }
            }
            Mark::WindowBegin | Mark::WindowEnd => {
                let (Some((_, t0)), Some(slot)) = (run.current, self.vcpus.get(vcpu as usize))
                else {
                    return;
                };
                let now = t0.elapsed().as_nanos() as u64;
                let open = mark == Mark::WindowBegin;
                slot.paused.store(false, Relaxed);
                slot.prev.store(0, Relaxed);
                if slot.in_window.swap(open, Relaxed) == open {
                    return;
                }
                let mut l = lock(&slot.local);
                if open {
                    l.window = Some((now, None));
                    self.open.fetch_add(1, Relaxed);
                } else {
                    if let Some(w) = &mut l.window {
                        w.1 = Some(now);
                    }
                    self.open.fetch_sub(1, Relaxed);
                }
            }
        }
    }

    /// Reports the run in progress, if any (at QEMU's exit: incomplete).
    pub fn exit(&self) {
        let mut run = lock(&self.run);
        self.finish(&mut run, false);
    }

    fn finish(&self, run: &mut RunState, complete: bool) {
        let Some((n, t0)) = run.current.take() else {
            return;
        };
        let end = t0.elapsed().as_nanos() as u64;
        self.open.store(0, Relaxed);
        let mut report = RunReport {
            run: n,
            complete,
            vcpus: Vec::new(),
            windows: Vec::new(),
            overlap: None,
            models: self
                .models
                .iter()
                .map(|m| ModelReport {
                    line_bytes: m.geometry().line_bytes,
                    per_vcpu: Vec::new(),
                    hot: Vec::new(),
                })
                .collect(),
        };
        let mut hot: Vec<HashMap<u64, HotAcc>> =
            self.models.iter().map(|_| HashMap::new()).collect();
        for (v, slot) in self.vcpus.iter().enumerate() {
            slot.in_window.store(false, Relaxed);
            slot.paused.store(false, Relaxed);
            let mut l = std::mem::take(&mut *lock(&slot.local));
            let acc = VcpuAccesses {
                vcpu: v as u32,
                loads: slot.loads.swap(0, Relaxed),
                stores: slot.stores.swap(0, Relaxed),
                rmws: slot.rmws.swap(0, Relaxed),
                insns: slot.insns.swap(0, Relaxed),
                blocks: slot.blocks.swap(0, Relaxed),
                unchained: slot.unchained.swap(0, Relaxed),
                rmw_sites: rmw_sites(std::mem::take(&mut l.rmw_pcs)),
            };
            let Some((begin, closed)) = l.window else {
                continue;
            };
            report.windows.push(Window {
                vcpu: v as u32,
                begin_ns: begin,
                end_ns: closed,
            });
            report.vcpus.push(acc);
            l.tx.resize(self.models.len(), Transactions::default());
            l.hot.resize_with(self.models.len(), HashMap::new);
            for (k, m) in report.models.iter_mut().enumerate() {
                m.per_vcpu.push(Transactions {
                    vcpu: v as u32,
                    ..l.tx[k].clone()
                });
                for (addr, h) in l.hot[k].drain() {
                    let into = hot[k].entry(addr).or_default();
                    into.counts.add(&h.counts);
                    into.vcpus |= h.vcpus;
                    for (pc, c) in h.pcs {
                        *into.pcs.entry(pc).or_default() += c;
                    }
                }
            }
        }
        report.overlap = overlap(&report.windows, end);
        for (k, m) in report.models.iter_mut().enumerate() {
            m.hot = top_lines(std::mem::take(&mut hot[k]), self.top);
        }
        // A write that fails leaves the runner without this run: it reports the gap.
        let _ = self.write(&Line::Run(report));
    }
}

/// All-open time over any-open time of `windows` (an unclosed window ends at `end`).
fn overlap(windows: &[Window], end: u64) -> Option<f64> {
    let first = windows.iter().map(|w| w.begin_ns).min()?;
    let last_begin = windows.iter().map(|w| w.begin_ns).max()?;
    let ends = windows.iter().map(|w| w.end_ns.unwrap_or(end));
    let (first_end, last_end) = (ends.clone().min()?, ends.max()?);
    let any = last_end.saturating_sub(first);
    if any == 0 {
        return Some(1.0);
    }
    Some(first_end.saturating_sub(last_begin) as f64 / any as f64)
}

/// `pcs` as sites, most RMWs first (then by address).
fn rmw_sites(pcs: HashMap<u64, u64>) -> Vec<RmwSite> {
    let mut sites: Vec<RmwSite> = pcs
        .into_iter()
        .map(|(pc, count)| RmwSite { pc, count })
        .collect();
    sites.sort_by(|a, b| b.count.cmp(&a.count).then(a.pc.cmp(&b.pc)));
    sites
}

fn top_lines(hot: HashMap<u64, HotAcc>, top: usize) -> Vec<HotLine> {
    let weight = |t: &Transactions| t.transfers() + t.upgrades;
    let mut lines: Vec<HotLine> = hot
        .into_iter()
        .map(|(addr, h)| {
            let mut pcs: Vec<PcCount> = h
                .pcs
                .into_iter()
                .map(|(pc, transactions)| PcCount { pc, transactions })
                .collect();
            pcs.sort_by(|a, b| b.transactions.cmp(&a.transactions).then(a.pc.cmp(&b.pc)));
            pcs.truncate(8);
            HotLine {
                addr,
                counts: h.counts,
                vcpus: (0..64).filter(|v| h.vcpus >> v & 1 == 1).collect(),
                pcs,
            }
        })
        .collect();
    lines.sort_by(|a, b| {
        weight(&b.counts)
            .cmp(&weight(&a.counts))
            .then(a.addr.cmp(&b.addr))
    });
    lines.truncate(top);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::read;
    use abi::coherence::{
        RUN_BEGIN, RUN_END, WINDOW_BEGIN, WINDOW_END, WINDOW_PAUSE, WINDOW_RESUME,
    };
    use std::sync::Arc;

    const MARK: u64 = 0x10_0000;

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            lock(&self.0).extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn tracker(pairs: bool) -> (Tracker, Buf) {
        let mut c = Config::new(MARK, "/dev/null".into());
        c.pairs = pairs;
        c.cache_kib = 64;
        let buf = Buf::default();
        (
            Tracker::new(&c, 2, (0, 1), Box::new(buf.clone())).unwrap(),
            buf,
        )
    }

    fn block(pc: u64, insns: u32, exits: bool) -> Block {
        Block::new(pc, insns, exits).unwrap()
    }

    fn mark(t: &Tracker, vcpu: u32, offset: u64) {
        t.access(vcpu, MARK + offset, true, false, 0);
    }

    fn runs(buf: &Buf) -> Vec<RunReport> {
        read(&String::from_utf8(lock(&buf.0).clone()).unwrap())
            .unwrap()
            .1
    }

    /// Two vCPUs take turns writing `a` (vCPU 0) and `b` (vCPU 1), `n` times each.
    fn ping_pong(t: &Tracker, a: u64, b: u64, n: u32) {
        mark(t, 0, RUN_BEGIN);
        mark(t, 0, WINDOW_BEGIN);
        mark(t, 1, WINDOW_BEGIN);
        for _ in 0..n {
            t.access(0, a, true, false, 0x1111);
            t.access(1, b, true, false, 0x2222);
        }
        mark(t, 0, WINDOW_END);
        mark(t, 1, WINDOW_END);
        mark(t, 0, RUN_END);
    }

    #[test]
    fn false_sharing_moves_the_line_on_every_write_and_separate_lines_never() {
        let (t, buf) = tracker(true);
        ping_pong(&t, 0x5000, 0x5008, 100);
        ping_pong(&t, 0x5000, 0x5040, 100);
        let r = runs(&buf);
        assert_eq!(r.len(), 2);
        assert!(r[0].complete);
        let same = r[0].models[0].total();
        assert_eq!(
            same.rfo_hitm, 199,
            "every write but the first moves the line"
        );
        assert_eq!(r[0].models[0].hot[0].addr, 0x5000);
        assert_eq!(r[0].models[0].hot[0].vcpus, vec![0, 1]);
        let pcs: Vec<u64> = r[0].models[0].hot[0].pcs.iter().map(|p| p.pc).collect();
        assert_eq!(pcs.len(), 2);
        assert!(pcs.contains(&0x1111) && pcs.contains(&0x2222));
        assert_eq!(r[1].models[0].total().transfers(), 0, "64 bytes apart");
        assert_eq!(r[1].models[1].line_bytes, 128);
        assert_eq!(r[1].models[1].total().rfo_hitm, 199, "one 128-byte pair");
        assert_eq!(r[1].vcpus[0].stores, 100);
    }

    #[test]
    fn accesses_outside_windows_are_modelled_but_not_counted_and_runs_start_cold() {
        let (t, buf) = tracker(false);
        // Before any run: not even modelled.
        t.access(1, 0x7000, true, false, 0);
        mark(&t, 0, RUN_BEGIN);
        mark(&t, 0, WINDOW_BEGIN);
        // vCPU 1 outside its window writes the line; vCPU 0's read is a counted HITM.
        t.access(1, 0x7000, true, false, 0);
        t.access(0, 0x7000, false, false, 0);
        // A locked RMW by vCPU 0 on a line vCPU 1 wrote: one RFO HITM, not read + upgrade.
        t.access(1, 0x8000, true, false, 0);
        t.access(0, 0x8000, false, true, 0);
        t.access(0, 0x8000, true, true, 0);
        // Reported once, as a store, by multi-threaded TCG: vCPU 1 takes it back.
        t.access(1, 0x8000, true, true, 0);
        // Blocks run: vCPU 0's count, vCPU 1's outside its window not.
        t.executed(0, block(0x1000, 7, false));
        t.executed(1, block(0x1000, 100, false));
        t.executed(0, block(0x1000, 5, false));
        mark(&t, 0, WINDOW_END);
        t.executed(0, block(0x1000, 1000, false));
        mark(&t, 0, RUN_BEGIN);
        let r = runs(&buf);
        assert_eq!(r.len(), 1);
        assert!(!r[0].complete, "cut by the next run");
        let tx = r[0].models[0].total();
        assert_eq!((tx.read_hitm, tx.rfo_hitm, tx.upgrades), (1, 1, 0));
        assert_eq!(r[0].vcpus.len(), 1, "only vCPU 0 opened a window");
        assert_eq!(r[0].vcpus[0].rmws, 1);
        assert_eq!(r[0].vcpus.len(), 1);
        assert_eq!(r[0].vcpus[0].loads, 2);
        assert_eq!(r[0].vcpus[0].stores, 1);
        assert_eq!(
            r[0].vcpus[0].insns, 12,
            "the blocks vCPU 0 ran in its window"
        );
    }

    #[test]
    fn transitions_qemu_cannot_chain_are_counted_inside_the_window() {
        let (t, buf) = tracker(false);
        mark(&t, 0, RUN_BEGIN);
        // Before the window: its last block is no predecessor of the window's first.
        t.executed(0, block(0x5000, 4, true));
        mark(&t, 0, WINDOW_BEGIN);
        t.executed(0, block(0x1000, 4, false));
        // Same page, no exit: chained.
        t.executed(0, block(0x1100, 6, false));
        // Another page: unchained.
        t.executed(0, block(0x2000, 3, true));
        // After a return, even into the same page: unchained.
        t.executed(0, block(0x2040, 2, false));
        t.executed(0, block(0x2080, 1, false));
        mark(&t, 0, WINDOW_END);
        t.executed(0, block(0x9000, 1, false));
        mark(&t, 0, RUN_END);
        let r = runs(&buf);
        let v = &r[0].vcpus[0];
        assert_eq!((v.insns, v.blocks, v.unchained), (16, 5, 2));
        // A window opened again starts without a predecessor.
        mark(&t, 0, RUN_BEGIN);
        mark(&t, 0, WINDOW_BEGIN);
        t.executed(0, block(0x7000, 1, false));
        t.executed(0, block(0x7010, 1, false));
        mark(&t, 0, WINDOW_END);
        mark(&t, 0, RUN_END);
        let r = runs(&buf);
        assert_eq!((r[1].vcpus[0].blocks, r[1].vcpus[0].unchained), (2, 0));
    }

    #[test]
    fn each_locked_rmw_is_kept_by_its_instruction_inside_the_window() {
        let (t, buf) = tracker(false);
        mark(&t, 0, RUN_BEGIN);
        // Before the window: not a site.
        t.access(0, 0x7000, true, true, 0xdead);
        mark(&t, 0, WINDOW_BEGIN);
        for _ in 0..3 {
            t.access(0, 0x7000, true, true, 0x1010);
        }
        // The load half of an RMW TCG reports in two halves, and a plain store: no site.
        t.access(0, 0x7000, false, true, 0x2020);
        t.access(0, 0x7000, true, true, 0x2020);
        t.access(0, 0x7040, true, false, 0x3030);
        mark(&t, 0, WINDOW_PAUSE);
        t.access(0, 0x7000, true, true, 0x4040);
        mark(&t, 0, WINDOW_RESUME);
        mark(&t, 0, WINDOW_END);
        mark(&t, 0, RUN_END);
        let r = runs(&buf);
        let v = &r[0].vcpus[0];
        assert_eq!(v.rmws, 4);
        assert_eq!(
            v.rmw_sites,
            vec![
                RmwSite {
                    pc: 0x1010,
                    count: 3
                },
                RmwSite {
                    pc: 0x2020,
                    count: 1
                }
            ],
            "most first, and they add up to the window's RMWs"
        );
        // The next run starts with none.
        mark(&t, 0, RUN_BEGIN);
        mark(&t, 0, WINDOW_BEGIN);
        mark(&t, 0, WINDOW_END);
        mark(&t, 0, RUN_END);
        assert!(runs(&buf)[1].vcpus[0].rmw_sites.is_empty());
    }

    #[test]
    fn a_paused_window_is_modelled_but_counts_nothing() {
        let (t, buf) = tracker(false);
        mark(&t, 0, RUN_BEGIN);
        mark(&t, 0, WINDOW_BEGIN);
        mark(&t, 1, WINDOW_BEGIN);
        t.executed(0, block(0x1000, 10, false));
        t.access(0, 0x7000, true, true, 0);
        mark(&t, 0, WINDOW_PAUSE);
        // vCPU 0's untimed work: 1000 instructions and a write to the line vCPU 1 reads
        // next, none of it counted for vCPU 0, but the line it wrote moves to vCPU 1.
        t.executed(0, block(0x2000, 1000, false));
        t.access(0, 0x7000, true, true, 0);
        t.access(0, 0x8000, false, false, 0);
        // vCPU 1 is not paused.
        t.executed(1, block(0x1000, 3, false));
        t.access(1, 0x7000, false, false, 0);
        mark(&t, 0, WINDOW_RESUME);
        t.executed(0, block(0x3000, 5, false));
        mark(&t, 0, WINDOW_END);
        mark(&t, 1, WINDOW_END);
        mark(&t, 0, RUN_END);
        let r = runs(&buf);
        let v = |n: u32| r[0].vcpus.iter().find(|x| x.vcpu == n).unwrap();
        assert_eq!(
            (v(0).insns, v(0).rmws, v(0).stores, v(0).loads),
            (15, 1, 1, 0)
        );
        // Two blocks counted, in different pages, but the resumed window's first block has
        // no transition: the one before it ran paused.
        assert_eq!((v(0).blocks, v(0).unchained), (2, 0));
        assert_eq!((v(1).insns, v(1).loads), (3, 1));
        assert_eq!(
            r[0].models[0].total().read_hitm,
            1,
            "the paused vCPU's write still moved the line"
        );
    }

    #[test]
    fn one_cpu_alone_moves_nothing() {
        let (t, buf) = tracker(true);
        mark(&t, 0, RUN_BEGIN);
        mark(&t, 0, WINDOW_BEGIN);
        for i in 0..1000u64 {
            t.access(0, 0x9000 + (i % 64) * 8, i % 3 == 0, false, 0);
        }
        mark(&t, 0, WINDOW_END);
        mark(&t, 0, RUN_END);
        let r = runs(&buf);
        assert!(
            r[0].models
                .iter()
                .all(|m| m.total() == Transactions::default())
        );
        assert_eq!(r[0].overlap, Some(1.0));
    }

    #[test]
    fn overlap_is_the_shared_time_over_the_whole() {
        let w = |vcpu, b, e| Window {
            vcpu,
            begin_ns: b,
            end_ns: Some(e),
        };
        assert_eq!(overlap(&[w(0, 0, 100), w(1, 0, 100)], 100), Some(1.0));
        assert_eq!(
            overlap(&[w(0, 0, 100), w(1, 50, 150)], 150),
            Some(50.0 / 150.0)
        );
        assert_eq!(overlap(&[w(0, 0, 10), w(1, 20, 30)], 30), Some(0.0));
        assert_eq!(overlap(&[], 0), None);
    }
}

#[cfg(test)]
mod concurrent {
    use super::*;
    use abi::coherence::{RUN_BEGIN, RUN_END, WINDOW_BEGIN, WINDOW_END};
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn two_threads_passing_a_counter_move_it_on_every_increment() {
        const MARK: u64 = 0x10_0000;
        let mut c = Config::new(MARK, "/dev/null".into());
        c.pairs = false;
        let t = Arc::new(Tracker::new(&c, 2, (0, 1), Box::new(std::io::sink())).unwrap());
        let counter = Arc::new(AtomicU64::new(0));
        t.access(0, MARK + RUN_BEGIN, true, false, 0);
        let hs: Vec<_> = (0..2u32)
            .map(|v| {
                let (t, counter) = (t.clone(), counter.clone());
                std::thread::spawn(move || {
                    t.access(v, MARK + WINDOW_BEGIN, true, false, 0);
                    loop {
                        let x = counter.load(Relaxed);
                        t.access(v, 0x5000, false, false, 1);
                        if x >= 20000 {
                            break;
                        }
                        if x % 2 == u64::from(v) {
                            counter.fetch_add(1, Relaxed);
                            t.access(v, 0x5000, true, true, 2);
                        }
                    }
                    t.access(v, MARK + WINDOW_END, true, false, 0);
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let tx: u64 = t
            .vcpus
            .iter()
            .map(|s| {
                let l = lock(&s.local);
                l.tx.first().map_or(0, |t| t.transfers())
            })
            .sum();
        t.access(0, MARK + RUN_END, true, false, 0);
        assert!(tx > 18000, "{tx} transfers for 20000 hand-overs");
    }
}
