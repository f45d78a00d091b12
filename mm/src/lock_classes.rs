//! The lock classes of the fault core: the locks this crate declares, and where each sits
//! in the lock order.
//!
//! A class is what Linux's `lock_class_key` is to lockdep and lock_stat: a name, per-CPU
//! statistics and a node in the order graph (`ksync::lock_class!`). mm declares the classes
//! of the locks it owns; the page allocator's are `page_alloc::lock_classes`, memcg's and
//! the LRU's `memcg::lock_classes` and `lru::lock_classes`.
//!
//! The order of the fault path (outer first; docs/design.md, "The fault path", has it with
//! the memcg and LRU locks): `mmap_lock` → `i_pages` → `ptl` → `cpu_fbatches.lock` → the lru
//! locks; the charge runs before `ptl` is taken. `pcp->lock` → `zone->lock` are the
//! allocator's (`page_alloc::lock_classes`), and nothing else is taken under them. The
//! object's `i_mmap_rwsem` is declared with the object ([`crate::object`]). lockdep (`ksync::lockdep`) learns the order as the locks
//! are taken and reports an inversion.

ksync::lock_class!(
    /// The address space's write lock (`mmap_lock`, write side).
    pub MmapLock, "mmap_lock"
);
ksync::lock_class!(
    /// A page-cache object's tree lock (`mapping->i_pages` xa_lock).
    pub PageCacheLock, "i_pages"
);
ksync::lock_class!(
    /// A page-table page's lock (split PTE lock, `ptl`).
    pub PteLock, "ptl"
);
ksync::lock_class!(
    /// The list of frames kept after a failed TLB flush (`vm::tlb_kept`): a leaf.
    pub TlbKeptLock, "tlb_kept"
);
ksync::word_class!(
    /// A VMA's `vm_refcnt`, which every lockless fault on the region adds to and takes from
    /// (`vma_start_read`/`vma_end_read`): a shared-word class, so a run counts how often
    /// another CPU wrote it between two writes of one (`ksync::handoff`) and how often a
    /// reader's compare-and-swap lost to another CPU's write and retried (`contended`).
    pub VmRefcntWord, "vma->vm_refcnt"
);
ksync::word_class!(
    /// A VMA's `vm_lock_seq` as lockless faults check it (`vma_start_read`): its
    /// `contended` count is the readers that found it changed under them (a writer
    /// write-locked the region between their two checks) and backed off.
    pub VmLockSeqWord, "vma->vm_lock_seq"
);
