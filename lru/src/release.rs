//! Releasing a folio whose last reference was dropped (`__folio_put`), and who does it.
//!
//! The LRU code drops folio references in two places where the reference may be the last:
//! a folio batch's `folios_put` after a move (lru/src/swap.rs) and reclaim putting back a
//! folio it had isolated and could not evict (a truncation may have raced with it). Linux
//! then runs `__folio_put()`: the folio leaves its LRU, is uncharged and its frame goes back
//! to the page allocator. None of that is this crate's: the frames belong to the layer
//! above (the kernel's page allocator, reached through memcg), which implements
//! [`FolioRelease`] and is handed to the code that may drop the last reference, at the call
//! ([`folio_put`]). Nothing is installed in the nodes and nothing points back up.
//!
//! Folios that are not frames (this crate's own tests and models) have nothing to
//! release: `()` is the releaser that lets the last reference go.

use crate::error::LruError;
use crate::folio::Folio;

/// What happens to a folio whose last reference was just dropped (`__folio_put`).
pub trait FolioRelease {
    /// `folio`'s last reference is gone (on `cpu`): take it off its LRU if it is on one,
    /// uncharge it and free its frame.
    fn release_folio(&self, cpu: usize, folio: &'static Folio);
}

/// Folios that are not frames: the last reference just goes.
impl FolioRelease for () {
    fn release_folio(&self, _cpu: usize, _folio: &'static Folio) {}
}

/// `folio_put()` for code that may drop the last reference: when it does, `release` gets
/// the folio. A put of an unreferenced folio is reported.
pub fn folio_put<R: FolioRelease + ?Sized>(
    release: &R,
    cpu: usize,
    folio: &'static Folio,
) -> Result<(), LruError> {
    if folio.put()? {
        release.release_folio(cpu, folio);
    }
    Ok(())
}
