//! Placement of `mem_cgroup_per_node` within a 128-byte pair (the slab position seed 001
//! depends on).
//!
//! Linux allocates each `mem_cgroup_per_node` with `kzalloc_node()`, so whether its first
//! line starts a 128-byte pair is up to the slab. [`PnBox`] makes it a parameter: the struct
//! is placed at offset 0 or 64 of a 128-byte aligned allocation, and both placements of both
//! layouts can be measured in one boot.

use core::alloc::Layout;
use core::ptr::NonNull;

/// Where a `mem_cgroup_per_node` starts relative to a 128-byte pair boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PnPlacement {
    /// On a pair boundary (+0): line 0 of the struct pairs with line 1.
    #[default]
    PairStart,
    /// In the second half of a pair (+64): line 0 pairs with whatever precedes the struct,
    /// line 1 with line 2. Falls back to +0 for types aligned to more than 64 bytes.
    PairMiddle,
}

impl PnPlacement {
    /// Byte offset from the pair boundary.
    pub const fn offset(self) -> usize {
        match self {
            Self::PairStart => 0,
            Self::PairMiddle => 64,
        }
    }
}

/// An owned `T` placed at a chosen offset within a 128-byte pair.
pub struct PnBox<T> {
    ptr: NonNull<T>,
    base: NonNull<u8>,
    layout: Layout,
}

// SAFETY: `PnBox<T>` owns its `T` exactly like `Box<T>`.
unsafe impl<T: Send> Send for PnBox<T> {}
// SAFETY: as above; shared access only hands out `&T`.
unsafe impl<T: Sync> Sync for PnBox<T> {}

impl<T> PnBox<T> {
    /// Moves `value` into a fresh allocation at `placement`.
    pub fn new(value: T, placement: PnPlacement) -> Self {
        let align = core::mem::align_of::<T>().max(128);
        let offset = if core::mem::align_of::<T>() <= 64 {
            placement.offset()
        } else {
            0
        };
        let size = (core::mem::size_of::<T>() + offset).max(1);
        let layout = match Layout::from_size_align(size, align) {
            Ok(l) => l,
            Err(_) => alloc::alloc::handle_alloc_error(Layout::new::<T>()),
        };
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { alloc::alloc::alloc(layout) };
        let Some(base) = NonNull::new(raw) else {
            alloc::alloc::handle_alloc_error(layout)
        };
        // SAFETY: `offset` is 0 or 64 and `size_of::<T>() + offset <= size`, so the slot lies
        // inside the allocation; `base` is 128-aligned and `T` is at most 64-aligned when the
        // offset is 64, so the slot is aligned for `T`.
        let ptr = unsafe { base.add(offset) }.cast::<T>();
        // SAFETY: `ptr` is valid for writes and aligned (see above) and holds no value yet.
        unsafe { ptr.as_ptr().write(value) };
        Self { ptr, base, layout }
    }

    /// The value.
    #[inline]
    pub fn get(&self) -> &T {
        // SAFETY: `ptr` holds a `T` initialised in `new` and dropped only in `drop`.
        unsafe { self.ptr.as_ref() }
    }

    /// Offset of the value from the 128-byte pair boundary (0 or 64).
    pub fn pair_offset(&self) -> usize {
        self.ptr.as_ptr() as usize % 128
    }
}

impl<T> Drop for PnBox<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` holds the `T` written in `new`; it is dropped exactly once here and
        // the allocation is freed with the layout it was allocated with.
        unsafe {
            core::ptr::drop_in_place(self.ptr.as_ptr());
            alloc::alloc::dealloc(self.base.as_ptr(), self.layout);
        }
    }
}

impl<T: core::fmt::Debug> core::fmt::Debug for PnBox<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PnBox")
            .field("pair_offset", &self.pair_offset())
            .field("value", self.get())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[repr(C, align(64))]
    struct Two([u64; 16]);

    #[test]
    fn placements_land_where_asked() {
        for _ in 0..8 {
            let a = PnBox::new(Two([1; 16]), PnPlacement::PairStart);
            let b = PnBox::new(Two([2; 16]), PnPlacement::PairMiddle);
            assert_eq!(a.pair_offset(), 0);
            assert_eq!(b.pair_offset(), 64);
            assert_eq!(a.get().0[15] + b.get().0[0], 3);
        }
    }

    #[test]
    fn drops_its_value() {
        let rc = std::rc::Rc::new(());
        let b = PnBox::new(rc.clone(), PnPlacement::PairMiddle);
        assert_eq!(std::rc::Rc::strong_count(&rc), 2);
        drop(b);
        assert_eq!(std::rc::Rc::strong_count(&rc), 1);
    }
}
