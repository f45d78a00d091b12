//! `run=layout`: the pahole-style cacheline report of the lru and memcg structures, as this
//! kernel instantiates them (its statistics-counting ticket lock as `lru_lock`).
//!
//! Sizes and offsets depend on the lock type, so the report printed here, not the host's, is
//! the one that describes what the benchmark runs on.

use crate::console::ConsoleWriter;
use crate::sync::TicketLock;
use abi::ExitCode;

/// Prints the report; a formatting error would mean the console failed.
pub fn print() -> ExitCode {
    let mut w = ConsoleWriter;
    let lru = lru::layout::report_with::<TicketLock>(&mut w);
    let memcg = memcg::pn::layout::report_with::<TicketLock, lru::LruGenFolioGrouped>(&mut w);
    match (lru, memcg) {
        (Ok(()), Ok(())) => ExitCode::Success,
        _ => ExitCode::TestFailure,
    }
}
