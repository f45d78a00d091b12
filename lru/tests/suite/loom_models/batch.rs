//! Loom: per-CPU batch adds against `drain_all` from another CPU, and two concurrent
//! `drain_all`s. No folio is lost or added twice, every batch reference is dropped, and
//! the drain generation skips redundant drains.
use super::loom_support;

use loom::sync::Arc;
use loom_support::{Loom, model};
use lru::{
    Folio, LruBatches, LruError, LruGenFolioGrouped, LruMode, Lruvec, LruvecLock, LruvecLookup,
    LruvecStandalone, PgData, Rcu, TailMode, Zone,
};

type Host = LruvecStandalone<Loom, LruGenFolioGrouped>;
type Lv = Lruvec<Host>;

struct One(&'static Lv);

impl LruvecLookup<Host> for One {
    type Guard<'a> = ();

    fn read_lock(&self, _cpu: usize) -> Result<(), LruError> {
        Ok(())
    }

    fn folio_lruvec<'g>(&'g self, _: &'g (), folio: &Folio) -> Option<&'g Lv> {
        (folio.memcg_id() == self.0.memcg_id()).then_some(self.0)
    }
}

fn lruvec() -> &'static Lv {
    let rcu: &'static Rcu<Loom> = Box::leak(Box::new(Rcu::new(2)));
    let node: &'static PgData<Host> = Box::leak(Box::new(
        PgData::new(0, 2, 1 << 16, TailMode::Cached, rcu).unwrap(),
    ));
    let host: &'static Host = Box::leak(Box::new(Host::new(
        1,
        node,
        LruMode::Mglru,
        LruvecLock::Own,
        0,
    )));
    host
}

fn folio(pfn: u64) -> &'static Folio {
    let f: &'static Folio = Box::leak(Box::new(Folio::new(pfn, 0, Zone::Normal).unwrap()));
    f.get(); // the owner's reference
    f.set_memcg_id(1).unwrap();
    f
}

/// Create every lazily built loom lock on the main thread, before any spawn, so that
/// their creation happens-before every use (see `LoomRawMutex`).
fn touch_locks(batches: &LruBatches<Loom>, lv: &Lv, lookup: &One) {
    for cpu in 0..batches.nr_cpus() {
        batches.pending(cpu).unwrap();
    }
    assert!(batches.drain_all(0, lookup).unwrap().is_some());
    drop(lv.lock());
}

#[test]
fn drain_all_against_add() {
    model(2, || {
        let lv = lruvec();
        let lookup = Arc::new(One(lv));
        let batches = Arc::new(LruBatches::<Loom>::new(2));
        let f = [folio(0), folio(1)];
        touch_locks(&batches, lv, &lookup);
        let (b, l) = (batches.clone(), lookup.clone());
        let adder = loom::thread::spawn(move || {
            b.folio_add_lru(0, f[0], &*l).unwrap();
            b.folio_add_lru(1, f[1], &*l).unwrap();
        });
        batches.drain_all(0, &*lookup).unwrap();
        adder.join().unwrap();
        batches.drain_all(0, &*lookup).unwrap();
        assert_eq!(lv.nr_folios(), 2);
        assert!(f.iter().all(|x| x.test_lru() && x.refcount() == 1));
        assert_eq!(batches.pending(0), Ok(0));
    });
}

#[test]
fn concurrent_drain_all_generation() {
    model(2, || {
        let lv = lruvec();
        let lookup = Arc::new(One(lv));
        let batches = Arc::new(LruBatches::<Loom>::new(1));
        let f = folio(0);
        touch_locks(&batches, lv, &lookup);
        batches.folio_add_lru(0, f, &*lookup).unwrap();
        let (b, l) = (batches.clone(), lookup.clone());
        let other = loom::thread::spawn(move || b.drain_all(0, &*l).unwrap().is_some());
        let mine = batches.drain_all(0, &*lookup).unwrap().is_some();
        let theirs = other.join().unwrap();
        assert!(mine || theirs, "someone drained");
        assert_eq!(batches.drain_gen(), 1 + u64::from(mine) + u64::from(theirs));
        assert_eq!(lv.nr_folios(), 1);
        assert!(f.test_lru());
    });
}
