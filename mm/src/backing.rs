//! The RAM-disk-like backing store of file-like objects (seed 000's files on `brd`).
//!
//! A file-like page's contents are a deterministic function of (object id, page index), so
//! a clean page can be evicted without writeback and read back on refault, and every page
//! read or refaulted can be checked. Reading a page costs what `brd` costs: one pass over
//! 4 KiB (here generating it instead of copying it).

/// Words in a 4 KiB page.
pub const PAGE_WORDS: usize = 4096 / 8;

/// splitmix64: a cheap, well-mixed function of its input.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Word `word` of page `index` of object `object`.
#[inline]
#[must_use]
pub fn word(object: u64, index: u64, word: usize) -> u64 {
    mix(object.rotate_left(40) ^ index.wrapping_mul(PAGE_WORDS as u64) ^ word as u64)
}

/// Fills `page` with the contents of page `index` of object `object` (the read from the
/// backing store). Out of line: its loop over the page's words would otherwise sit inside
/// `find_or_read_page`, between the blocks of shmem's fault, which never runs it; the
/// kernel's linker script starts it on a page of its own, so that the loop never
/// straddles one (docs/design.md, "Where the measured code sits").
#[inline(never)]
pub fn fill(object: u64, index: u64, page: &mut [u64; PAGE_WORDS]) {
    for (i, w) in page.iter_mut().enumerate() {
        *w = word(object, index, i);
    }
}

/// Whether `page` holds exactly page `index` of object `object`; `Err` names the first
/// wrong word.
pub fn verify(object: u64, index: u64, page: &[u64; PAGE_WORDS]) -> Result<(), usize> {
    match page
        .iter()
        .enumerate()
        .position(|(i, &w)| w != word(object, index, i))
    {
        None => Ok(()),
        Some(i) => Err(i),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_are_deterministic_and_distinct() {
        let mut a = [0u64; PAGE_WORDS];
        let mut b = [0u64; PAGE_WORDS];
        fill(7, 3, &mut a);
        fill(7, 3, &mut b);
        assert_eq!(a, b);
        assert_eq!(verify(7, 3, &a), Ok(()));
        assert!(verify(7, 4, &a).is_err());
        assert!(verify(8, 3, &a).is_err());
        a[100] ^= 1;
        assert_eq!(verify(7, 3, &a), Err(100));
    }
}
