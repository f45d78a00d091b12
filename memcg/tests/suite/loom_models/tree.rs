//! Loom: the real charge path of a memcg tree (`try_charge_memcg()` through the stock and
//! the page counter) against the stock drain that offline runs from another CPU.
use super::loom_support;

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

/// The reclaim walk (`mem_cgroup_iter()`: the css child lists under RCU, no tree lock)
/// against a child being created under the walked memcg on another CPU: the walk visits the
/// memcgs linked before it started, in pre-order, and reaches the new child, if at all,
/// fully built (its css count, made by the creating thread, is read by the walker's
/// `css_tryget`: loom fails a read that the link's publication does not order).
#[test]
fn reclaim_walk_against_a_child_being_created() {
    loom_support::model(|| {
        let t = Arc::new(tree());
        t.rcu().online(1).unwrap();
        let p = t.root().create_child().unwrap();
        let pid = p.id();
        let k0 = p.create_child().unwrap().id();
        drop(p);
        let t2 = t.clone();
        let creator = thread::spawn(move || {
            let p = t2.lookup(pid).unwrap();
            p.create_child().unwrap().id()
        });
        let mut seen = Vec::new();
        {
            let p = t.lookup(pid).unwrap();
            let mut pos = None;
            while let Some(m) = t.iter_next(&p, pos.take(), 1) {
                seen.push(m.id());
                pos = Some(m);
            }
        }
        let k1 = creator.join().unwrap();
        assert_eq!(seen[..2], [pid, k0], "{seen:?}");
        assert!(seen.len() == 2 || seen[2..] == [k1], "{seen:?}");
        assert_eq!(
            ksync::warn::count(),
            0,
            "{:?}",
            ksync::warn::first().map(|w| w.what())
        );
    });
}
