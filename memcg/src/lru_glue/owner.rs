//! Who owns the frames of a tree's folios: the layer above memcg, as memcg and the LRU call
//! it.
//!
//! memcg decides which folios reclaim evicts and when a folio's last reference drops inside
//! memcg or lru, but the frames are the page allocator's, and unmapping a folio goes
//! through the address spaces: all of that is the kernel's (`mm::Vm`). The tree is
//! generic over its owner ([`FolioOwner`]), which it holds by value, and every call hands
//! the owner the tree it works on, so the owner never points back at what contains it:
//!
//! - [`FolioOwner::evict_folio`], reclaim's free hook: unmap the isolated folio through
//!   the reverse map, freeze its count, store the shadow entry; or say it is busy.
//! - [`FolioOwner::free_evicted`]: the frames of one reclaim batch's evicted folios, once
//!   memcg has uncharged them (`shrink_folio_list()` ends with `free_unref_folios()`).
//! - [`FolioOwner::release_folio`]: `__folio_put`, for a folio whose last reference a folio
//!   batch or reclaim's putback dropped (the LRU code reaches it as [`lru::FolioRelease`],
//!   which the tree implements).
//!
//! Trees whose folios are not frames (memcg's tests and examples) use [`FolioHooks`], an
//! owner made of closures.
//!
//! The trait is generic over the type of the tree it is handed (`T`: a tree of per-node
//! structs `P` holding owner `O` requires `O: FolioOwner<MemcgTree<P, O>>`), so this file
//! names no tree and sits below it: the tree is built on its owner's contract, not the
//! other way round. The kernel's owner implements it for the tree it is held by;
//! [`FolioHooks`] for any tree, since its closures ignore it.

use alloc::boxed::Box;
use lru::{Folio, Shadow};

/// What the owner did with a reclaimed folio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a busy folio must be put back on its LRU"]
pub enum FolioFree {
    /// Unmapped, frozen and freed: the frame is gone, the shadow is stored.
    Freed,
    /// Unmapped and frozen, the shadow stored, the frame not freed yet: memcg hands every
    /// such folio of the reclaim batch to [`FolioOwner::free_evicted`] at once after
    /// uncharging them, as `shrink_folio_list()` collects `free_folios` for
    /// `mem_cgroup_uncharge_folios()` and `free_unref_folios()`.
    Frozen,
    /// Busy (mapped again, or a reference could not be frozen): the folio stays.
    Busy,
}

/// The owner of a tree's frames, for trees of type `T`; see the module documentation. Each
/// method gets the tree it is called for.
pub trait FolioOwner<T: ?Sized>: Sized + Send + Sync {
    /// `__folio_put`: `folio`'s last reference dropped (on `cpu`) inside memcg or lru. Take
    /// it off its LRU if it is on one, uncharge it and free its frame.
    fn release_folio(&self, tree: &T, cpu: usize, folio: &'static Folio);

    /// Reclaim's free hook: evict the isolated `folio` with `shadow`. It arrives holding the
    /// reference reclaim took to isolate it: [`FolioFree::Freed`] and [`FolioFree::Frozen`]
    /// mean the owner consumed it; after [`FolioFree::Busy`] memcg puts the folio back and
    /// drops it.
    fn evict_folio(&self, tree: &T, cpu: usize, folio: &'static Folio, shadow: Shadow)
    -> FolioFree;

    /// The folios [`Self::evict_folio`] returned [`FolioFree::Frozen`] for in one reclaim
    /// batch, already uncharged: free their frames.
    fn free_evicted(&self, tree: &T, cpu: usize, folios: &[&'static Folio]);
}

/// Reclaim's free hook as a closure: (`cpu`, folio, its shadow entry).
pub type FolioFreeFn = Box<dyn Fn(usize, &'static Folio, Shadow) -> FolioFree + Send + Sync>;

/// The free-batch step as a closure: (`cpu`, the folios the free hook returned
/// [`FolioFree::Frozen`] for in one reclaim batch, already uncharged).
pub type FolioFreeBatchFn = Box<dyn Fn(usize, &[&'static Folio]) + Send + Sync>;

/// `__folio_put` as a closure: (`cpu`, the folio whose last reference dropped).
pub type FolioReleaseFn = Box<dyn Fn(usize, &'static Folio) + Send + Sync>;

/// An owner made of closures, for trees whose folios are not frames (memcg's tests and
/// examples): the closures own whatever they count into, so nothing points back at the
/// tree. Without a release closure a released folio is simply gone.
pub struct FolioHooks {
    free_folio: FolioFreeFn,
    free_batch: Option<FolioFreeBatchFn>,
    release: Option<FolioReleaseFn>,
}

impl core::fmt::Debug for FolioHooks {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FolioHooks")
            .field("free_batch", &self.free_batch.is_some())
            .field("release", &self.release.is_some())
            .finish()
    }
}

impl FolioHooks {
    /// Reclaimed folios go to `free_folio`.
    #[must_use]
    pub fn new(free_folio: FolioFreeFn) -> Self {
        FolioHooks {
            free_folio,
            free_batch: None,
            release: None,
        }
    }

    /// The frames of folios `free_folio` returned [`FolioFree::Frozen`] for go to
    /// `free_batch`, one call per reclaim batch.
    #[must_use]
    pub fn with_free_batch(mut self, free_batch: FolioFreeBatchFn) -> Self {
        self.free_batch = Some(free_batch);
        self
    }

    /// Folios whose last reference drops inside memcg or lru go to `release`.
    #[must_use]
    pub fn with_release(mut self, release: FolioReleaseFn) -> Self {
        self.release = Some(release);
        self
    }
}

impl<T: ?Sized> FolioOwner<T> for FolioHooks {
    fn release_folio(&self, _tree: &T, cpu: usize, folio: &'static Folio) {
        if let Some(release) = &self.release {
            release(cpu, folio);
        }
    }

    fn evict_folio(
        &self,
        _tree: &T,
        cpu: usize,
        folio: &'static Folio,
        shadow: Shadow,
    ) -> FolioFree {
        (self.free_folio)(cpu, folio, shadow)
    }

    fn free_evicted(&self, _tree: &T, cpu: usize, folios: &[&'static Folio]) {
        debug_assert!(
            self.free_batch.is_some(),
            "a free hook returned Frozen without a free-batch hook"
        );
        if let Some(free_batch) = &self.free_batch {
            free_batch(cpu, folios);
        }
    }
}
