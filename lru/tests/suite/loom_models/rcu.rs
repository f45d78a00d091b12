//! Loom: ksync's QSBR RCU (`ksync::rcu`, modelled here with lru's loom lock family),
//! synchronize and call_rcu against readers. A reader that loaded a pointer inside a
//! read-side section never sees the object freed (poisoned) before its next quiescent
//! state, including a reader coming online during the grace period.
use super::loom_support;

use ksync::rcu::Rcu;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use loom_support::{Loom, model};

struct Obj {
    alive: AtomicBool,
}

fn obj() -> *mut Obj {
    Box::into_raw(Box::new(Obj {
        alive: AtomicBool::new(true),
    }))
}

fn read_once(rcu: &Rcu<Loom>, ptr: &AtomicPtr<Obj>) {
    let _g = rcu.read_lock(0).unwrap();
    let p = ptr.load(Ordering::Acquire);
    // SAFETY: objects are poisoned, never freed, so the memory stays valid; the test is
    // whether the poison is visible inside a read-side section.
    let obj = unsafe { &*p };
    assert!(obj.alive.load(Ordering::Relaxed), "use after free");
}

/// An RCU domain with CPU 0 online and a reader thread on it that reads, reports a
/// quiescent state, reads again and goes offline; the object it reads is then unpublished
/// (swapped for a new one) and returned, for the writer to free once it is safe.
fn online_reader_and_unpublish() -> (Arc<Rcu<Loom>>, loom::thread::JoinHandle<()>, *mut Obj) {
    let rcu = Arc::new(Rcu::<Loom>::new(1));
    let ptr = Arc::new(AtomicPtr::new(obj()));
    let _ = rcu.pending_callbacks(); // create the lazily built loom lock before spawning
    rcu.online(0).unwrap();
    let (r, p) = (rcu.clone(), ptr.clone());
    let reader = loom::thread::spawn(move || {
        read_once(&r, &p);
        r.quiescent_state(0).unwrap();
        read_once(&r, &p);
        r.offline(0).unwrap();
    });
    let old = ptr.swap(obj(), Ordering::AcqRel);
    (rcu, reader, old)
}

#[test]
fn synchronize_waits_for_readers() {
    model(3, || {
        let (rcu, reader, old) = online_reader_and_unpublish();
        rcu.synchronize(None).unwrap();
        // SAFETY: `old` came from Box::into_raw and is never freed.
        unsafe { &*old }.alive.store(false, Ordering::Relaxed);
        reader.join().unwrap();
    });
}

#[test]
fn reader_coming_online_during_grace_period() {
    model(3, || {
        let rcu = Arc::new(Rcu::<Loom>::new(1));
        let ptr = Arc::new(AtomicPtr::new(obj()));
        let _ = rcu.pending_callbacks(); // create the lazily built loom lock before spawning
        let (r, p) = (rcu.clone(), ptr.clone());
        let reader = loom::thread::spawn(move || {
            r.online(0).unwrap();
            read_once(&r, &p);
            r.offline(0).unwrap();
        });
        let old = ptr.swap(obj(), Ordering::AcqRel);
        rcu.synchronize(None).unwrap();
        // SAFETY: as above.
        unsafe { &*old }.alive.store(false, Ordering::Relaxed);
        reader.join().unwrap();
    });
}

#[test]
fn call_rcu_defers_the_free() {
    model(2, || {
        let rcu = Arc::new(Rcu::<Loom>::new(1));
        let ptr = Arc::new(AtomicPtr::new(obj()));
        let _ = rcu.pending_callbacks(); // create the lazily built loom lock before spawning
        rcu.online(0).unwrap();
        let (r, p) = (rcu.clone(), ptr.clone());
        let reader = loom::thread::spawn(move || {
            read_once(&r, &p);
            r.quiescent_state(0).unwrap();
            r.offline(0).unwrap();
        });
        let old = ptr.swap(obj(), Ordering::AcqRel) as usize;
        rcu.call_rcu(move || {
            // SAFETY: as above.
            unsafe { &*(old as *const Obj) }
                .alive
                .store(false, Ordering::Relaxed);
        });
        let ran = rcu.barrier(None).unwrap();
        assert_eq!(ran, 1);
        reader.join().unwrap();
    });
}

#[test]
fn polled_grace_period_gates_the_free() {
    model(3, || {
        let (rcu, reader, old) = online_reader_and_unpublish();
        let cookie = rcu.get_state_synchronize_rcu();
        assert!(
            !rcu.poll_state_synchronize_rcu(cookie),
            "nobody drove a grace period yet"
        );
        rcu.synchronize(None).unwrap();
        assert!(rcu.poll_state_synchronize_rcu(cookie));
        // SAFETY: `old` came from Box::into_raw and is never freed.
        unsafe { &*old }.alive.store(false, Ordering::Relaxed);
        reader.join().unwrap();
    });
}

#[test]
fn advance_completes_only_after_the_reader_reported() {
    // The writer drives grace periods with `advance` (never waiting) and frees once the
    // cookie's grace period completed; the reader is inside a section, reports, and reads
    // again. The free must never be visible to a read before the reader's report.
    model(3, || {
        let (rcu, reader, old) = online_reader_and_unpublish();
        let cookie = rcu.start_poll_synchronize_rcu();
        let mut freed = false;
        for _ in 0..3 {
            rcu.advance(rcu.gp_needed());
            if rcu.poll_state_synchronize_rcu(cookie) {
                // SAFETY: `old` came from Box::into_raw and is never freed.
                unsafe { &*old }.alive.store(false, Ordering::Relaxed);
                freed = true;
                break;
            }
            loom::thread::yield_now();
        }
        reader.join().unwrap();
        if !freed {
            // The reader is offline now: one more step completes it.
            rcu.advance(false);
            rcu.advance(rcu.gp_needed());
            assert!(
                rcu.poll_state_synchronize_rcu(cookie),
                "advance never completed"
            );
        }
    });
}
