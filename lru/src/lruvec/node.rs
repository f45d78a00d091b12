//! What a lruvec needs of its node: the node's id and its `lru_lock`.
//!
//! `lruvec->pgdat` is a real mutual reference in Linux: the node (`struct pglist_data`)
//! holds the memcg FIFO of its lruvecs and the node-wide `lru_lock`, and every lruvec
//! points back at its node. The lruvec reads two things through that pointer: the node id
//! (`lruvec_pgdat(lruvec)->node_id`) and, for a lruvec built with
//! [`LruvecLock::Node`](super::LruvecLock::Node), the node's lock (seed 004's "before").
//! [`LruvecNode`] names exactly those two, and the host names the node type
//! ([`LruvecHost::Node`](super::LruvecHost::Node)), so the lruvec keeps its pointer (the
//! same thin pointer, last in the struct, as in Linux) without importing the node, which is
//! built on top of it ([`crate::pgdat::PgData`] implements this trait).

use crate::lock_classes::PgdatLruLock;
use crate::nid::NodeId;
use crate::sync::Lock;
use ksync::LockFamily;

/// The node a lruvec points at (`lruvec->pgdat`), as the lruvec sees it.
pub trait LruvecNode<F: LockFamily>: Sync + 'static {
    /// `pgdat->node_id`.
    fn node_id(&self) -> NodeId;
    /// `pgdat->lru_lock`, taken by the node's lruvecs built with
    /// [`LruvecLock::Node`](super::LruvecLock::Node).
    fn lru_lock(&self) -> &Lock<F, PgdatLruLock>;
}
