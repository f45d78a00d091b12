//! Cacheline-group helpers: a 64-byte aligned wrapper and the line/pair arithmetic used by
//! the compile-time layout assertions and the layout report.
//!
//! Linux spells these `____cacheline_aligned`, `__cacheline_group_begin_aligned()` and
//! `CACHELINE_PADDING()`. Intel's spatial prefetcher fetches lines in 128-byte aligned
//! pairs, so every layout in this crate is checked both per line and per pair (seed 001).

/// Size of a cacheline in bytes.
pub const CACHELINE: usize = 64;
/// Size of the 128-byte aligned pair the spatial prefetcher fetches together.
pub const CACHELINE_PAIR: usize = 2 * CACHELINE;

/// A value on its own cacheline(s): 64-byte aligned and padded to a multiple of 64 bytes.
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct CacheAligned<T>(pub T);

impl<T> core::ops::Deref for CacheAligned<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> core::ops::DerefMut for CacheAligned<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// Index of the 64-byte line that byte `offset` falls in.
#[inline]
pub const fn line_of(offset: usize) -> usize {
    offset / CACHELINE
}

/// Index of the 128-byte pair that byte `offset` falls in.
#[inline]
pub const fn pair_of(offset: usize) -> usize {
    offset / CACHELINE_PAIR
}

/// Whether the byte range `[offset, offset + size)` stays inside one 64-byte line.
#[inline]
pub const fn within_one_line(offset: usize, size: usize) -> bool {
    size == 0 || line_of(offset) == line_of(offset + size - 1)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn aligned_wrapper_pads_to_a_line() {
        assert_eq!(core::mem::size_of::<CacheAligned<u8>>(), 64);
        assert_eq!(core::mem::align_of::<CacheAligned<u8>>(), 64);
        assert_eq!(core::mem::size_of::<CacheAligned<[u8; 65]>>(), 128);
    }

    #[test]
    fn line_and_pair_arithmetic() {
        assert_eq!(line_of(63), 0);
        assert_eq!(line_of(64), 1);
        assert_eq!(pair_of(127), 0);
        assert_eq!(pair_of(128), 1);
        assert!(within_one_line(0, 64));
        assert!(!within_one_line(60, 8));
        assert!(within_one_line(60, 0));
    }
}
