//! Loom: the css count's switch from per-CPU slots to the shared atomic
//! (`percpu_ref_kill()` -> grace period -> `percpu_ref_switch_to_atomic_rcu()`) against a
//! CPU taking and dropping references inside read-side sections of the real QSBR RCU. No
//! reference is lost or counted twice: after the fold the shared count is exact, so the
//! count reaches zero exactly when the last reference is dropped.
use super::loom_support;

use ksync::Rcu;
use loom::sync::Arc;
use loom::thread;
use loom_support::Loom;
use memcg::percpu_ref::PercpuRef;

/// CPU 1 takes a reference in one section and drops it in the next, reporting quiescent
/// states between and after (as the kernel does at its scheduling points), then goes
/// offline; CPU 0 kills the count, waits for the grace period, folds and drops the
/// initial reference.
#[test]
fn kill_and_fold_against_a_cpu_in_its_sections() {
    loom_support::model(|| {
        let rcu = Arc::new(Rcu::<Loom>::new(2));
        let _ = rcu.pending_callbacks(); // build the lazily made loom lock before spawning
        rcu.online(0).unwrap();
        rcu.online(1).unwrap();
        let r = Arc::new(PercpuRef::new(2));
        let (rcu1, r1) = (rcu.clone(), r.clone());
        let cpu1 = thread::spawn(move || {
            {
                let _g = rcu1.read_lock(1).unwrap();
                r1.get_many(Some(1), 1);
            }
            rcu1.quiescent_state(1).unwrap();
            {
                let _g = rcu1.read_lock(1).unwrap();
                r1.put_many(Some(1), 1);
            }
            rcu1.offline(1).unwrap();
        });
        assert!(r.kill());
        let cookie = rcu.start_poll_synchronize_rcu();
        r.set_confirm_cookie(cookie);
        r.put_many(None, 1); // the initial reference
        // Before the grace period CPU 1 may still be writing its slot: no fold yet.
        if !r.try_confirm(|c| rcu.poll_state_synchronize_rcu(c)) {
            rcu.synchronize(Some(0)).unwrap();
        }
        assert!(r.try_confirm(|c| rcu.poll_state_synchronize_rcu(c)));
        cpu1.join().unwrap();
        assert_eq!(r.count(), 0);
        assert!(
            r.is_zero(),
            "every reference dropped: the shared count is zero"
        );
    });
}

/// A reference taken on a CPU's slot before the switch is carried into the shared count by
/// the fold: while CPU 1 holds it the count cannot read zero, however its get and the kill
/// interleave, and dropping it afterwards (on the shared count) brings the count to zero.
#[test]
fn a_reference_taken_before_the_switch_survives_the_fold() {
    loom_support::model(|| {
        let rcu = Arc::new(Rcu::<Loom>::new(2));
        let _ = rcu.pending_callbacks();
        rcu.online(0).unwrap();
        rcu.online(1).unwrap();
        let r = Arc::new(PercpuRef::new(2));
        let (rcu1, r1) = (rcu.clone(), r.clone());
        let cpu1 = thread::spawn(move || {
            {
                let _g = rcu1.read_lock(1).unwrap();
                r1.get_many(Some(1), 1);
            }
            rcu1.offline(1).unwrap();
        });
        assert!(r.kill());
        r.set_confirm_cookie(rcu.start_poll_synchronize_rcu());
        r.put_many(None, 1);
        rcu.synchronize(Some(0)).unwrap();
        assert!(r.try_confirm(|c| rcu.poll_state_synchronize_rcu(c)));
        cpu1.join().unwrap();
        assert!(!r.is_zero(), "CPU 1's reference is still held");
        assert_eq!(r.count(), 1);
        r.put_many(Some(0), 1);
        assert!(r.is_zero());
    });
}
