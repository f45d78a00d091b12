//! Loom: the real charge path of a memcg tree (`try_charge_memcg()` through the stock and
//! the page counter) against the stock drain that offline runs from another CPU.
#![cfg(loom)]

mod loom_support;

use loom::sync::Arc;
use loom::thread;
use loom_support::Loom;
use lru::{LruGenFolioGrouped, Rcu, TailMode};
use memcg::{FolioFree, MemCgroupPerNodePaired, MemcgConfig, MemcgTree, TreeLru};

type Pn = MemCgroupPerNodePaired<Loom, LruGenFolioGrouped>;
type Tree = MemcgTree<Pn>;

/// A tree over one fresh node. The RCU domain and the node are leaked (they live as long
/// as the system); loom's atomics exist only inside a model, so each iteration makes its
/// own.
fn tree() -> Tree {
    let lru = TreeLru::new(false, Box::new(|_, _, _| FolioFree::Freed));
    let rcu: &'static Rcu<Loom> = Box::leak(Box::new(Rcu::new(2)));
    MemcgTree::with_new_nodes(MemcgConfig::new(2, 1), TailMode::Cached, rcu, lru).unwrap()
}

#[test]
fn charge_against_drain_all_stock() {
    loom_support::model(|| {
        let t = Arc::new(tree());
        let id = t.root().create_child().unwrap().id();
        let t2 = t.clone();
        let drainer = thread::spawn(move || {
            let a = t2.lookup(id).unwrap();
            t2.stocks().drain_all(|m| m.is_descendant(&a));
        });
        {
            let a = t.lookup(id).unwrap();
            a.try_charge(0, 1).unwrap();
            a.try_charge(0, 1).unwrap();
        }
        drainer.join().unwrap();
        let a = t.lookup(id).unwrap();
        let stocked = t.stocks().stocked(0, &a).unwrap();
        assert_eq!(a.usage(), 2 + stocked);
        assert_eq!(t.root().usage(), a.usage());
        t.stocks().drain(0).unwrap();
        assert_eq!(a.usage(), 2);
    });
}
