//! Frames a failed TLB flush may have left cached: kept, never freed, until a flush succeeds.
//!
//! Linux's TLB flushes cannot fail, so `tlb_finish_mmu` frees the gathered pages and
//! `free_pgtables` the table frames right after flushing. Here a flush can fail: the platform
//! may be unable to send a shootdown IPI (an xAPIC destination above 255), or be asked to
//! shoot down from inside its own shootdown ([`crate::pgtable::PtError::Flush`]). Then
//! another CPU may still translate through what the unmap just cleared: a data page through
//! its stale TLB entry, or a whole page-table frame through its paging-structure cache.
//! Reused by the allocator, that frame would be read and written through the stale
//! translation. So such frames are kept here instead:
//!
//! - [`Kept::Ref`]: a page's reference that its PTE held (the mapcount is already gone); let
//!   go with `folio_put`, which frees the page if that was the last reference;
//! - [`Kept::Table`]: a page-table frame, already unlinked; let go to the page allocator.
//!
//! The `Vm` lets everything go after the next flush of every CPU it serves that succeeds
//! ([`crate::pgtable::Mmu::flush_tlb_all`]): it tries at the end of every unmap's flush
//! and every `exit_mmap`, and only while something is kept (one load of a counter
//! otherwise, a line nobody writes on the fast path). The counts (kept, released, leaked)
//! are the `Vm`'s ([`crate::context::Vm::tlb_kept`]); the platform warns once when a real
//! flush fails, as Linux's `VM_WARN_ONCE` would (an injected failure does not warn: the
//! runs that inject would otherwise fail their checks on it). A keep that cannot allocate
//! room in the list leaks the frame for good (counted): leaking a frame is safe, reusing it
//! is not.
//!
//! The list's lock is a leaf: nothing is taken under it but the allocator's own locks when
//! the list grows, and what is let go is released after the lock is dropped.

use crate::lock_classes::TlbKeptLock;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use ksync::SpinMutex;
use lru::Folio;

/// One frame kept after a failed flush.
#[derive(Debug, Clone, Copy)]
pub enum Kept {
    /// A reference on a page that a cleared PTE mapped.
    Ref(&'static Folio),
    /// An unlinked page-table frame.
    Table(&'static Folio),
}

/// What has been kept so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TlbKeptStats {
    /// Frames kept after a failed flush.
    pub kept: u64,
    /// Of those, let go after a later flush succeeded.
    pub released: u64,
    /// Frames leaked for good (no room to keep them).
    pub leaked: u64,
    /// Kept now.
    pub now: usize,
}

/// The frames of one `Vm` kept after failed flushes; see the module documentation.
pub struct TlbKept {
    nr: AtomicUsize,
    list: SpinMutex<TlbKeptLock, Vec<Kept>>,
    kept: AtomicU64,
    released: AtomicU64,
    leaked: AtomicU64,
}

impl core::fmt::Debug for TlbKept {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TlbKept")
            .field("stats", &self.stats())
            .finish()
    }
}

impl Default for TlbKept {
    fn default() -> Self {
        Self::new()
    }
}

impl TlbKept {
    /// Nothing kept.
    #[must_use]
    pub fn new() -> Self {
        TlbKept {
            nr: AtomicUsize::new(0),
            list: SpinMutex::new(Vec::new()),
            kept: AtomicU64::new(0),
            released: AtomicU64::new(0),
            leaked: AtomicU64::new(0),
        }
    }

    /// Keeps `k` until a flush succeeds (or leaks it for good when the list cannot grow).
    pub fn keep(&self, k: Kept) {
        self.kept.fetch_add(1, Ordering::Relaxed);
        self.restore(k);
    }

    /// Whether nothing is kept (the fast path's only look at this structure).
    #[inline]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.nr.load(Ordering::Acquire) == 0
    }

    /// Takes everything kept, for the caller to let go after its flush succeeded. Call
    /// [`TlbKept::released`] with how many were let go.
    #[must_use]
    pub fn take(&self) -> Vec<Kept> {
        let mut list = self.list.lock();
        self.nr.store(0, Ordering::Release);
        core::mem::take(&mut *list)
    }

    /// Puts back a frame [`TlbKept::take`] took, whose flush failed again (not counted
    /// again as kept; leaked for good when the list cannot grow).
    pub fn restore(&self, k: Kept) {
        let mut list = self.list.lock();
        if list.try_reserve(1).is_err() {
            self.leaked.fetch_add(1, Ordering::Relaxed);
            return;
        }
        list.push(k);
        self.nr.store(list.len(), Ordering::Release);
    }

    /// Counts `n` kept frames let go.
    pub fn released(&self, n: usize) {
        self.released.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The counts so far.
    #[must_use]
    pub fn stats(&self) -> TlbKeptStats {
        TlbKeptStats {
            kept: self.kept.load(Ordering::Relaxed),
            released: self.released.load(Ordering::Relaxed),
            leaked: self.leaked.load(Ordering::Relaxed),
            now: self.nr.load(Ordering::Acquire),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pgtable::tests::frame;

    #[test]
    fn keeps_until_taken_and_counts() {
        let k = TlbKept::new();
        assert!(k.is_empty());
        k.keep(Kept::Ref(frame(1)));
        k.keep(Kept::Table(frame(2)));
        assert!(!k.is_empty());
        assert_eq!(
            k.stats(),
            TlbKeptStats {
                kept: 2,
                released: 0,
                leaked: 0,
                now: 2
            }
        );
        let taken = k.take();
        assert!(
            matches!(taken[..], [Kept::Ref(a), Kept::Table(b)] if a.pfn() == 1 && b.pfn() == 2)
        );
        assert!(k.is_empty());
        k.released(taken.len());
        assert_eq!(
            k.stats(),
            TlbKeptStats {
                kept: 2,
                released: 2,
                leaked: 0,
                now: 0
            }
        );
    }
}
