//! Reading an object without mapping it.
//!
//! Models mm/filemap.c's `filemap_read` (`filemap_get_pages` -> `filemap_get_folio`, or on
//! a miss `page_cache_sync_readahead` of one page; then `folio_mark_accessed` and the copy
//! out). Truncation is `vm/truncate.rs`.
//!
//! A hit marks the folio accessed (`folio_mark_accessed`): under MGLRU that climbs its
//! reference count (its tier); on classic lists a second access of a referenced inactive
//! folio activates it through this CPU's `activate` batch. So a stream read twice, as
//! seed 004's readtwice does, activates its pages the second time. A miss reads the page
//! from the backing store into a new folio charged to the reader's memcg (reclaiming from
//! it first when it is at `memory.max`) and puts it on the inactive list / an old
//! generation; a shadow in the slot makes it a refault, counted, but never activated here
//! (only refaults in the fault path activate). The copy out is a pass over the page; with
//! `verify` the contents are checked against the backing store.

use crate::backing;
use crate::context::Vm;
use crate::counters::VmEvent;
use crate::fault::FaultError;
use crate::object::{Object, ObjectKind};
use crate::pgtable::Mmu;
use lru::FolioFlags;
use lru::NodeId;
use memcg::{MemCgroup, MemCgroupPerNode};

/// A page's contents did not match the backing store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt {
    /// The object.
    pub object: u64,
    /// The page.
    pub index: u64,
    /// The first wrong word.
    pub word: usize,
}

/// Why a read failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// The page could not be brought in.
    Fault(FaultError),
    /// It was brought in, but its contents are wrong.
    Corrupt(Corrupt),
}

impl<P: MemCgroupPerNode, M: Mmu> Vm<P, M> {
    /// `filemap_read` of page `index` of `obj` by a reader charging `memcg`, on `cpu`,
    /// allocating from `node` on a miss. Returns the page's checksum (the copy out), after
    /// checking it against the backing store when `verify`.
    pub fn filemap_read(
        &self,
        obj: &Object,
        memcg: &MemCgroup<P>,
        cpu: usize,
        node: NodeId,
        index: u64,
        verify: bool,
    ) -> Result<u64, ReadError> {
        let cpu = self.cpu(cpu);
        let folio = self
            .find_or_read_page(obj, memcg, cpu, node, index, false)
            .map_err(ReadError::Fault)?;
        self.count(cpu, VmEvent::FileRead);
        self.mark_accessed(cpu, folio);
        let words = self.frame_words(folio);
        let sum = words.iter().fold(0u64, |a, &w| a.wrapping_add(w));
        let res = if verify && obj.kind() == ObjectKind::File {
            self.count(cpu, VmEvent::Verified);
            backing::verify(obj.id(), index, words).map_err(|word| {
                ReadError::Corrupt(Corrupt {
                    object: obj.id(),
                    index,
                    word,
                })
            })
        } else {
            Ok(())
        };
        self.folio_put(cpu, folio);
        res.map(|()| sum)
    }

    /// `folio_mark_accessed`.
    fn mark_accessed(&self, cpu: usize, folio: &'static lru::Folio) {
        if self.tree.lru().mglru() {
            // lru_gen_inc_refs: the tier climbs; aging and eviction act on it later.
            folio.mark_accessed();
        } else if !folio.test(FolioFlags::ACTIVE) && folio.test(FolioFlags::REFERENCED) {
            // Second access of a referenced inactive folio: activate it.
            folio.clear(FolioFlags::REFERENCED);
            if folio.test(FolioFlags::LRU) && !folio.test(FolioFlags::UNEVICTABLE) {
                self.count(cpu, VmEvent::Activate);
            }
            ksync::warn_on_once!(
                lru::MoveStats::failed(&self.batches.folio_activate(cpu, folio, &self.tree)),
                "folio_mark_accessed: queueing a folio for activation failed"
            );
        } else {
            folio.set(FolioFlags::REFERENCED);
        }
    }
}
