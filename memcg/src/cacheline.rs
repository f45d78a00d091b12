//! Cacheline-group helpers, shared with `lru` so both crates measure lines and 128-byte
//! pairs the same way (`____cacheline_aligned`, `__cacheline_group_begin_aligned()`).
//!
//! The adjacent-line prefetcher fetches 128-byte aligned pairs, so every layout in this
//! crate is checked per line and per pair (seed 001). See `lru::cacheline` for the helpers
//! and their tests.

pub use lru::cacheline::{
    CACHELINE, CACHELINE_PAIR, CacheAligned, line_of, member_in_group, pair_of, share_line,
    share_pair, within_one_line,
};
