//! Loom: `page_counter` charges racing near `max` never overcharge, at any level, and a
//! charge racing a lower `set_max` never leaves usage above the new limit.
use super::loom_support;

use loom::sync::Arc;
use loom::thread;
use memcg::PageCounter;
use std::ptr::NonNull;

struct Pair {
    parent: Box<PageCounter>,
    child_a: PageCounter,
    child_b: PageCounter,
}

fn pair(parent_max: u64) -> Arc<Pair> {
    let parent = Box::new(PageCounter::new_root(parent_max));
    let p = NonNull::from(&*parent);
    // SAFETY: `parent` is boxed and owned by the same `Pair`, dropped after the children
    // (field order).
    let (child_a, child_b) = unsafe {
        (
            PageCounter::new_child(p, memcg::PAGE_COUNTER_MAX),
            PageCounter::new_child(p, memcg::PAGE_COUNTER_MAX),
        )
    };
    Arc::new(Pair {
        parent,
        child_a,
        child_b,
    })
}

#[test]
fn siblings_racing_for_the_parents_limit_never_overcharge() {
    loom_support::model(|| {
        let t = pair(3);
        let t2 = t.clone();
        let h = thread::spawn(move || {
            let ok = t2.child_b.try_charge(2).is_ok();
            // Observed from inside the race: never above max.
            assert!(t2.parent.usage() <= 3);
            ok
        });
        let ok_a = t.child_a.try_charge(2).is_ok();
        assert!(t.parent.usage() <= 3);
        let ok_b = h.join().unwrap();
        // 2 + 2 > 3: exactly one wins (the loser is refused only by the real limit).
        assert!(ok_a ^ ok_b, "a {ok_a} b {ok_b}");
        assert_eq!(t.parent.usage(), 2);
        assert_eq!(t.child_a.usage() + t.child_b.usage(), 2);
        assert_eq!(t.parent.failcnt(), 1);
        // The loser's own level was unwound.
        assert_eq!(t.child_a.failcnt() + t.child_b.failcnt(), 0);
    });
}

#[test]
fn charge_racing_a_lower_limit_never_ends_above_it() {
    loom_support::model(|| {
        let c = Arc::new(PageCounter::new_root(10));
        c.try_charge(1).unwrap();
        let c2 = c.clone();
        let h = thread::spawn(move || c2.set_max(2).is_ok());
        let charged = c.try_charge(2).is_ok();
        let limited = h.join().unwrap();
        // Both may not succeed: 1 + 2 > 2.
        assert!(!(charged && limited), "charge and set_max both succeeded");
        assert!(c.usage() <= c.max());
        assert_eq!(c.usage(), 1 + if charged { 2 } else { 0 });
    });
}

#[test]
fn uncharge_and_charge_interleave_exactly() {
    loom_support::model(|| {
        let c = Arc::new(PageCounter::new_root(2));
        c.try_charge(2).unwrap();
        let c2 = c.clone();
        let h = thread::spawn(move || c2.uncharge(1).is_ok());
        let got = c.try_charge(1).is_ok();
        assert!(h.join().unwrap());
        assert!(c.usage() <= 2);
        assert_eq!(c.usage(), 1 + u64::from(got));
    });
}
