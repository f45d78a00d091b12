//! Typed errors for every operation that can be handed bad input.
//!
//! Linux answers most of these with `VM_WARN_ON_ONCE` and carries on; a library used by a
//! test kernel and host tests returns them instead, so a caller's bug is reported, never
//! turned into a panic or a corrupted list.

use crate::nid::NodeId;
use core::fmt;

/// What went wrong in an `lru` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LruError {
    /// A node id at or above [`crate::nid::MAX_NUMNODES`].
    InvalidNode(NodeId),
    /// A CPU index at or above the number of CPUs fixed at construction.
    InvalidCpu(usize),
    /// A CPU's per-CPU data, owned by that CPU (a local lock), named on another CPU.
    NotThisCpu {
        /// The CPU named (which owns the data).
        owner: usize,
        /// The CPU the call ran on.
        cpu: usize,
    },
    /// A CPU's local lock taken again while that CPU held it.
    LocalLockHeld,
    /// `lru_add_drain_all` could not run the drain on every CPU.
    DrainRefused,
    /// The folio's LRU flag was already clear: someone else isolated it first.
    NotOnLru,
    /// The folio is already on an LRU list (its LRU flag is set).
    AlreadyOnLru,
    /// The folio's LRU flag is still set: isolate it (`folio_test_clear_lru`) first.
    NotIsolated,
    /// The folio belongs to another lruvec (memcg or node differ).
    WrongLruvec,
    /// A memcg FIFO node that is not on the FIFO was rotated or released.
    NotOnFifo,
    /// A memcg FIFO node that is already on the FIFO was onlined again.
    AlreadyOnFifo,
    /// A shadow entry that does not decode (bad tag bits).
    InvalidShadow(u64),
    /// `folio_put` on a folio whose reference count is already zero.
    RefcountUnderflow,
    /// A frame number too large for a folio descriptor.
    InvalidPfn(u64),
    /// An unmap of a folio that has no page-table mapping.
    MapcountUnderflow,
    /// An RCU operation that needs the CPU online found it offline.
    RcuCpuOffline,
    /// A quiescent state was reported (or a CPU went offline) inside a read-side section.
    RcuInReadSection,
    /// A read-side guard of another RCU domain than the one the structure is freed by.
    RcuWrongDomain,
    /// An MGLRU operation (aging, generation eviction) on a lruvec in classic mode.
    MglruDisabled,
    /// A folio stayed on a generation list it was just moved off: the list or the folio's
    /// generation bits are corrupt.
    CorruptList,
}

impl fmt::Display for LruError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LruError::InvalidNode(n) => write!(f, "node {n} out of range"),
            LruError::InvalidCpu(c) => write!(f, "cpu {c} out of range"),
            LruError::NotThisCpu { owner, cpu } => {
                write!(f, "cpu {owner}'s per-CPU data named on cpu {cpu}")
            }
            LruError::LocalLockHeld => f.write_str("a local lock taken twice on its cpu"),
            LruError::DrainRefused => f.write_str("lru_add_drain_all could not run on every cpu"),
            LruError::NotOnLru => f.write_str("folio is not on an LRU list"),
            LruError::AlreadyOnLru => f.write_str("folio is already on an LRU list"),
            LruError::NotIsolated => f.write_str("folio was not isolated (LRU flag set)"),
            LruError::WrongLruvec => f.write_str("folio belongs to another lruvec"),
            LruError::NotOnFifo => f.write_str("memcg node is not on the memcg FIFO"),
            LruError::AlreadyOnFifo => f.write_str("memcg node is already on the memcg FIFO"),
            LruError::InvalidShadow(s) => write!(f, "invalid shadow entry {s:#x}"),
            LruError::RefcountUnderflow => f.write_str("folio refcount underflow"),
            LruError::InvalidPfn(p) => write!(f, "frame number {p:#x} out of range"),
            LruError::MapcountUnderflow => f.write_str("folio mapcount underflow"),
            LruError::RcuCpuOffline => f.write_str("cpu is offline for RCU"),
            LruError::RcuWrongDomain => {
                f.write_str("RCU read guard of another domain than the structure's")
            }
            LruError::RcuInReadSection => {
                f.write_str("quiescent state inside an RCU read-side section")
            }
            LruError::MglruDisabled => f.write_str("MGLRU is disabled on this lruvec"),
            LruError::CorruptList => f.write_str("a folio stayed on the list it left"),
        }
    }
}

impl core::error::Error for LruError {}

impl From<page::FolioError> for LruError {
    fn from(e: page::FolioError) -> Self {
        match e {
            page::FolioError::InvalidNode(n) => LruError::InvalidNode(n),
            page::FolioError::InvalidPfn(p) => LruError::InvalidPfn(p),
            page::FolioError::RefcountUnderflow => LruError::RefcountUnderflow,
            page::FolioError::MapcountUnderflow => LruError::MapcountUnderflow,
            page::FolioError::AlreadyOnLru => LruError::AlreadyOnLru,
        }
    }
}

impl From<ksync::RcuError> for LruError {
    fn from(e: ksync::RcuError) -> Self {
        match e {
            ksync::RcuError::InvalidCpu(c) => LruError::InvalidCpu(c),
            ksync::RcuError::CpuOffline => LruError::RcuCpuOffline,
            ksync::RcuError::InReadSection => LruError::RcuInReadSection,
            ksync::RcuError::WrongDomain => LruError::RcuWrongDomain,
        }
    }
}
