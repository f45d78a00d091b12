//! Cacheline groups: aligned wrappers and compile-time placement checks.
//!
//! Models Linux's `__cacheline_group_begin_aligned()` / `__cacheline_group_end_aligned()`
//! and the `CACHELINE_ASSERT_GROUP_MEMBER` / `CACHELINE_ASSERT_GROUP_SIZE` macros
//! (include/linux/cache.h). A group is a `#[repr(C, align(64))]` wrapper field, so
//! "member in group" holds by construction and is re-checked with `offset_of!`. Because
//! the adjacent-line (spatial) prefetcher on x86 pulls lines in 128-byte pairs, the
//! helpers also say which pair a field falls in (seed 001; seed 000 is the motivating
//! case for [`CacheAligned`]).

/// Size of one cache line in bytes.
pub const CACHELINE: usize = 64;

/// Size of the 128-byte line pair fetched by the adjacent-line prefetcher.
pub const CACHELINE_PAIR: usize = 128;

/// A value that starts on its own 64-byte cache line and pads to a multiple of 64 bytes.
///
/// This is the Rust form of a `__cacheline_group_begin_aligned(name)` ...
/// `__cacheline_group_end_aligned(name)` pair around a set of members.
#[derive(Debug, Default)]
#[repr(C, align(64))]
pub struct CacheAligned<T>(pub T);

/// A value that owns a whole 128-byte line pair (per-CPU state that must not be
/// prefetched together with a neighbour's): ksync's, the one slot type of every per-CPU
/// structure in lru, memcg and the page allocator.
pub use ksync::CachePadded;

impl<T> core::ops::Deref for CacheAligned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> core::ops::DerefMut for CacheAligned<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// Index of the 64-byte line that holds byte `offset`.
#[must_use]
pub const fn line_of(offset: usize) -> usize {
    offset / CACHELINE
}

/// Index of the 128-byte pair that holds byte `offset`.
#[must_use]
pub const fn pair_of(offset: usize) -> usize {
    offset / CACHELINE_PAIR
}

/// Whether the byte range `[offset, offset + size)` lies inside one 64-byte line.
#[must_use]
pub const fn within_one_line(offset: usize, size: usize) -> bool {
    size == 0 || line_of(offset) == line_of(offset + size - 1)
}

/// Whether `[member_off, member_off + member_size)` lies inside
/// `[group_off, group_off + group_size)` (`CACHELINE_ASSERT_GROUP_MEMBER`).
#[must_use]
pub const fn member_in_group(
    member_off: usize,
    member_size: usize,
    group_off: usize,
    group_size: usize,
) -> bool {
    member_off >= group_off && member_off + member_size <= group_off + group_size
}

/// Whether two byte ranges share at least one 64-byte line.
#[must_use]
pub const fn share_line(a_off: usize, a_size: usize, b_off: usize, b_size: usize) -> bool {
    if a_size == 0 || b_size == 0 {
        return false;
    }
    let (a0, a1) = (line_of(a_off), line_of(a_off + a_size - 1));
    let (b0, b1) = (line_of(b_off), line_of(b_off + b_size - 1));
    a0 <= b1 && b0 <= a1
}

/// Whether two byte ranges share at least one 128-byte pair.
#[must_use]
pub const fn share_pair(a_off: usize, a_size: usize, b_off: usize, b_size: usize) -> bool {
    if a_size == 0 || b_size == 0 {
        return false;
    }
    let (a0, a1) = (pair_of(a_off), pair_of(a_off + a_size - 1));
    let (b0, b1) = (pair_of(b_off), pair_of(b_off + b_size - 1));
    a0 <= b1 && b0 <= a1
}

/// Size in bytes of the field a projection closure points at; usable in `const`.
///
/// `field_size(|s: &Folio| &s.flags)` is `size_of` of the type of `flags`.
#[must_use]
pub const fn field_size<T, F>(_project: fn(&T) -> &F) -> usize {
    core::mem::size_of::<F>()
}

/// Compile-time check that `$member` of `$ty` lies inside group field `$group`
/// (`CACHELINE_ASSERT_GROUP_MEMBER`). `$member` may be a nested path (`stats.evicted`).
#[macro_export]
macro_rules! cacheline_assert_group_member {
    ($ty:ty, $group:ident, $($member:tt).+) => {
        const _: () = assert!($crate::cacheline::member_in_group(
            ::core::mem::offset_of!($ty, $($member).+),
            $crate::cacheline::field_size(|s: &$ty| &s.$($member).+),
            ::core::mem::offset_of!($ty, $group),
            $crate::cacheline::field_size(|s: &$ty| &s.$group),
        ));
    };
}

/// Compile-time check that group `$group` of `$ty` starts on a line and spans at most
/// `$max` bytes (`CACHELINE_ASSERT_GROUP_SIZE`).
#[macro_export]
macro_rules! cacheline_assert_group_size {
    ($ty:ty, $group:ident, $max:expr) => {
        const _: () =
            assert!(::core::mem::offset_of!($ty, $group) % $crate::cacheline::CACHELINE == 0);
        const _: () = assert!($crate::cacheline::field_size(|s: &$ty| &s.$group) <= $max);
    };
}

/// Compile-time check that field `$field` of `$ty` starts in 128-byte pair `$pair`.
#[macro_export]
macro_rules! cacheline_assert_pair {
    ($ty:ty, $($field:tt).+, $pair:expr) => {
        const _: () = assert!(
            $crate::cacheline::pair_of(::core::mem::offset_of!($ty, $($field).+)) == $pair
        );
    };
}

/// Compile-time check that fields `$a` and `$b` of `$ty` do not share a 64-byte line.
#[macro_export]
macro_rules! cacheline_assert_apart {
    ($ty:ty, $($a:tt).+ ; $($b:tt).+) => {
        const _: () = assert!(!$crate::cacheline::share_line(
            ::core::mem::offset_of!($ty, $($a).+),
            $crate::cacheline::field_size(|s: &$ty| &s.$($a).+),
            ::core::mem::offset_of!($ty, $($b).+),
            $crate::cacheline::field_size(|s: &$ty| &s.$($b).+),
        ));
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_pair_indices() {
        assert_eq!(line_of(0), 0);
        assert_eq!(line_of(63), 0);
        assert_eq!(line_of(64), 1);
        assert_eq!(pair_of(127), 0);
        assert_eq!(pair_of(128), 1);
        assert!(within_one_line(0, 64));
        assert!(!within_one_line(60, 8));
        assert!(within_one_line(10, 0));
    }

    #[test]
    fn range_sharing() {
        assert!(share_line(0, 8, 56, 8));
        assert!(!share_line(0, 8, 64, 8));
        assert!(share_pair(0, 8, 64, 8));
        assert!(!share_pair(0, 8, 128, 8));
        assert!(!share_line(0, 0, 0, 8));
        assert!(member_in_group(64, 8, 64, 64));
        assert!(!member_in_group(120, 16, 64, 64));
    }

    #[test]
    fn wrappers_align() {
        assert_eq!(core::mem::align_of::<CacheAligned<u8>>(), 64);
        assert_eq!(core::mem::size_of::<CacheAligned<[u8; 65]>>(), 128);
        assert_eq!(core::mem::align_of::<CachePadded<u8>>(), 128);
        #[repr(C)]
        struct S {
            a: u64,
            g: CacheAligned<[u64; 2]>,
        }
        cacheline_assert_group_size!(S, g, 64);
        cacheline_assert_pair!(S, g, 0);
        cacheline_assert_apart!(S, a; g);
        let s = S {
            a: 1,
            g: CacheAligned([2, 3]),
        };
        assert_eq!(s.a + s.g[0] + s.g.0[1], 6);
    }
}
