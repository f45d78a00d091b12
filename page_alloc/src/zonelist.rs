//! Zonelists: the order in which an allocation tries zones.
//!
//! Models `pgdat->node_zonelists[ZONELIST_FALLBACK]` as `build_zonelists()` makes it in
//! node order (the only order Linux has kept since 4.14): the nodes by
//! [`NumaTopology::fallback_orders`](crate::numa::NumaTopology::fallback_orders), and within
//! each node its populated zones from the highest to the lowest (`build_zonerefs_node()`),
//! so an allocation preferring node 1 tries node 1 Normal, node 1 DMA32, then the next
//! node's Normal and DMA32. Low zones are kept for last because they are the scarcer ones
//! (devices that can only address 32 bits need DMA32).

use crate::numa::NumaTopology;
use alloc::vec::Vec;
use page::NodeId;
use page::Zone as ZoneType;

/// A reference to one zone (`struct zoneref`): node and zone type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneRef {
    /// The node.
    pub node: NodeId,
    /// The zone type.
    pub kind: ZoneType,
}

/// One node's fallback list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Zonelist {
    zones: Vec<ZoneRef>,
}

impl Zonelist {
    /// The zones, first choice first.
    #[must_use]
    pub fn zones(&self) -> &[ZoneRef] {
        &self.zones
    }

    /// Where `z` stands in the list (`None`: not in it).
    #[must_use]
    pub fn position(&self, z: ZoneRef) -> Option<usize> {
        self.zones.iter().position(|x| *x == z)
    }
}

/// Zone types from the highest to the lowest that the allocator populates.
pub const ZONES_HIGH_TO_LOW: [ZoneType; 2] = [ZoneType::Normal, ZoneType::Dma32];

/// Every node's zonelist; `populated(node, kind)` says whether that zone has memory.
#[must_use]
pub fn build_all_zonelists(
    numa: &NumaTopology,
    populated: impl Fn(u32, ZoneType) -> bool,
) -> Vec<Zonelist> {
    numa.fallback_orders()
        .into_iter()
        .map(|order| Zonelist {
            zones: order
                .into_iter()
                .flat_map(|node| {
                    ZONES_HIGH_TO_LOW
                        .iter()
                        .map(move |&kind| ZoneRef { node, kind })
                })
                .filter(|z| populated(z.node, z.kind))
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numa::{NumaBuilder, PfnRange};

    #[test]
    fn node_order_then_high_to_low() {
        let mut b = NumaBuilder::new(2, 2);
        b.memory(0, PfnRange::new(0, 10))
            .memory(1, PfnRange::new(20, 30))
            .cpus_round_robin();
        let numa = b.build().unwrap();
        // Node 0 has only DMA32, node 1 both.
        let lists = build_all_zonelists(&numa, |n, k| n == 1 || k == ZoneType::Dma32);
        let z = |node, kind| ZoneRef { node, kind };
        assert_eq!(
            lists[1].zones(),
            [
                z(1, ZoneType::Normal),
                z(1, ZoneType::Dma32),
                z(0, ZoneType::Dma32)
            ]
        );
        assert_eq!(
            lists[0].zones(),
            [
                z(0, ZoneType::Dma32),
                z(1, ZoneType::Normal),
                z(1, ZoneType::Dma32)
            ]
        );
        assert_eq!(lists[0].position(z(1, ZoneType::Dma32)), Some(2));
        assert_eq!(lists[0].position(z(0, ZoneType::Normal)), None);
    }
}
