//! `struct vm_area_struct` in the two layouts of seed 003, compiled side by side.
//!
//! A region of an address space: `[vm_start, vm_end)`, its flags, what backs it (anonymous
//! memory or a page-cache object at `vm_pgoff`), the memcg its pages are charged to, and the
//! two fields of the per-VMA lock: `vm_lock_seq` (equal to the address space's
//! `mm_lock_seq` while a writer holds the region) and `vm_refcnt` (readers, plus the
//! attached bit). Field order and cache lines are Linux 6.14's after Suren Baghdasaryan's
//! repacking (include/linux/mm_types.h), 192 bytes in three lines:
//!
//! - line 0: `vm_start`, `vm_end`, `vm_mm`, `vm_page_prot`, `vm_flags`, (A: `vm_lock_seq`),
//!   `anon_vma_chain` — read by every fault;
//! - line 1: `anon_vma`, `vm_ops`, `vm_pgoff`, `vm_file`, `vm_private_data`,
//!   `swap_readahead_info`, `vm_policy`, `numab_state`;
//! - line 2 (64-byte aligned): `vm_refcnt` (written twice by every fault), (B:
//!   `vm_lock_seq`), `shared.rb`, `rb_subtree_last`, `anon_name`, `vm_userfaultfd_ctx`.
//!
//! [`VmAreaA`] keeps `vm_lock_seq` in line 0, as Linux does; [`VmAreaB`] moves it next to
//! `vm_refcnt`, the change Peter Zijlstra suggested and Suren measured: `vma_start_read`
//! checks `vm_lock_seq` before it touches `vm_refcnt`, so in B that early check reads the
//! line every other faulting CPU is writing (pft regressed 6-10% at 12-56 threads).
//!
//! The fields this model uses: `vm_start`, `vm_end`, `vm_mm` (the owning address space),
//! `vm_page_prot` (the PTE flags template), `vm_flags`, `vm_lock_seq`, `anon_vma` (the
//! anonymous reverse-map id), `vm_ops` (the backing kind), `vm_pgoff`, `vm_file` (the object),
//! `vm_private_data` (the memcg to charge), `vm_policy` (the preferred node) and `vm_refcnt`.
//! The others (`anon_vma_chain`, `swap_readahead_info`, `numab_state`, `shared.rb`,
//! `rb_subtree_last`, `anon_name`, `vm_userfaultfd_ctx`) exist only so that every used field
//! sits where it sits in Linux; nothing reads them.
//!
//! Unsafe code here, and why: a VMA holds back pointers to its address space, object and
//! memcg as raw pointers (as Linux's `vm_mm`, `vm_file`, `vm_private_data`), and declares
//! itself `Send`/`Sync` on their lifetimes.
#![allow(unsafe_code)]

use crate::object::Object;
use core::mem::offset_of;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use lru::NodeId;
use lru::layout::FieldDesc;

bitflags::bitflags! {
    /// `vm_flags` (the subset this model uses).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct VmFlags: u64 {
        /// `VM_READ`.
        const READ = 1 << 0;
        /// `VM_WRITE`.
        const WRITE = 1 << 1;
        /// `VM_SHARED`: a shared mapping of an object.
        const SHARED = 1 << 3;
    }
}

/// What backs a region (`vm_ops` / `vm_file` / `anon_vma`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum Backing {
    /// Anonymous memory: zero-filled on first touch, freed on unmap (no swap).
    Anon = 1,
    /// A page-cache object (file-like or shmem-like) mapped at `vm_pgoff`.
    Object = 2,
}

/// Everything needed to make a region (the arguments of `mmap`).
#[derive(Debug, Clone, Copy)]
pub struct VmaDesc<'a> {
    /// First byte (page aligned).
    pub start: u64,
    /// One past the last byte (page aligned).
    pub end: u64,
    /// Access flags.
    pub flags: VmFlags,
    /// The object mapped, or `None` for anonymous memory.
    pub object: Option<&'a Object>,
    /// Page offset into the object of `start`.
    pub pgoff: u64,
    /// The memcg charged for the region's pages, type-erased (the address space's owner
    /// knows the type and holds a reference for the region's lifetime).
    pub memcg: *const (),
    /// Node to allocate from first.
    pub node: NodeId,
    /// The anonymous reverse-map id (`anon_vma`): the address space's id.
    pub anon_id: u64,
    /// The address space (type-erased back pointer, `vm_mm`).
    pub mm: *const (),
}

/// The operations every layout of `vm_area_struct` offers.
///
/// Sealed: the lock protocol in [`crate::vma_lock`] relies on `vm_lock_seq` and
/// `vm_refcnt` being exactly the fields the layout report lists.
pub trait VmArea: sealed::Sealed + core::fmt::Debug + Send + Sync + Sized + 'static {
    /// Name of the layout in reports.
    const LAYOUT: &'static str;
    /// A detached region (`vm_area_alloc`, `vm_refcnt` 0).
    fn new(desc: &VmaDesc<'_>) -> Self;
    /// `vm_start`.
    fn vm_start(&self) -> u64;
    /// `vm_end`.
    fn vm_end(&self) -> u64;
    /// `vm_mm`, type-erased.
    fn vm_mm(&self) -> *const ();
    /// `vm_page_prot`: the template PTE flags (writable or not).
    fn vm_page_prot(&self) -> u64;
    /// `vm_flags`.
    fn vm_flags(&self) -> VmFlags;
    /// `vm_lock_seq`.
    fn vm_lock_seq(&self) -> &AtomicU32;
    /// `vm_refcnt`.
    fn vm_refcnt(&self) -> &AtomicU32;
    /// `anon_vma`: the anonymous reverse-map id.
    fn anon_id(&self) -> u64;
    /// What backs the region.
    fn backing(&self) -> Backing;
    /// `vm_pgoff`.
    fn vm_pgoff(&self) -> u64;
    /// `vm_file`: the object, if any.
    fn vm_file(&self) -> Option<&Object>;
    /// `vm_private_data`: the memcg to charge, type-erased.
    fn memcg(&self) -> *const ();
    /// `vm_policy`: the node to allocate from first.
    fn node(&self) -> NodeId;
    /// The pahole table.
    fn layout_fields() -> &'static [FieldDesc];
}

mod sealed {
    pub trait Sealed {}
}

/// The page-protection template stored in `vm_page_prot`: bit 0 = writable.
pub const PROT_WRITE: u64 = 1;

/// Line 2 of layout A: `vm_refcnt` and the tree node, no `vm_lock_seq`.
#[repr(C, align(64))]
struct RefcntLineA {
    vm_refcnt: AtomicU32,
    _hole: u32,
    shared_rb: [u64; 3],
    rb_subtree_last: u64,
    anon_name: u64,
    vm_userfaultfd_ctx: u64,
}

/// Line 2 of layout B: `vm_lock_seq` moved into the hole after `vm_refcnt`.
#[repr(C, align(64))]
struct RefcntLineB {
    vm_refcnt: AtomicU32,
    vm_lock_seq: AtomicU32,
    shared_rb: [u64; 3],
    rb_subtree_last: u64,
    anon_name: u64,
    vm_userfaultfd_ctx: u64,
}

/// `vm_area_struct` as Linux lays it out: `vm_lock_seq` in the first line.
#[repr(C, align(64))]
pub struct VmAreaA {
    vm_start: u64,
    vm_end: u64,
    vm_mm: *const (),
    vm_page_prot: u64,
    vm_flags: u64,
    vm_lock_seq: AtomicU32,
    _hole: u32,
    anon_vma_chain: [u64; 2],
    anon_vma: u64,
    vm_ops: u64,
    vm_pgoff: u64,
    vm_file: *const Object,
    vm_private_data: *const (),
    swap_readahead_info: AtomicU64,
    vm_policy: u64,
    numab_state: u64,
    line2: RefcntLineA,
}

/// `vm_area_struct` with `vm_lock_seq` next to `vm_refcnt` (the variant that regressed pft).
#[repr(C, align(64))]
pub struct VmAreaB {
    vm_start: u64,
    vm_end: u64,
    vm_mm: *const (),
    vm_page_prot: u64,
    vm_flags: u64,
    _hole: u64,
    anon_vma_chain: [u64; 2],
    anon_vma: u64,
    vm_ops: u64,
    vm_pgoff: u64,
    vm_file: *const Object,
    vm_private_data: *const (),
    swap_readahead_info: AtomicU64,
    vm_policy: u64,
    numab_state: u64,
    line2: RefcntLineB,
}

// SAFETY: the raw pointers are back pointers to objects that outlive the
// region (the address space, the object, the memcg: the address space's owner keeps them
// alive while the region exists); they are only read. Everything mutable is atomic.
unsafe impl Send for VmAreaA {}
// SAFETY: as above.
unsafe impl Sync for VmAreaA {}
// SAFETY: as above.
unsafe impl Send for VmAreaB {}
// SAFETY: as above.
unsafe impl Sync for VmAreaB {}

fn prot_of(flags: VmFlags) -> u64 {
    if flags.contains(VmFlags::WRITE) {
        PROT_WRITE
    } else {
        0
    }
}

fn backing_of(desc: &VmaDesc<'_>) -> (u64, *const Object) {
    match desc.object {
        Some(o) => (Backing::Object as u64, core::ptr::from_ref(o)),
        None => (Backing::Anon as u64, core::ptr::null()),
    }
}

macro_rules! impl_vm_area {
    ($ty:ident, $layout:expr, $fields:ident, $($lock_seq:tt).+, { $($extra:tt)* }) => {
        impl sealed::Sealed for $ty {}

        impl VmArea for $ty {
            const LAYOUT: &'static str = $layout;

            fn new(d: &VmaDesc<'_>) -> Self {
                let (vm_ops, vm_file) = backing_of(d);
                $ty {
                    vm_start: d.start,
                    vm_end: d.end,
                    vm_mm: d.mm,
                    vm_page_prot: prot_of(d.flags),
                    vm_flags: d.flags.bits(),
                    anon_vma_chain: [0; 2],
                    anon_vma: d.anon_id,
                    vm_ops,
                    vm_pgoff: d.pgoff,
                    vm_file,
                    vm_private_data: d.memcg,
                    swap_readahead_info: AtomicU64::new(0),
                    vm_policy: u64::from(d.node),
                    numab_state: 0,
                    $($extra)*
                }
            }
            fn vm_start(&self) -> u64 {
                self.vm_start
            }
            fn vm_end(&self) -> u64 {
                self.vm_end
            }
            fn vm_mm(&self) -> *const () {
                self.vm_mm
            }
            fn vm_page_prot(&self) -> u64 {
                self.vm_page_prot
            }
            fn vm_flags(&self) -> VmFlags {
                VmFlags::from_bits_truncate(self.vm_flags)
            }
            fn vm_lock_seq(&self) -> &AtomicU32 {
                &self.$($lock_seq).+
            }
            fn vm_refcnt(&self) -> &AtomicU32 {
                &self.line2.vm_refcnt
            }
            fn anon_id(&self) -> u64 {
                self.anon_vma
            }
            fn backing(&self) -> Backing {
                if self.vm_ops == Backing::Object as u64 {
                    Backing::Object
                } else {
                    Backing::Anon
                }
            }
            fn vm_pgoff(&self) -> u64 {
                self.vm_pgoff
            }
            fn vm_file(&self) -> Option<&Object> {
                // SAFETY: `vm_file` is null or points at the object the region was created
                // with, which the owner keeps alive for the region's lifetime.
                unsafe { self.vm_file.as_ref() }
            }
            fn memcg(&self) -> *const () {
                self.vm_private_data
            }
            fn node(&self) -> NodeId {
                self.vm_policy as u32
            }
            fn layout_fields() -> &'static [FieldDesc] {
                $fields
            }
        }

        impl core::fmt::Debug for $ty {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("vm_start", &format_args!("{:#x}", self.vm_start))
                    .field("vm_end", &format_args!("{:#x}", self.vm_end))
                    .field("vm_flags", &self.vm_flags())
                    .field("backing", &self.backing())
                    .field("vm_pgoff", &self.vm_pgoff)
                    .field("vm_lock_seq", &self.vm_lock_seq().load(Ordering::Relaxed))
                    .field("vm_refcnt", &self.vm_refcnt().load(Ordering::Relaxed))
                    .finish()
            }
        }
    };
}

impl_vm_area!(VmAreaA, "A (vm_lock_seq in line 0)", A_FIELDS, vm_lock_seq, {
    vm_lock_seq: AtomicU32::new(0),
    _hole: 0,
    line2: RefcntLineA {
        vm_refcnt: AtomicU32::new(0),
        _hole: 0,
        shared_rb: [0; 3],
        rb_subtree_last: 0,
        anon_name: 0,
        vm_userfaultfd_ctx: 0,
    },
});

impl_vm_area!(VmAreaB, "B (vm_lock_seq next to vm_refcnt)", B_FIELDS, line2.vm_lock_seq, {
    _hole: 0,
    line2: RefcntLineB {
        vm_refcnt: AtomicU32::new(0),
        vm_lock_seq: AtomicU32::new(0),
        shared_rb: [0; 3],
        rb_subtree_last: 0,
        anon_name: 0,
        vm_userfaultfd_ctx: 0,
    },
});

macro_rules! common_fields {
    ($ty:ident, $($lock_seq:tt).+ , $lock_seq_group:expr) => {
        &[
            lru::layout_field!($ty, "fault", vm_start),
            lru::layout_field!($ty, "fault", vm_end),
            lru::layout_field!($ty, "fault", vm_mm),
            lru::layout_field!($ty, "fault", vm_page_prot),
            lru::layout_field!($ty, "fault", vm_flags),
            lru::layout_field!($ty, $lock_seq_group, "vm_lock_seq" => $($lock_seq).+),
            lru::layout_field!($ty, "unused", anon_vma_chain),
            lru::layout_field!($ty, "fault", anon_vma),
            lru::layout_field!($ty, "fault", vm_ops),
            lru::layout_field!($ty, "fault", vm_pgoff),
            lru::layout_field!($ty, "fault", vm_file),
            lru::layout_field!($ty, "fault", vm_private_data),
            lru::layout_field!($ty, "unused", swap_readahead_info),
            lru::layout_field!($ty, "fault", vm_policy),
            lru::layout_field!($ty, "unused", numab_state),
            lru::layout_field!($ty, "refcnt", "vm_refcnt" => line2.vm_refcnt),
            lru::layout_field!($ty, "unused", "shared.rb" => line2.shared_rb),
            lru::layout_field!($ty, "unused", "rb_subtree_last" => line2.rb_subtree_last),
            lru::layout_field!($ty, "unused", "anon_name" => line2.anon_name),
            lru::layout_field!($ty, "unused", "vm_userfaultfd_ctx" => line2.vm_userfaultfd_ctx),
        ]
    };
}

const A_FIELDS: &[FieldDesc] = common_fields!(VmAreaA, vm_lock_seq, "fault");
const B_FIELDS: &[FieldDesc] = {
    let f: &[FieldDesc] = common_fields!(VmAreaB, line2.vm_lock_seq, "refcnt");
    f
};

// Seed 003's point, checked at compile time: in A `vm_lock_seq` shares line 0 with
// `vm_start`/`vm_end`/`vm_flags` and not the refcount's line; in B it shares the refcount's
// own 64-byte aligned line. Both are Linux's 192 bytes.
const _: () = {
    use lru::cacheline::{line_of, share_line};
    assert!(core::mem::size_of::<VmAreaA>() == 192);
    assert!(core::mem::size_of::<VmAreaB>() == 192);
    assert!(offset_of!(VmAreaA, vm_start) == 0 && offset_of!(VmAreaB, vm_start) == 0);
    assert!(offset_of!(VmAreaA, vm_flags) == 32 && offset_of!(VmAreaB, vm_flags) == 32);
    assert!(offset_of!(VmAreaA, vm_lock_seq) == 40);
    assert!(offset_of!(VmAreaA, line2) == 128 && offset_of!(VmAreaB, line2) == 128);
    assert!(offset_of!(VmAreaA, line2.vm_refcnt) == 128);
    assert!(offset_of!(VmAreaB, line2.vm_lock_seq) == 132);
    assert!(line_of(offset_of!(VmAreaA, vm_lock_seq)) == line_of(offset_of!(VmAreaA, vm_end)));
    assert!(!share_line(
        offset_of!(VmAreaA, vm_lock_seq),
        4,
        offset_of!(VmAreaA, line2.vm_refcnt),
        4
    ));
    assert!(share_line(
        offset_of!(VmAreaB, line2.vm_lock_seq),
        4,
        offset_of!(VmAreaB, line2.vm_refcnt),
        4
    ));
    assert!(!share_line(
        offset_of!(VmAreaB, line2.vm_lock_seq),
        4,
        offset_of!(VmAreaB, vm_start),
        16
    ));
    // Everything but vm_lock_seq sits at the same offset in both.
    assert!(offset_of!(VmAreaA, vm_pgoff) == offset_of!(VmAreaB, vm_pgoff));
    assert!(offset_of!(VmAreaA, vm_file) == offset_of!(VmAreaB, vm_file));
    assert!(offset_of!(VmAreaA, vm_private_data) == offset_of!(VmAreaB, vm_private_data));
    assert!(offset_of!(VmAreaA, vm_policy) == offset_of!(VmAreaB, vm_policy));
};

/// The layout of `V` for the report.
#[must_use]
pub fn vma_layout<V: VmArea>(name: &'static str) -> lru::layout::StructLayout<'static> {
    lru::layout::StructLayout {
        name,
        size: core::mem::size_of::<V>(),
        align: core::mem::align_of::<V>(),
        fields: V::layout_fields(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc() -> VmaDesc<'static> {
        VmaDesc {
            start: 0x1000,
            end: 0x9000,
            flags: VmFlags::READ | VmFlags::WRITE,
            object: None,
            pgoff: 3,
            memcg: 0x40 as *const (),
            node: 1,
            anon_id: 77,
            mm: 0x80 as *const (),
        }
    }

    fn check<V: VmArea>() {
        let v = V::new(&desc());
        assert_eq!(
            (v.vm_start(), v.vm_end(), v.vm_pgoff()),
            (0x1000, 0x9000, 3)
        );
        assert_eq!(v.vm_flags(), VmFlags::READ | VmFlags::WRITE);
        assert_eq!(v.vm_page_prot(), PROT_WRITE);
        assert_eq!(v.backing(), Backing::Anon);
        assert!(v.vm_file().is_none());
        assert_eq!((v.anon_id(), v.node()), (77, 1));
        assert_eq!(v.memcg() as usize, 0x40);
        assert_eq!(v.vm_mm() as usize, 0x80);
        assert_eq!(
            v.vm_refcnt().load(Ordering::Relaxed),
            0,
            "detached when new"
        );
        let fields = V::layout_fields();
        assert_eq!(fields.len(), 20);
        let mut sorted: alloc::vec::Vec<_> = fields.to_vec();
        sorted.sort_by_key(|f| f.offset);
        for w in sorted.windows(2) {
            assert!(
                w[0].end() <= w[1].offset,
                "{} overlaps {}",
                w[0].name,
                w[1].name
            );
        }
        let lock_seq = fields.iter().find(|f| f.name == "vm_lock_seq").unwrap();
        let refcnt = fields.iter().find(|f| f.name == "vm_refcnt").unwrap();
        let start = fields.iter().find(|f| f.name == "vm_start").unwrap();
        let same_as_refcnt =
            lru::cacheline::line_of(lock_seq.offset) == lru::cacheline::line_of(refcnt.offset);
        let same_as_start =
            lru::cacheline::line_of(lock_seq.offset) == lru::cacheline::line_of(start.offset);
        assert!(same_as_refcnt != same_as_start);
    }

    #[test]
    fn both_layouts_build_and_report() {
        check::<VmAreaA>();
        check::<VmAreaB>();
        let a = VmAreaA::layout_fields()
            .iter()
            .find(|f| f.name == "vm_lock_seq")
            .unwrap();
        let b = VmAreaB::layout_fields()
            .iter()
            .find(|f| f.name == "vm_lock_seq")
            .unwrap();
        assert_eq!((a.offset, b.offset), (40, 132));
    }
}
