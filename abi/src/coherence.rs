//! The marks through which the kernel tells the coherence plugin (`coherence/plugin`) where
//! its measured windows are.
//!
//! QEMU's plugin API version 1 shows a plugin every guest memory access with the vCPU that
//! made it and its physical address, but neither registers nor the value stored. So the
//! kernel signals by *where* it stores: it owns one page-aligned page, exported under the
//! symbol [`MARK_SYMBOL`] (the kernel image is linked and loaded at its physical address, so
//! the symbol's value is the page's physical address), and a store to one of the offsets
//! below is a mark. The runner reads the symbol from the kernel ELF and passes the address
//! to the plugin (`mark=0x...`); the plugin leaves every access to the page out of its model.
//!
//! A *run* is what one `run` record of the benchmark reports (or one known-answer test):
//! [`RUN_BEGIN`] is stored once, by the CPU that starts the workers, before any of them
//! opens its window; [`RUN_END`] after every worker returned. Inside a run each worker CPU
//! stores [`WINDOW_BEGIN`] right before its first measured operation and [`WINDOW_END`]
//! after its last: the plugin counts only what a vCPU does between its own two marks.
//! Inside its window a worker stores [`WINDOW_PAUSE`] before work the seed's benchmark does
//! not time (pft's unmap, done with the worker's clock paused) and [`WINDOW_RESUME`] after
//! it: the plugin keeps modelling that work's accesses (they move lines) but counts none of
//! it for the vCPU. Runs
//! are numbered by the plugin in the order their [`RUN_BEGIN`]s arrive, so the n-th run the
//! plugin reports is the n-th `run` record on serial.
//!
//! Each mark has its own 64-byte line, so marks by different CPUs never share one.

/// The symbol of the kernel's mark page.
pub const MARK_SYMBOL: &str = "KX_COHERENCE_MARK";
/// Size of the mark page in bytes.
pub const MARK_SIZE: u64 = 4096;
/// A run begins (stored by the CPU that starts the workers).
pub const RUN_BEGIN: u64 = 0x000;
/// The storing vCPU's measured window opens.
pub const WINDOW_BEGIN: u64 = 0x040;
/// The storing vCPU's measured window closes.
pub const WINDOW_END: u64 = 0x080;
/// The run ended (every worker returned).
pub const RUN_END: u64 = 0x0c0;
/// The storing vCPU starts untimed work inside its window: nothing it does counts.
pub const WINDOW_PAUSE: u64 = 0x100;
/// The storing vCPU's untimed work is done: it counts again.
pub const WINDOW_RESUME: u64 = 0x140;

/// What a store at `offset` into the mark page means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// [`RUN_BEGIN`].
    RunBegin,
    /// [`WINDOW_BEGIN`].
    WindowBegin,
    /// [`WINDOW_END`].
    WindowEnd,
    /// [`RUN_END`].
    RunEnd,
    /// [`WINDOW_PAUSE`].
    WindowPause,
    /// [`WINDOW_RESUME`].
    WindowResume,
}

impl Mark {
    /// The mark a store at `offset` makes (`None`: no mark; the offset is ignored).
    #[must_use]
    pub fn at(offset: u64) -> Option<Mark> {
        match offset {
            RUN_BEGIN => Some(Mark::RunBegin),
            WINDOW_BEGIN => Some(Mark::WindowBegin),
            WINDOW_END => Some(Mark::WindowEnd),
            RUN_END => Some(Mark::RunEnd),
            WINDOW_PAUSE => Some(Mark::WindowPause),
            WINDOW_RESUME => Some(Mark::WindowResume),
            _ => None,
        }
    }

    /// The offset of this mark.
    #[must_use]
    pub fn offset(self) -> u64 {
        match self {
            Mark::RunBegin => RUN_BEGIN,
            Mark::WindowBegin => WINDOW_BEGIN,
            Mark::WindowEnd => WINDOW_END,
            Mark::RunEnd => RUN_END,
            Mark::WindowPause => WINDOW_PAUSE,
            Mark::WindowResume => WINDOW_RESUME,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mark_has_its_own_line_and_round_trips() {
        let all = [
            Mark::RunBegin,
            Mark::WindowBegin,
            Mark::WindowEnd,
            Mark::RunEnd,
            Mark::WindowPause,
            Mark::WindowResume,
        ];
        for (i, m) in all.iter().enumerate() {
            assert_eq!(Mark::at(m.offset()), Some(*m));
            assert!(m.offset() + 64 <= MARK_SIZE);
            for n in &all[i + 1..] {
                assert_ne!(
                    m.offset() / 64,
                    n.offset() / 64,
                    "{m:?} and {n:?} share a line"
                );
            }
        }
        assert_eq!(Mark::at(0x8), None);
    }
}
