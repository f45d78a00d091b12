//! `run=layout`: the pahole-style cacheline report of the lru and memcg structures, as this
//! kernel instantiates them (ksync's four-byte ticket lock as `lru_lock`).
//!
//! Sizes and offsets depend on the lock type, so the report printed here, not the host's, is
//! the one that describes what the benchmark runs on.

use crate::console::ConsoleWriter;
use abi::ExitCode;
use ksync::TicketLock;
use ksync::class::std_classes::LruLock;

/// Prints the report; a formatting error would mean the console failed.
pub fn print() -> ExitCode {
    let mut w = ConsoleWriter;
    let lru = lru::layout::report_with::<TicketLock<LruLock>>(&mut w);
    let memcg =
        memcg::pn::layout::report_with::<TicketLock<LruLock>, lru::LruGenFolioGrouped>(&mut w);
    match (lru, memcg) {
        (Ok(()), Ok(())) => ExitCode::Success,
        _ => ExitCode::TestFailure,
    }
}
