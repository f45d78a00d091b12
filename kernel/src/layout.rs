//! `run=layout`: the pahole-style cacheline report of the lru and memcg structures, as this
//! kernel instantiates them (every lock is ksync's four-byte ticket lock of its class, the
//! [`ksync::Ticket`] family the host tests and benchmarks use too).
//!
//! Sizes and offsets depend on the lock type, so the report printed here, not the host's, is
//! the one that describes what the benchmark runs on.

use crate::console::ConsoleWriter;
use abi::ExitCode;
use ksync::Ticket;

/// Prints the report; a formatting error would mean the console failed.
pub fn print() -> ExitCode {
    let mut w = ConsoleWriter;
    let lru = lru::layout::report_with::<Ticket>(&mut w);
    let memcg = memcg::pn::layout::report_with::<Ticket, lru::LruGenFolioGrouped>(&mut w);
    match (lru, memcg) {
        (Ok(()), Ok(())) => ExitCode::Success,
        _ => ExitCode::TestFailure,
    }
}
