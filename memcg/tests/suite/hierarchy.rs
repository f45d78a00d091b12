//! The memcg hierarchy: create, lookup, offline with reparenting, free after a grace
//! period, bad input, and scale (10,000 memcgs).
#![cfg(not(loom))]

use crate::common;

use common::*;
use memcg::stats::NodeStatItem;
use memcg::{MemCgroupPerNode, MemcgError};

#[test]
fn create_lookup_and_nesting() {
    let s = setup(2, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let b = a.create_child().unwrap();
    assert_eq!(root.id(), memcg::ROOT_ID);
    assert_ne!(a.id(), 0, "0 means uncharged: no memcg has it");
    assert_ne!(a.id(), b.id());
    assert!(b.is_descendant(&a) && b.is_descendant(&root));
    assert!(!a.is_descendant(&b));
    assert_eq!(b.parent().unwrap().id(), a.id());
    let again = s.tree.lookup(b.id()).unwrap();
    assert!(std::ptr::eq(&*again, &*b));
    assert_eq!(s.tree.nr_memcgs(), 3);
}

#[test]
fn bad_input_gets_typed_errors() {
    let s = setup(2, 1, false);
    let root = s.tree.root();
    assert_eq!(
        s.tree.lookup(4242).unwrap_err(),
        MemcgError::NoSuchMemcg { id: 4242 }
    );
    assert_eq!(
        s.tree.create_under(77).unwrap_err(),
        MemcgError::NoSuchMemcg { id: 77 }
    );
    assert_eq!(
        s.tree.offline(memcg::ROOT_ID, 0).unwrap_err(),
        MemcgError::RootOffline
    );
    assert_eq!(
        s.tree.offline(0, 0).unwrap_err(),
        MemcgError::NoSuchMemcg { id: 0 }
    );
    assert_eq!(
        s.tree.offline(9, 0).unwrap_err(),
        MemcgError::NoSuchMemcg { id: 9 }
    );
    let a = root.create_child().unwrap();
    let b = a.create_child().unwrap();
    assert_eq!(
        s.tree.offline(a.id(), 0).unwrap_err(),
        MemcgError::HasChildren { id: a.id() }
    );
    assert_eq!(
        s.tree.offline(b.id(), 7).unwrap_err(),
        MemcgError::InvalidCpu { cpu: 7, nr_cpus: 2 }
    );
    s.tree.offline(b.id(), 0).unwrap();
    assert_eq!(
        s.tree.offline(b.id(), 0).unwrap_err(),
        MemcgError::Offline { id: b.id() }
    );
    assert_eq!(
        s.tree.lookup(b.id()).unwrap_err(),
        MemcgError::Offline { id: b.id() }
    );
    assert_eq!(
        b.create_child().unwrap_err(),
        MemcgError::ParentOffline { parent: b.id() }
    );
    assert_eq!(
        b.try_charge(0, 1).unwrap_err(),
        MemcgError::Offline { id: b.id() }
    );
    assert_eq!(
        a.try_charge(5, 1).unwrap_err(),
        MemcgError::InvalidCpu { cpu: 5, nr_cpus: 2 }
    );
    assert_eq!(
        a.mod_lruvec_state(0, 3, NodeStatItem::NrShmem, 1)
            .unwrap_err(),
        MemcgError::InvalidNode {
            node: 3,
            nr_nodes: 1
        }
    );
    assert_eq!(
        a.uncharge(1).unwrap_err(),
        MemcgError::UnchargeUnderflow {
            id: a.id(),
            nr_pages: 1
        }
    );
    // Every error has an errno and a message.
    let e = MemcgError::ParentOffline { parent: 3 };
    assert_eq!(e.errno(), memcg::error::errno::ENOENT);
    assert!(e.to_string().contains("offline parent 3"));
}

#[test]
fn invalid_config_is_refused() {
    use memcg::{MemcgConfig, MemcgTree};
    let lru = || tree_lru(false, Default::default());
    let new =
        |c: MemcgConfig| MemcgTree::<Pn>::with_new_nodes(c, lru::TailMode::Cached, rcu(4), lru());
    assert!(matches!(
        new(MemcgConfig::new(0, 1)).unwrap_err(),
        MemcgError::InvalidConfig(_)
    ));
    let mut too_many = MemcgConfig::new(1, 1);
    too_many.max_memcgs = memcg::tree::MEM_CGROUP_ID_MAX + 1;
    assert!(matches!(
        new(too_many).unwrap_err(),
        MemcgError::InvalidConfig(_)
    ));
    // Every 16-bit id but 0: as many memcgs as MEM_CGROUP_ID_MAX, and not none.
    too_many.max_memcgs = memcg::tree::MEM_CGROUP_ID_MAX;
    assert!(new(too_many).is_ok());
    too_many.max_memcgs = 0;
    assert!(matches!(
        new(too_many).unwrap_err(),
        MemcgError::InvalidConfig(_)
    ));
    assert!(matches!(
        new(MemcgConfig::new(1, 65)).unwrap_err(),
        MemcgError::InvalidNode { node: 64, .. }
    ));
    // The RCU domain must cover every CPU of the tree.
    assert!(matches!(
        new(MemcgConfig::new(8, 1)).unwrap_err(),
        MemcgError::InvalidConfig(_)
    ));
    // Every node's counters must cover every CPU of the tree too: the stat path indexes
    // them with a CPU it checked against the tree's count only.
    let narrow =
        lru::pgdat::alloc_nodes::<Pn>(1, 1, 1 << 10, lru::TailMode::Cached, rcu(4)).unwrap();
    assert!(MemcgTree::<Pn>::new(MemcgConfig::new(1, 1), narrow, lru()).is_ok());
    let e = MemcgTree::<Pn>::new(MemcgConfig::new(2, 1), narrow, lru()).unwrap_err();
    assert!(
        matches!(e, MemcgError::InvalidConfig(m) if m.contains("counters")),
        "{e:?}"
    );
    // NODE_DATA must hold exactly the configured nodes, in order, in one RCU domain.
    let nodes =
        lru::pgdat::alloc_nodes::<Pn>(2, 1, 1 << 10, lru::TailMode::Cached, rcu(1)).unwrap();
    assert!(matches!(
        MemcgTree::<Pn>::new(MemcgConfig::new(1, 1), nodes, lru()).unwrap_err(),
        MemcgError::InvalidConfig(_)
    ));
    let swapped: &'static [&'static lru::PgData<Pn>] = Box::leak(Box::new([nodes[1], nodes[0]]));
    assert!(matches!(
        MemcgTree::<Pn>::new(MemcgConfig::new(1, 2), swapped, lru()).unwrap_err(),
        MemcgError::InvalidConfig(_)
    ));
    let other =
        lru::pgdat::alloc_nodes::<Pn>(1, 1, 1 << 10, lru::TailMode::Cached, rcu(1)).unwrap();
    let mixed: &'static [&'static lru::PgData<Pn>] = Box::leak(Box::new([nodes[0], other[0]]));
    let mixed_ok = MemcgTree::<Pn>::new(MemcgConfig::new(1, 2), mixed, lru());
    // other[0] is node 0 too, so the order check fires first; a second domain is refused
    // either way.
    assert!(matches!(
        mixed_ok.unwrap_err(),
        MemcgError::InvalidConfig(_)
    ));
    assert!(MemcgTree::<Pn>::new(MemcgConfig::new(1, 2), nodes, lru()).is_ok());
    // with_new_nodes: nodes of 1 GiB of managed pages, which set their vmstat threshold.
    let tree = new(MemcgConfig::new(4, 2)).unwrap();
    for pgdat in tree.node_data() {
        assert_eq!(
            pgdat.vmstat().threshold(),
            lru::vmstat::stat_threshold(4, (1 << 30) >> 12)
        );
    }
}

#[test]
fn freed_only_after_grace_period_and_last_reference() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let id = a.id();
    let held = a.clone();
    drop(a);
    s.tree.offline(id, 0).unwrap();
    // A handle still refers to it: a zombie keeps its id.
    assert_eq!(s.tree.nr_zombies(), 1);
    assert_eq!(s.tree.reap(0), 0);
    assert!(s.tree.lookup_any(id).is_ok());
    drop(held);
    // Its css count is exact only once the switch to atomic mode is confirmed, a grace
    // period after offline: until then it stays linked.
    assert_eq!(s.tree.reap(0), 0);
    assert_eq!(s.tree.nr_zombies(), 1);
    grace_period(&s.tree);
    // Unlinked at the next reap, but not freed before the grace period.
    assert_eq!(s.tree.reap(0), 0);
    assert_eq!(s.tree.nr_zombies(), 0);
    assert_eq!(s.tree.nr_dying(), 1);
    assert_eq!(
        s.tree.lookup_any(id).unwrap_err(),
        MemcgError::NoSuchMemcg { id }
    );
    grace_period(&s.tree);
    assert_eq!(s.tree.reap(0), 1);
    assert_eq!(s.tree.nr_dying(), 0);
    assert_eq!(s.tree.nr_memcgs(), 1);
    // The id is reused.
    assert_eq!(root.create_child().unwrap().id(), id);
}

#[test]
fn zombie_with_charges_waits_for_uncharge() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    // A charge not on any LRU (in flight) stays with the zombie.
    a.try_charge(0, 3).unwrap();
    let id = a.id();
    drop(a);
    s.tree.offline(id, 0).unwrap();
    assert_eq!(s.tree.nr_zombies(), 1);
    let z = s.tree.lookup_any(id).unwrap();
    // The stock was drained at offline: only the 3 pages remain.
    assert_eq!(z.usage(), 3);
    assert_eq!(root.usage(), 3);
    z.uncharge(3).unwrap();
    drop(z);
    grace_period(&s.tree);
    s.tree.reap(0);
    grace_period(&s.tree);
    assert_eq!(s.tree.reap(0), 1);
    assert_eq!(root.usage(), 0);
}

#[test]
fn offline_reparents_folios_charges_and_stats() {
    for mglru in [false, true] {
        let s = setup(1, 2, mglru);
        let root = s.tree.root();
        let parent = root.create_child().unwrap();
        let child = parent.create_child().unwrap();
        let mut folios = Vec::new();
        for i in 0..10 {
            folios.push(try_fault(&s.tree, &child, 0, i % 2, i % 3 == 0).unwrap());
        }
        s.tree.flush_stats(&root);
        let lru_items = [
            NodeStatItem::NrInactiveAnon,
            NodeStatItem::NrActiveAnon,
            NodeStatItem::NrInactiveFile,
            NodeStatItem::NrActiveFile,
        ];
        let total = |m: &Ref<'_>, local: bool| -> i64 {
            lru_items
                .iter()
                .map(|&i| {
                    if local {
                        m.vmstats().page_state_local(i)
                    } else {
                        m.vmstats().page_state(i)
                    }
                })
                .sum()
        };
        assert_eq!(total(&child, true), 10);
        assert_eq!(total(&parent, false), 10);
        assert_eq!(total(&parent, true), 0);
        let cid = child.id();
        // Empty the stock first so the usage is exactly the folios.
        s.tree.stocks().drain(0).unwrap();
        assert_eq!(child.usage(), 10);
        let parent_usage = parent.usage();
        s.tree.offline(cid, 0).unwrap();
        // Charges: the child's level is empty, the parent's unchanged (its own now).
        assert_eq!(child.usage(), 0);
        assert_eq!(parent.usage(), parent_usage);
        for f in &folios {
            assert_eq!(f.memcg_id(), parent.id());
            assert!(parent.lruvec(f.node()).unwrap().owns(f));
        }
        let cold: u64 = (0..2)
            .map(|n| child.nodeinfo(n).unwrap().cold().reparented_folios())
            .sum();
        assert_eq!(cold, 10);
        drop(child);
        s.tree.flush_stats(&root);
        assert_eq!(total(&parent, true), 10);
        assert_eq!(total(&parent, false), 10);
        assert_eq!(total(&root.clone(), false), 10);
        // Freeing the folios now uncharges the parent.
        for f in folios {
            free(&s.tree, &parent, 0, f);
        }
        s.tree.stocks().drain(0).unwrap();
        assert_eq!(parent.usage(), 0);
        grace_period(&s.tree);
        s.tree.reap(0);
        grace_period(&s.tree);
        s.tree.reap(0);
        assert_eq!(s.tree.nr_memcgs(), 2);
    }
}

#[test]
fn ten_thousand_memcgs() {
    let s = setup(2, 1, true);
    let root = s.tree.root();
    let mut ids = Vec::new();
    let mut parents = Vec::new();
    // 100 parents x 100 children = 10,100 memcgs below the root.
    for _ in 0..100 {
        let p = root.create_child().unwrap();
        ids.push(p.id());
        parents.push(p.id());
        for _ in 0..100 {
            ids.push(p.create_child().unwrap().id());
        }
    }
    assert_eq!(s.tree.nr_memcgs(), 10_101);
    assert_eq!(
        s.tree.node_data()[0].memcg_lru().check().unwrap(),
        10_101,
        "every lruvec is on the memcg FIFO"
    );
    for &id in ids.iter().rev() {
        assert!(s.tree.lookup(id).is_ok());
    }
    // Children before parents. Each stays a zombie until its css count's switch to
    // atomic mode is confirmed, a grace period after its offline.
    for (zombies, &id) in ids.iter().rev().enumerate() {
        s.tree.offline(id, 1).unwrap();
        assert_eq!(s.tree.nr_zombies(), zombies + 1);
    }
    // After a grace period the children, unreferenced and uncharged, are unlinked; a parent
    // waits for its children to be freed, which drops their references on it. A reap after
    // the next grace period frees the children; the next unlinks the parents, and one
    // after another grace period frees them.
    let reap = || {
        let freed = s.tree.reap(0);
        (freed, s.tree.nr_memcgs(), s.tree.nr_dying())
    };
    assert_eq!((s.tree.nr_memcgs(), s.tree.nr_dying()), (10_101, 0));
    grace_period(&s.tree);
    assert_eq!(reap(), (0, 101, 10_000));
    grace_period(&s.tree);
    assert_eq!(reap(), (10_000, 101, 0));
    assert_eq!(reap(), (0, 1, 100));
    grace_period(&s.tree);
    assert_eq!(reap(), (100, 1, 0));
    assert_eq!(s.tree.node_data()[0].memcg_lru().check().unwrap(), 1);
}

#[test]
fn a_parent_is_reaped_after_its_only_child() {
    let s = setup(1, 1, false);
    let p = s.tree.root().create_child().unwrap();
    let c = p.create_child().unwrap();
    let (pid, cid) = (p.id(), c.id());
    drop((p, c));
    s.tree.offline(cid, 0).unwrap();
    s.tree.offline(pid, 0).unwrap();
    // Both zombies until their css switches are confirmed.
    assert_eq!((s.tree.nr_memcgs(), s.tree.nr_zombies()), (3, 2));
    grace_period(&s.tree);
    // The child is unlinked; the parent waits for the child's reference.
    assert_eq!(s.tree.reap(0), 0);
    assert_eq!((s.tree.nr_memcgs(), s.tree.nr_zombies()), (2, 1));
    grace_period(&s.tree);
    assert_eq!(s.tree.reap(0), 1, "the child is freed");
    assert_eq!(s.tree.reap(0), 0);
    assert_eq!(
        (s.tree.nr_memcgs(), s.tree.nr_zombies(), s.tree.nr_dying()),
        (1, 0, 1),
        "its only child gone, the parent is unlinked"
    );
    grace_period(&s.tree);
    assert_eq!(s.tree.reap(0), 1);
}

#[test]
fn id_space_exhaustion_is_an_error() {
    let mut cfg = memcg::MemcgConfig::new(1, 1);
    cfg.max_memcgs = 3;
    let s = setup_with(cfg, false);
    let root = s.tree.root();
    let _a = root.create_child().unwrap();
    let _b = root.create_child().unwrap();
    assert_eq!(
        root.create_child().unwrap_err(),
        MemcgError::TooManyMemcgs { max: 3 }
    );
}

#[test]
fn a_reader_inside_a_read_section_holds_off_the_free() {
    let s = setup(2, 1, true);
    let rcu = s.tree.rcu();
    let a = s.tree.root().create_child().unwrap();
    let id = a.id();
    let addr = std::ptr::from_ref(&*a) as usize;
    drop(a);
    s.tree.offline(id, 0).unwrap();
    // Its css count is exact a grace period after offline; the next reap unlinks it.
    grace_period(&s.tree);
    // CPU 1 looks the memcg up without a lock and keeps it across the unlink.
    let guard = rcu.read_lock(1).unwrap();
    let seen = s.tree.lookup_rcu(&guard, id).unwrap();
    assert_eq!(std::ptr::from_ref(seen) as usize, addr);
    assert_eq!(s.tree.reap(0), 0);
    assert_eq!(s.tree.nr_dying(), 1, "unlinked: out of the id table");
    assert!(
        s.tree.lookup_rcu(&guard, id).is_err(),
        "new lookups miss it"
    );
    // CPU 0 reports and CPU 1 cannot: no grace period can complete while CPU 1 reads.
    rcu.quiescent_state(0).unwrap();
    assert_eq!(s.tree.reap(0), 0);
    assert_eq!(seen.id(), id, "still valid inside the section");
    drop(guard);
    // CPU 1 goes idle (offline counts as quiescent); CPU 0 drives the grace period.
    rcu.offline(1).unwrap();
    rcu.synchronize(Some(0)).unwrap();
    assert_eq!(s.tree.reap(0), 1);
    assert_eq!(s.tree.nr_dying(), 0);
}

#[test]
fn lockless_lookups_never_revive_a_reapable_zombie() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let id = a.id();
    a.try_charge(0, 1).unwrap();
    // Online: a counted reference, found without the tree lock.
    let g = s.tree.rcu().read_lock(0).unwrap();
    let online = s.tree.tryget_online(&g, id).unwrap();
    assert_eq!(online.id(), id);
    drop(g);
    drop(a);
    s.tree.stocks().drain(0).unwrap();
    s.tree.offline(id, 0).unwrap();
    // Offline, though still referenced (by `online`): no new reference.
    let g = s.tree.rcu().read_lock(0).unwrap();
    assert_eq!(
        s.tree.tryget_online(&g, id).unwrap_err(),
        MemcgError::Offline { id }
    );
    drop(g);
    drop(online);
    // A zombie with a charge (no folio: no reference) and a zero count.
    assert_eq!(s.tree.nr_zombies(), 1);
    let g = s.tree.rcu().read_lock(0).unwrap();
    assert!(s.tree.lookup_rcu(&g, id).is_ok(), "still in the id table");
    assert_eq!(
        s.tree.tryget_online(&g, id).unwrap_err(),
        MemcgError::Offline { id }
    );
    drop(g);
    let z = s.tree.lookup_any(id).unwrap();
    z.uncharge(1).unwrap();
    drop(z);
    s.tree.reap(0);
    grace_period(&s.tree);
    s.tree.reap(0);
    grace_period(&s.tree);
    assert_eq!(s.tree.reap(0), 1);
    let g = s.tree.rcu().read_lock(0).unwrap();
    assert_eq!(
        s.tree.lookup_rcu(&g, id).unwrap_err(),
        MemcgError::NoSuchMemcg { id }
    );
}

#[test]
fn charged_folios_hold_their_memcg() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let id = a.id();
    let f = try_fault(&s.tree, &a, 0, 0, false).unwrap();
    // Take it off the LRU (so offline does not reparent it) but keep it charged.
    s.tree.lru().lru_del_folio(&a, f).unwrap();
    drop(a);
    s.tree.stocks().drain(0).unwrap();
    s.tree.offline(id, 0).unwrap();
    grace_period(&s.tree);
    assert_eq!(s.tree.reap(0), 0, "the folio's charge pins the zombie");
    assert_eq!(s.tree.nr_zombies(), 1);
    s.tree.uncharge_folio(0, f).unwrap();
    s.tree.reap(0);
    grace_period(&s.tree);
    assert_eq!(s.tree.reap(0), 1);
}

/// Folios reparented to the root stay charged to it: the root's id is not 0 (which a
/// folio reads when uncharged), so uncharging them takes the charge off the root.
#[test]
fn folios_reparented_to_the_root_stay_charged_and_uncharge_from_it() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let f = try_fault(&s.tree, &a, 0, 0, false).unwrap();
    let id = a.id();
    drop(a);
    s.tree.offline(id, 0).unwrap();
    assert_ne!(memcg::ROOT_ID, 0, "0 reads as uncharged");
    assert_eq!(f.memcg_id(), memcg::ROOT_ID);
    s.tree.stocks().drain_all(|_| true);
    assert_eq!(root.usage(), 1);
    s.tree.lru().lru_del_folio(&root, f).unwrap();
    s.tree.uncharge_folio(0, f).unwrap();
    assert_eq!(root.usage(), 0);
}

#[test]
fn dropping_a_tree_takes_its_memcgs_off_the_nodes() {
    use memcg::{MemcgConfig, MemcgTree};
    // The nodes outlive the tree (NODE_DATA is the page allocator's).
    let nodes =
        lru::pgdat::alloc_nodes::<Pn>(1, 1, 1 << 10, lru::TailMode::Cached, rcu(1)).unwrap();
    let tree = MemcgTree::<Pn>::new(
        MemcgConfig::new(1, 1),
        nodes,
        tree_lru(true, Default::default()),
    )
    .unwrap();
    let root = tree.root();
    for _ in 0..3 {
        root.create_child().unwrap().create_child().unwrap();
    }
    drop(root);
    assert_eq!(nodes[0].memcg_lru().check(), Ok(1 + 3 * 2));
    drop(tree);
    assert_eq!(nodes[0].memcg_lru().check(), Ok(0), "off the memcg FIFO");
}

/// A folio whose last reference was dropped before offline reached it (its releaser not
/// yet past TestClearLRU) is its releaser's: reparenting pins each folio before it clears
/// the LRU flag, so it passes this one over, leaving it on the child's list with its flag
/// (the releaser then unlinks it and uncharges the child), moves the rest and drops the
/// pins it took. Clearing the flag without a pin made the releaser skip the unlink and
/// free a frame that reparenting then put on the parent's list.
#[test]
fn reparenting_leaves_a_folio_being_released_to_its_releaser() {
    for mglru in [false, true] {
        let s = setup(1, 1, mglru);
        let root = s.tree.root();
        let parent = root.create_child().unwrap();
        let child = parent.create_child().unwrap();
        let kept = try_fault(&s.tree, &child, 0, 0, false).unwrap();
        let dying = try_fault(&s.tree, &child, 0, 0, false).unwrap();
        assert_eq!(dying.put(), Ok(true), "the release has begun");
        let cid = child.id();
        s.tree.offline(cid, 0).unwrap();
        assert_eq!(kept.memcg_id(), parent.id());
        assert!(parent.lruvec(0).unwrap().owns(kept));
        assert_eq!(kept.refcount(), 1, "reparenting dropped the pin it took");
        assert_eq!(dying.memcg_id(), cid, "mglru {mglru}");
        assert!(dying.test_lru(), "mglru {mglru}: its LRU flag was taken");
        // The releaser goes on: TestClearLRU and unlink on the child's lruvec, uncharge.
        free(&s.tree, &child, 0, dying);
        s.tree.stocks().drain_all(|_| true);
        assert_eq!(child.usage(), 0);
        drop(child);
        grace_period(&s.tree);
        s.tree.reap(0);
        grace_period(&s.tree);
        s.tree.reap(0);
        assert_eq!(s.tree.nr_zombies(), 0, "mglru {mglru}");
    }
}
