//! Loom: the real charge path of a memcg tree (`try_charge_memcg()` through the stock and
//! the page counter) against the stock drain that offline runs from another CPU.
#![cfg(loom)]

mod loom_support;

use loom::sync::Arc;
use loom::thread;
use loom_support::Loom;
use lru::{LruGenFolioGrouped, Lruvec, TailMode};
use memcg::{ManualRcu, MemCgroupPerNodePaired, MemcgConfig, MemcgTree, TreeLru};

type Pn = MemCgroupPerNodePaired<Lruvec<Loom, LruGenFolioGrouped>>;
type Tree = MemcgTree<Loom, Pn, ManualRcu>;

fn tree() -> Tree {
    let lru = TreeLru::new(1, TailMode::Cached, false, Box::new(|_, _, _| {}));
    MemcgTree::new(MemcgConfig::new(2, 1), ManualRcu::new(), lru).unwrap()
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
