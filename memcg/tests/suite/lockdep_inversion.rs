//! Lockdep reports the inversion `folio_lruvec_relock` would cause with a locked memcg
//! lookup: once reaping has taken lru locks under the tree lock, taking the tree lock
//! under an lru_lock is reported with both class names and fails the thread that did it.
//!
//! Its own process (`rusty_fork_test!`): lockdep's order graph is global to the process, and this test leaves
//! the inverted edge in it (and the tree lock held by the panicked thread, so the tree is
//! leaked rather than dropped).

use crate::common;
use rusty_fork::rusty_fork_test;

use common::*;
use ksync::LockClass;
use ksync::lockdep::{seen_before, take_inversion};
use lru::lock_classes::LruLock;
use memcg::lock_classes::MemcgTreeLock;

rusty_fork_test! {
    #[test]
    fn tree_lock_under_an_lru_lock_is_reported() {
        let tree: &'static Tree = Box::leak(Box::new(setup(1, 1, false).tree));
        let id = tree.root().create_child().unwrap().id();
        // Offline, then reap once its css count is exact (a grace period later): the zombie
        // is reparented under the tree lock.
        tree.offline(id, 0).unwrap();
        grace_period(tree);
        tree.reap(0);
        assert!(seen_before(MemcgTreeLock::data(), LruLock::data()));
        assert!(!seen_before(LruLock::data(), MemcgTreeLock::data()));
        assert_eq!(take_inversion(), None);
        let err = std::thread::spawn(move || {
            let root = tree.root();
            let _lru = root.lruvec(0).unwrap().lock();
            // A locked lookup (what a relock through the tree lock would do).
            let _ = tree.lookup(0);
        })
        .join()
        .expect_err("the inversion must fail the thread");
        let msg = err
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| err.downcast_ref::<&str>().copied())
            .expect("a panic message");
        assert!(msg.contains("lock order inversion"), "{msg}");
        assert!(msg.contains("`memcg_tree`"), "{msg}");
        assert!(msg.contains("`lruvec->lru_lock`"), "{msg}");
        assert_eq!(take_inversion(), Some(("lruvec->lru_lock", "memcg_tree")));
    }
}
