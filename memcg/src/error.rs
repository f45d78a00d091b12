//! Typed errors of the memcg interface, with the errno Linux returns for each.
//!
//! Everything a caller can get wrong (an unknown id, a CPU or node out of range, a limit
//! below the current usage, an offline parent) and every resource failure (out of memory in
//! a memcg, a `memory.reclaim` target that cannot be met) is reported here, never by a panic.

use core::fmt;
use lru::NodeId;

/// Identifier of a memory cgroup (`mem_cgroup_id()`, 16 bits as in Linux and in `lru`'s
/// folios); the root is always id 0.
pub type MemcgId = u16;

/// Linux errno values, for callers that present errors the way cgroupfs does.
pub mod errno {
    /// No such file or directory.
    pub const ENOENT: i32 = 2;
    /// Try again.
    pub const EAGAIN: i32 = 11;
    /// Out of memory.
    pub const ENOMEM: i32 = 12;
    /// Device or resource busy.
    pub const EBUSY: i32 = 16;
    /// Invalid argument.
    pub const EINVAL: i32 = 22;
    /// No space left (id space exhausted).
    pub const ENOSPC: i32 = 28;
}

/// Why a memcg operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemcgError {
    /// No memcg with this id exists (never created, or already freed).
    NoSuchMemcg {
        /// The id that was asked for.
        id: MemcgId,
    },
    /// The memcg exists but is offline (removed; waiting to be freed).
    Offline {
        /// The offline memcg.
        id: MemcgId,
    },
    /// A child cannot be created under an offline parent.
    ParentOffline {
        /// The offline parent.
        parent: MemcgId,
    },
    /// A memcg with online children cannot be taken offline (Linux: `rmdir` gives EBUSY).
    HasChildren {
        /// The memcg that still has online children.
        id: MemcgId,
    },
    /// The root memcg cannot be taken offline.
    RootOffline,
    /// The id space (`max_memcgs`) is exhausted.
    TooManyMemcgs {
        /// The configured maximum number of memcgs.
        max: usize,
    },
    /// A new `memory.max` is below the current usage and reclaim could not bring the usage
    /// down to it.
    LimitBelowUsage {
        /// The memcg whose limit was being set.
        id: MemcgId,
        /// Usage in pages when the attempt gave up.
        usage: u64,
        /// The requested limit in pages.
        max: u64,
    },
    /// A charge would exceed `memory.max` of `over_limit` (this memcg or an ancestor) and
    /// reclaim could not make room: out of memory in this memcg.
    OutOfMemory {
        /// The memcg being charged.
        id: MemcgId,
        /// The memcg whose limit was hit.
        over_limit: MemcgId,
        /// Pages requested.
        nr_pages: u64,
    },
    /// `memory.reclaim` could not reclaim the requested amount (Linux: EAGAIN).
    Again {
        /// Pages requested.
        requested: u64,
        /// Pages actually reclaimed before giving up.
        reclaimed: u64,
    },
    /// More pages uncharged than are charged.
    UnchargeUnderflow {
        /// The memcg being uncharged.
        id: MemcgId,
        /// Pages asked to uncharge.
        nr_pages: u64,
    },
    /// A CPU id outside `0..nr_cpus`.
    InvalidCpu {
        /// The id passed in.
        cpu: usize,
        /// The number of CPUs the structures were built for.
        nr_cpus: usize,
    },
    /// A CPU's charge stock asked for on another CPU: with owned stocks (Linux's
    /// `local_lock`) only its own CPU takes it.
    NotThisCpu {
        /// The stock's CPU.
        owner: usize,
        /// The CPU the call ran on.
        cpu: usize,
    },
    /// A CPU's charge stock taken again while that CPU already holds it.
    StockHeld,
    /// A node id outside `0..nr_nodes`.
    InvalidNode {
        /// The id passed in.
        node: NodeId,
        /// The number of nodes the structures were built for.
        nr_nodes: usize,
    },
    /// A configuration value that cannot work (zero CPUs, zero nodes, ...).
    InvalidConfig(&'static str),
    /// An LRU operation on a folio failed (not on this lruvec, already isolated, ...).
    Lru(lru::LruError),
    /// A `memory.reclaim` write that does not parse.
    BadRequest(crate::reclaim_req::ReclaimParseError),
}

impl MemcgError {
    /// The errno Linux returns for the same condition.
    pub fn errno(&self) -> i32 {
        match self {
            Self::NoSuchMemcg { .. } | Self::Offline { .. } | Self::ParentOffline { .. } => {
                errno::ENOENT
            }
            Self::HasChildren { .. } | Self::RootOffline | Self::LimitBelowUsage { .. } => {
                errno::EBUSY
            }
            Self::TooManyMemcgs { .. } => errno::ENOSPC,
            Self::OutOfMemory { .. } => errno::ENOMEM,
            Self::Again { .. } => errno::EAGAIN,
            Self::UnchargeUnderflow { .. }
            | Self::InvalidCpu { .. }
            | Self::NotThisCpu { .. }
            | Self::StockHeld
            | Self::InvalidNode { .. }
            | Self::InvalidConfig(_)
            | Self::Lru(_)
            | Self::BadRequest(_) => errno::EINVAL,
        }
    }
}

impl fmt::Display for MemcgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSuchMemcg { id } => write!(f, "memcg {id} does not exist"),
            Self::Offline { id } => write!(f, "memcg {id} is offline"),
            Self::ParentOffline { parent } => {
                write!(f, "cannot create a memcg under offline parent {parent}")
            }
            Self::HasChildren { id } => write!(f, "memcg {id} still has online children"),
            Self::RootOffline => write!(f, "the root memcg cannot be taken offline"),
            Self::TooManyMemcgs { max } => write!(f, "no free memcg id (max {max})"),
            Self::LimitBelowUsage { id, usage, max } => write!(
                f,
                "memcg {id}: memory.max {max} pages is below usage {usage} pages"
            ),
            Self::OutOfMemory {
                id,
                over_limit,
                nr_pages,
            } => write!(
                f,
                "memcg {id}: out of memory charging {nr_pages} pages (memory.max of memcg {over_limit} reached)"
            ),
            Self::Again {
                requested,
                reclaimed,
            } => write!(
                f,
                "memory.reclaim: reclaimed {reclaimed} of {requested} pages (EAGAIN)"
            ),
            Self::UnchargeUnderflow { id, nr_pages } => {
                write!(f, "memcg {id}: uncharge of {nr_pages} pages exceeds usage")
            }
            Self::InvalidCpu { cpu, nr_cpus } => {
                write!(f, "cpu {cpu} out of range (nr_cpus {nr_cpus})")
            }
            Self::NotThisCpu { owner, cpu } => {
                write!(f, "cpu {owner}'s charge stock asked for on cpu {cpu}")
            }
            Self::StockHeld => f.write_str("a charge stock taken twice on its cpu"),
            Self::InvalidNode { node, nr_nodes } => {
                write!(f, "node {node} out of range (nr_nodes {nr_nodes})")
            }
            Self::InvalidConfig(what) => write!(f, "invalid configuration: {what}"),
            Self::Lru(e) => write!(f, "lru: {e}"),
            Self::BadRequest(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for MemcgError {}
