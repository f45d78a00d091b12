//! Charging through the per-CPU stock: consume, refill and drain on a memcg switch, draining
//! other CPUs' stocks when a charge, an ancestor's limit or a new `memory.max` needs their
//! pages, charges of a batch or more going straight to the page counters, CPU ids checked.
#![cfg(not(loom))]

use crate::common;

use common::*;
use memcg::{MEMCG_CHARGE_BATCH, MemcgError};
use std::sync::atomic::Ordering;

#[test]
fn stock_consumes_refills_and_drains_on_switch() {
    let s = setup(2, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let b = root.create_child().unwrap();
    a.try_charge(0, 1).unwrap();
    // One batch went to the page counter; the surplus sits in CPU 0's stock.
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH);
    assert_eq!(
        s.tree.stocks().stocked(0, &a).unwrap(),
        MEMCG_CHARGE_BATCH - 1
    );
    for _ in 0..(MEMCG_CHARGE_BATCH - 1) {
        a.try_charge(0, 1).unwrap();
    }
    // All from the stock: the counter did not move.
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH);
    assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
    a.try_charge(0, 2).unwrap();
    assert_eq!(a.usage(), 2 * MEMCG_CHARGE_BATCH);
    assert_eq!(
        s.tree.stocks().stocked(0, &a).unwrap(),
        MEMCG_CHARGE_BATCH - 2
    );
    // CPU 0 switches to b: a's stock is drained (uncharged).
    b.try_charge(0, 1).unwrap();
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH + 2);
    assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
    assert_eq!(
        s.tree.stocks().stocked(0, &b).unwrap(),
        MEMCG_CHARGE_BATCH - 1
    );
    // CPU 1 has its own stock.
    a.try_charge(1, 1).unwrap();
    assert_eq!(
        s.tree.stocks().stocked(1, &a).unwrap(),
        MEMCG_CHARGE_BATCH - 1
    );
    // Offline drains every CPU's stock of the memcg.
    let bid = b.id();
    b.uncharge(1).unwrap();
    drop(b);
    s.tree.offline(bid, 1).unwrap();
    assert_eq!(root.usage(), a.usage());
    // Charges above the batch bypass the stock.
    a.try_charge(1, 100).unwrap();
    assert_eq!(
        s.tree.stocks().stocked(1, &a).unwrap(),
        MEMCG_CHARGE_BATCH - 1
    );
}

#[test]
fn another_cpus_stock_is_drained_when_a_charge_needs_its_pages() {
    let s = setup(2, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    a.set_max(0, MEMCG_CHARGE_BATCH).unwrap();
    // CPU 0 charged one page and stocked the rest of its batch: a is at its limit.
    a.try_charge(0, 1).unwrap();
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH);
    // CPU 1 needs those pages: nothing to reclaim, so the other CPU's stock is drained.
    a.try_charge(1, MEMCG_CHARGE_BATCH - 1).unwrap();
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH);
    assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
    assert_eq!(s.tree.stocks().stocked(1, &a).unwrap(), 0);
    assert_eq!(s.freed.load(Ordering::Relaxed), 0);
    // Now every page is handed out: the next charge fails after its reclaim retries.
    assert_eq!(
        a.try_charge(1, 1),
        Err(MemcgError::OutOfMemory {
            id: a.id(),
            over_limit: a.id(),
            nr_pages: 1
        })
    );
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH);
}

#[test]
fn an_ancestors_limit_drains_a_descendants_stock_on_another_cpu() {
    let s = setup(2, 1, false);
    let root = s.tree.root();
    let p = root.create_child().unwrap();
    let x = p.create_child().unwrap();
    let y = p.create_child().unwrap();
    p.set_max(0, 2 * MEMCG_CHARGE_BATCH).unwrap();
    x.try_charge(0, 1).unwrap();
    y.try_charge(1, 1).unwrap();
    assert_eq!(p.usage(), 2 * MEMCG_CHARGE_BATCH);
    // y needs more than p's margin: both CPUs' stocks of p's subtree are drained.
    y.try_charge(1, MEMCG_CHARGE_BATCH).unwrap();
    assert_eq!(s.tree.stocks().stocked(0, &x).unwrap(), 0);
    assert_eq!((x.usage(), y.usage()), (1, MEMCG_CHARGE_BATCH + 1));
    assert_eq!(p.usage(), MEMCG_CHARGE_BATCH + 2);
    // The refusal names the ancestor whose limit was hit.
    let room = p.memory().margin();
    x.try_charge(0, room).unwrap();
    assert_eq!(
        y.try_charge(1, 1),
        Err(MemcgError::OutOfMemory {
            id: y.id(),
            over_limit: p.id(),
            nr_pages: 1
        })
    );
    assert_eq!(
        y.try_charge(1, 2 * MEMCG_CHARGE_BATCH + 1),
        Err(MemcgError::OutOfMemory {
            id: y.id(),
            over_limit: p.id(),
            nr_pages: 2 * MEMCG_CHARGE_BATCH + 1
        })
    );
}

#[test]
fn set_max_drains_the_stocks_of_other_cpus() {
    let s = setup(3, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let a1 = a.create_child().unwrap();
    let b = root.create_child().unwrap();
    a1.try_charge(1, 2).unwrap();
    b.try_charge(2, 1).unwrap();
    assert_eq!(a.usage(), MEMCG_CHARGE_BATCH);
    // The stocked pages are not in use: the limit fits once they are returned.
    a.set_max(0, 2).unwrap();
    assert_eq!((a.memory().max(), a.usage()), (2, 2));
    assert_eq!(s.tree.stocks().stocked(1, &a1).unwrap(), 0);
    // Only a's subtree is drained.
    assert_eq!(
        s.tree.stocks().stocked(2, &b).unwrap(),
        MEMCG_CHARGE_BATCH - 1
    );
    assert_eq!(s.freed.load(Ordering::Relaxed), 0);
    // Below what is really in use: refused once reclaim has nothing to take.
    assert_eq!(
        a.set_max(0, 1),
        Err(MemcgError::LimitBelowUsage {
            id: a.id(),
            usage: 2,
            max: 1
        })
    );
    assert_eq!(a.memory().max(), 2);
}

#[test]
fn cpu_ids_are_checked_on_every_charge_path() {
    let s = setup(2, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let bad = |cpu| MemcgError::InvalidCpu { cpu, nr_cpus: 2 };
    assert_eq!(a.try_charge(2, 1), Err(bad(2)));
    assert_eq!(a.try_charge(7, 1), Err(bad(7)));
    assert_eq!(a.set_max(2, 100), Err(bad(2)));
    assert_eq!(a.memory().max(), memcg::PAGE_COUNTER_MAX);
    let f = try_fault(&s.tree, &a, 1, 0, false).unwrap();
    s.tree.lru().lru_del_folio(&a, f).unwrap();
    let usage = a.usage();
    assert_eq!(s.tree.uncharge_folio(2, f), Err(bad(2)));
    assert_eq!(a.usage(), usage, "nothing uncharged");
    s.tree.uncharge_folio(1, f).unwrap();
    assert_eq!(a.usage(), usage - 1);
    assert_eq!(a.usage(), s.tree.stocks().stocked(1, &a).unwrap());
}

#[test]
fn large_charges_go_straight_to_the_counter() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    // No limit: far above a batch (and above 4095 pages) fits.
    a.try_charge(0, 5000).unwrap();
    a.try_charge(0, 1 << 30).unwrap();
    assert_eq!(a.usage(), 5000 + (1 << 30));
    assert_eq!(root.usage(), a.usage());
    assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
    a.uncharge(1 << 30).unwrap();
    // Exactly a batch: charged as it is, nothing stocked.
    a.try_charge(0, MEMCG_CHARGE_BATCH).unwrap();
    assert_eq!(a.usage(), 5000 + MEMCG_CHARGE_BATCH);
    assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
    // Nothing to charge: nothing happens.
    a.try_charge(0, 0).unwrap();
    assert_eq!(a.usage(), 5000 + MEMCG_CHARGE_BATCH);
    assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
}

#[test]
fn a_charge_of_a_batch_or_more_leaves_the_stock_alone() {
    let s = setup(1, 1, false);
    let root = s.tree.root();
    let a = root.create_child().unwrap();
    let b = root.create_child().unwrap();
    b.try_charge(0, 1).unwrap();
    assert_eq!(
        s.tree.stocks().stocked(0, &b).unwrap(),
        MEMCG_CHARGE_BATCH - 1
    );
    // Nothing left over for a's stock: b's stays cached on the CPU, untouched.
    for nr in [MEMCG_CHARGE_BATCH, MEMCG_CHARGE_BATCH + 1, 5000] {
        a.try_charge(0, nr).unwrap();
        assert_eq!(
            s.tree.stocks().stocked(0, &b).unwrap(),
            MEMCG_CHARGE_BATCH - 1,
            "{nr} pages"
        );
        assert_eq!(s.tree.stocks().stocked(0, &a).unwrap(), 0);
    }
    assert_eq!(a.usage(), 2 * MEMCG_CHARGE_BATCH + 1 + 5000);
    assert_eq!(b.usage(), MEMCG_CHARGE_BATCH);
}
