//! `run=layout`: the pahole-style cacheline report of the lru and memcg structures, as this
//! kernel instantiates them: every lock is ksync's four-byte ticket lock of its class (the
//! [`ksync::Ticket`] family), the same type the host tests and benchmarks use, so the host's
//! `layout` report and this one print the same offsets. `mem_cgroup_per_node` is printed
//! with the lruvec and its `lru_gen_folio` expanded in place, at the offsets the kernel's
//! memcgs have them, with both placements' 128-byte pair partners.

use crate::console::ConsoleWriter;
use abi::ExitCode;

/// Prints the report; a formatting error would mean the console failed.
pub fn print() -> ExitCode {
    let mut w = ConsoleWriter;
    let lru = lru::layout_report::report(&mut w);
    let memcg = memcg::pn::layout::report(&mut w);
    match (lru, memcg) {
        (Ok(()), Ok(())) => ExitCode::Success,
        _ => ExitCode::TestFailure,
    }
}
