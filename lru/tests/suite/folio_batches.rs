//! Per-CPU folio batches: fill, move when full, drain this CPU, drain all, relocking.

use crate::common;
use rusty_fork::rusty_fork_test;

use common::{Counting, Liar, Lookup, folios, lruvec};
use ksync::Ticket;
use ksync::local_lock::pinned_threads;
use lru::{
    FOLIO_BATCH_SIZE, FolioBatch, FolioFlags, LruBatches, LruError, LruGenFolioGrouped, LruList,
    LruMode,
};

type G = LruGenFolioGrouped;

rusty_fork_test! {
    #[test]
    fn folio_batch_basics() {
        let f = folios(FOLIO_BATCH_SIZE + 1, 1, false);
        let mut b = FolioBatch::new();
        for (i, &x) in f.iter().take(FOLIO_BATCH_SIZE).enumerate() {
            assert_eq!(b.add(x).ok(), Some(FOLIO_BATCH_SIZE - i - 1));
        }
        assert_eq!(b.space(), 0);
        assert!(b.add(f[FOLIO_BATCH_SIZE]).is_err());
        assert!(b.iter().zip(f.iter()).all(|(a, b)| std::ptr::eq(a, *b)));
        b.reinit();
        assert_eq!((b.count(), b.space()), (0, FOLIO_BATCH_SIZE));
        // The entries past the count are stale and never read.
        assert_eq!(b.iter().count(), 0);
        assert_eq!(b.add(f[FOLIO_BATCH_SIZE]).ok(), Some(FOLIO_BATCH_SIZE - 1));
        let only: Vec<_> = b.iter().collect();
        assert_eq!(only.len(), 1);
        assert!(std::ptr::eq(only[0], f[FOLIO_BATCH_SIZE]));
    }
}

rusty_fork_test! {
    #[test]
    fn lru_add_moves_when_full() {
        let lv = lruvec::<Ticket, G>(1, LruMode::Mglru);
        let lookup = Lookup(vec![lv]);
        let batches = LruBatches::<Ticket>::new(2);
        let f = folios(FOLIO_BATCH_SIZE, 1, false);
        for &x in &f[..FOLIO_BATCH_SIZE - 1] {
            let s = batches.folio_add_lru(0, x, &lookup).unwrap();
            assert_eq!(s.moved, 0);
        }
        assert_eq!(batches.pending(0), Ok(FOLIO_BATCH_SIZE - 1));
        assert_eq!(lv.nr_folios(), 0);
        assert!(f.iter().all(|x| x.refcount() <= 2), "owner + batch");
        let s = batches
            .folio_add_lru(0, f[FOLIO_BATCH_SIZE - 1], &lookup)
            .unwrap();
        assert_eq!((s.moved, s.lock_holds), (FOLIO_BATCH_SIZE, 1));
        assert_eq!(lv.nr_folios(), FOLIO_BATCH_SIZE);
        assert_eq!(batches.pending(0), Ok(0));
        assert!(
            f.iter().all(|x| x.test_lru() && x.refcount() == 1),
            "batch refs dropped, the owner's kept"
        );
        assert_eq!(
            batches.folio_add_lru(0, f[0], &lookup),
            Err(LruError::AlreadyOnLru)
        );
        assert_eq!(
            batches.folio_add_lru(2, f[0], &lookup),
            Err(LruError::InvalidCpu(2))
        );
        assert_eq!(batches.pending(5), Err(LruError::InvalidCpu(5)));
    }
}

rusty_fork_test! {
    #[test]
    fn activate_and_deactivate_batches() {
        let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
        let lookup = Lookup(vec![lv]);
        let batches = LruBatches::<Ticket>::new(1);
        let f = folios(4, 1, false);
        for &x in &f {
            batches.folio_add_lru(0, x, &lookup).unwrap();
        }
        batches.drain_cpu(0, &lookup).unwrap();
        assert_eq!(lv.lru_size(LruList::InactiveFile), 4);
        for &x in &f[..3] {
            batches.folio_activate(0, x, &lookup).unwrap();
        }
        // Isolated meanwhile: the activation skips it (TestClearLRU fails), as below for
        // a deactivation, and it stays isolated.
        lv.isolate_folio(f[2]).unwrap();
        let s = batches.drain_cpu(0, &lookup).unwrap();
        assert_eq!((s.moved, s.skipped, s.error), (2, 1, None));
        assert!(!f[2].test_lru());
        assert_eq!(lv.lru_size(LruList::ActiveFile), 2);
        lv.putback_folio(f[2]).unwrap();
        // Already active: ignored at queue time.
        batches.folio_activate(0, f[0], &lookup).unwrap();
        assert_eq!(batches.pending(0), Ok(0));
        batches.folio_deactivate(0, f[0], &lookup).unwrap();
        // Isolated meanwhile: the batch skips it (TestClearLRU fails) and it stays isolated.
        batches.folio_deactivate(0, f[1], &lookup).unwrap();
        lv.isolate_folio(f[1]).unwrap();
        let s = batches.drain_cpu(0, &lookup).unwrap();
        assert_eq!((s.moved, s.skipped), (1, 1));
        assert!(!f[1].test_lru());
        assert!(!f[0].test(FolioFlags::ACTIVE));
        assert_eq!(lv.lru_size(LruList::ActiveFile), 0);
        assert_eq!(lv.lru_size(LruList::InactiveFile), 3);
    }
}

rusty_fork_test! {
    #[test]
    fn relock_counts_lock_holds_across_lruvecs() {
        let a = lruvec::<Counting, G>(1, LruMode::Mglru);
        let b = lruvec::<Counting, G>(2, LruMode::Mglru);
        let lookup = Lookup(vec![a, b]);
        let batches = LruBatches::<Counting>::new(1);
        // Runs: 10 of a, 10 of b, 11 of a -> 3 lock holds for one full batch.
        let fa = folios(21, 1, false);
        let fb = folios(10, 2, false);
        let order: Vec<_> = fa[..10]
            .iter()
            .chain(fb.iter())
            .chain(fa[10..].iter())
            .copied()
            .collect();
        let mut last = None;
        for &x in &order {
            last = Some(batches.folio_add_lru(0, x, &lookup).unwrap());
        }
        let s = last.unwrap();
        assert_eq!((s.moved, s.lock_holds), (FOLIO_BATCH_SIZE, 3));
        assert_eq!(a.raw_lock().acquisitions(), 2);
        assert_eq!(b.raw_lock().acquisitions(), 1);
    }
}

rusty_fork_test! {
    #[test]
    fn missing_lruvec_is_reported_not_lost_silently() {
        let lv = lruvec::<Ticket, G>(1, LruMode::Mglru);
        let lookup = Lookup(vec![lv]);
        let batches = LruBatches::<Ticket>::new(1);
        let good = folios(1, 1, false);
        let orphan = folios(1, 99, false);
        batches.folio_add_lru(0, orphan[0], &lookup).unwrap();
        batches.folio_add_lru(0, good[0], &lookup).unwrap();
        let s = batches.drain_cpu(0, &lookup);
        // The callers with nowhere to send it warn on this: the folio error counts as failed.
        assert!(lru::MoveStats::failed(&s));
        let s = s.unwrap();
        assert_eq!(s.moved, 1);
        assert_eq!(s.error, Some(LruError::WrongLruvec));
        assert!(good[0].test_lru() && !orphan[0].test_lru());
        assert!(lru::MoveStats::drain_all_failed(&Ok(Some(s))));
        // A refused call fails too; a clean move and a skipped drain_all do not.
        assert!(lru::MoveStats::failed(&batches.drain_cpu(5, &lookup)));
        let clean = batches.drain_cpu(0, &lookup);
        assert!(!lru::MoveStats::failed(&clean));
        assert!(!lru::MoveStats::drain_all_failed(&Ok(None)));
        assert!(!lru::MoveStats::drain_all_failed(&Ok(Some(clean.unwrap()))));
    }
}

rusty_fork_test! {
    #[test]
    fn drain_all_drains_every_cpu_and_bumps_generation() {
        let lv = lruvec::<Ticket, G>(1, LruMode::Mglru);
        let lookup = Lookup(vec![lv]);
        let batches = LruBatches::<Ticket>::new(4);
        let f = folios(8, 1, false);
        for (i, &x) in f.iter().enumerate() {
            batches.folio_add_lru(i % 4, x, &lookup).unwrap();
        }
        let s = batches.drain_all(0, &lookup).unwrap().expect("drained");
        assert_eq!(s.moved, 8);
        assert_eq!(batches.drain_gen(), 1);
        assert_eq!(lv.nr_folios(), 8);
        assert!((0..4).all(|c| batches.pending(c) == Ok(0)));
    }
}

rusty_fork_test! {
    #[test]
    fn concurrent_add_and_drain_lose_nothing() {
        let lv = lruvec::<Ticket, G>(1, LruMode::Mglru);
        let lookup = Lookup(vec![lv]);
        let batches = LruBatches::<Ticket>::new(3);
        let per_cpu = 500;
        let f = folios(3 * per_cpu, 1, false);
        std::thread::scope(|s| {
            for cpu in 0..3 {
                let (b, l, fs) = (&batches, &lookup, &f[cpu * per_cpu..(cpu + 1) * per_cpu]);
                s.spawn(move || {
                    for &x in fs {
                        b.folio_add_lru(cpu, x, l).unwrap();
                    }
                });
            }
            s.spawn(|| {
                for _ in 0..50 {
                    batches.drain_all(0, &lookup).unwrap();
                }
            });
        });
        batches.drain_all(0, &lookup).unwrap();
        assert_eq!(lv.nr_folios(), 3 * per_cpu);
        assert!(
            f.iter().all(|x| x.test_lru() && x.refcount() == 1),
            "only the owner's"
        );
    }
}

rusty_fork_test! {
    #[test]
    fn a_lookup_answering_another_lruvec_is_refused() {
        // The batch adds each folio to the guard `folio_lruvec_relock` returned without
        // asking again whether it is the folio's: the relock asks the looked-up one.
        let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
        let liar = Liar(lv);
        let batches = LruBatches::<Ticket>::new(1);
        let mine = folios(1, 1, false);
        let theirs = folios(1, 2, false);
        batches.folio_add_lru(0, mine[0], &liar).unwrap();
        batches.folio_add_lru(0, theirs[0], &liar).unwrap();
        let s = batches.drain_cpu(0, &liar).unwrap();
        assert_eq!(s.moved, 1);
        assert_eq!(s.error, Some(LruError::WrongLruvec));
        assert!(mine[0].test_lru() && !theirs[0].test_lru());
        assert_eq!(lv.nr_folios(), 1, "the other memcg's folio stays off this lruvec");
        assert_eq!(theirs[0].refcount(), 1, "the batch reference is dropped");
    }
}

rusty_fork_test! {
    #[test]
    fn errors_of_other_folios_come_back_in_stats() {
        let lv = lruvec::<Ticket, G>(1, LruMode::Mglru);
        let lookup = Lookup(vec![lv]);
        let batches = LruBatches::<Ticket>::new(1);
        let orphan = folios(1, 99, false);
        let good = folios(FOLIO_BATCH_SIZE - 1, 1, false);
        batches.folio_add_lru(0, orphan[0], &lookup).unwrap();
        let mut last = None;
        for &x in &good {
            last = Some(
                batches
                    .folio_add_lru(0, x, &lookup)
                    .expect("this caller's input is fine"),
            );
        }
        let s = last.unwrap();
        assert_eq!(s.moved, FOLIO_BATCH_SIZE - 1);
        assert_eq!(s.error, Some(LruError::WrongLruvec));
        assert_eq!(
            orphan[0].refcount(),
            1,
            "the batch reference is dropped even on error"
        );
    }
}

rusty_fork_test! {
    #[test]
    fn node_lock_batches_one_hold_per_node_and_counts_its_own_class() {
        use ksync::LockClass;
        use lru::lock_classes::PgdatLruLock;
        type H = common::Sa<Ticket, G>;
        ksync::stat::set_enabled(true);
        let node = common::pgdat::<H>();
        let a = common::lruvec_on(node, 1, LruMode::Mglru, lru::LruvecLock::Node);
        let b = common::lruvec_on(node, 2, LruMode::Mglru, lru::LruvecLock::Node);
        let lookup = Lookup(vec![a, b]);
        let batches = LruBatches::<Ticket>::new(1);
        // Alternating memcgs: with per-memcg locks every folio would need a relock; with the
        // node's lock the whole batch is one hold.
        let fa = folios(16, 1, false);
        let fb = folios(15, 2, false);
        let order: Vec<_> = fa
            .iter()
            .zip(fb.iter())
            .flat_map(|(x, y)| [*x, *y])
            .chain([fa[15]])
            .collect();
        assert_eq!(order.len(), FOLIO_BATCH_SIZE);
        let before = PgdatLruLock::data().snapshot();
        let mut last = None;
        for &x in &order {
            last = Some(batches.folio_add_lru(0, x, &lookup).unwrap());
        }
        let s = last.unwrap();
        assert_eq!((s.moved, s.lock_holds), (FOLIO_BATCH_SIZE, 1));
        // Only this test takes node locks in its process: its class counted exactly the hold.
        let d = PgdatLruLock::data().snapshot().since(&before);
        assert_eq!(d.acquisitions, 1);
        assert_eq!((a.nr_folios(), b.nr_folios()), (16, 15));
        // The same pattern on own-locked lruvecs: one hold per run, i.e. per folio.
        let c = lruvec::<Ticket, G>(3, LruMode::Mglru);
        let d2 = lruvec::<Ticket, G>(4, LruMode::Mglru);
        let lookup = Lookup(vec![c, d2]);
        let fc = folios(16, 3, false);
        let fd = folios(15, 4, false);
        let order: Vec<_> = fc
            .iter()
            .zip(fd.iter())
            .flat_map(|(x, y)| [*x, *y])
            .chain([fc[15]])
            .collect();
        let mut last = None;
        for &x in &order {
            last = Some(batches.folio_add_lru(0, x, &lookup).unwrap());
        }
        assert_eq!(last.unwrap().lock_holds, FOLIO_BATCH_SIZE);
    }
}

rusty_fork_test! {
    #[test]
    fn pending_counts_all_three_batches() {
        let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
        let lookup = Lookup(vec![lv]);
        let batches = LruBatches::<Ticket>::new(3);
        assert_eq!(batches.nr_cpus(), 3);
        let on_lru = folios(3, 1, false);
        for &x in &on_lru {
            lv.lock().add_folio(x).unwrap();
        }
        on_lru[2].set(FolioFlags::ACTIVE);
        let new = folios(4, 1, false);
        for &x in &new {
            batches.folio_add_lru(1, x, &lookup).unwrap();
        }
        batches.folio_activate(1, on_lru[0], &lookup).unwrap();
        batches.folio_activate(1, on_lru[1], &lookup).unwrap();
        batches.folio_deactivate(1, on_lru[2], &lookup).unwrap();
        // 4 to add, 2 to activate, 1 to deactivate.
        assert_eq!(batches.pending(1), Ok(7));
        assert_eq!((batches.pending(0), batches.pending(2)), (Ok(0), Ok(0)));
        let s = batches.drain_cpu(1, &lookup).unwrap();
        assert_eq!((s.moved, s.skipped), (7, 0));
        assert_eq!(batches.pending(1), Ok(0));
    }
}

rusty_fork_test! {
    #[test]
    fn queued_folios_that_need_nothing_by_move_time_are_skipped() {
        let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
        let lookup = Lookup(vec![lv]);
        let batches = LruBatches::<Ticket>::new(1);
        let f = folios(3, 1, false);
        for &x in &f {
            lv.lock().add_folio(x).unwrap();
        }
        // Queued while inactive, activated directly before the batch moves: nothing to do.
        batches.folio_activate(0, f[0], &lookup).unwrap();
        assert!(lv.lock().activate(f[0]).unwrap());
        batches.folio_activate(0, f[1], &lookup).unwrap();
        let s = batches.drain_cpu(0, &lookup).unwrap();
        assert_eq!((s.moved, s.skipped, s.error), (1, 1, None));
        assert_eq!(lv.lru_size(LruList::ActiveFile), 2);
        assert!(f.iter().all(|x| x.test_lru() && x.refcount() == 1));
    }
}

rusty_fork_test! {
    #[test]
    fn deactivation_ignores_folios_off_the_lru_or_unevictable() {
        let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
        let lookup = Lookup(vec![lv]);
        let batches = LruBatches::<Ticket>::new(1);
        let f = folios(3, 1, false);
        for &x in &f[..2] {
            x.set(FolioFlags::ACTIVE);
            lv.lock().add_folio(x).unwrap();
        }
        f[1].set(FolioFlags::UNEVICTABLE);
        // f[2] is on no LRU; f[1] is unevictable: neither is queued; f[0] is.
        for &x in &f {
            assert_eq!(
                batches.folio_deactivate(0, x, &lookup),
                Ok(Default::default())
            );
        }
        assert_eq!(batches.pending(0), Ok(1));
        // Activation likewise ignores unevictable folios and folios off the LRU.
        f[0].clear(FolioFlags::ACTIVE);
        f[1].clear(FolioFlags::ACTIVE);
        batches.folio_activate(0, f[1], &lookup).unwrap();
        batches.folio_activate(0, f[2], &lookup).unwrap();
        assert_eq!(batches.pending(0), Ok(1));
        assert_eq!(
            batches.folio_deactivate(1, f[0], &lookup),
            Err(LruError::InvalidCpu(1))
        );
        assert_eq!(
            batches.folio_activate(1, f[0], &lookup),
            Err(LruError::InvalidCpu(1))
        );
    }
}

rusty_fork_test! {
    #[test]
    fn each_full_drain_bumps_the_generation_once() {
        let lv = lruvec::<Ticket, G>(1, LruMode::Mglru);
        let lookup = Lookup(vec![lv]);
        let batches = LruBatches::<Ticket>::new(2);
        assert_eq!(batches.drain_gen(), 0);
        for round in 1..=3 {
            assert!(batches.drain_all(1, &lookup).unwrap().is_some());
            assert_eq!(batches.drain_gen(), round);
        }
        assert_eq!(batches.drain_all(2, &lookup), Err(LruError::InvalidCpu(2)));
        assert_eq!(batches.drain_gen(), 3);
        assert!(format!("{batches:?}").contains("drain_gen: 3"));
    }
}

fn refuse(_: &(dyn Fn(usize) + Sync)) -> bool {
    false
}

rusty_fork_test! {
    #[test]
    fn owned_batches_refuse_other_cpus_and_drain_on_each_cpu() {
        ksync::cpu::set_this_thread_cpu(0);
        // SAFETY: ids 0..4 are the threads `pinned_threads` starts, one per id; the test
        // thread (id 0) takes no batch while they run.
        let cpus = unsafe { ksync::local_lock::LocalCpus::new(pinned_threads::<4>) };
        let lv = lruvec::<Ticket, G>(1, LruMode::Mglru);
        let lookup = Lookup(vec![lv]);
        let batches = LruBatches::<Ticket>::new_local(4, cpus);
        let f = folios(8, 1, false);
        assert!(cpus.on_each_cpu(&|cpu| {
            for &x in &f[2 * cpu..2 * cpu + 2] {
                batches.folio_add_lru(cpu, x, &lookup).unwrap();
            }
            assert_eq!(batches.pending(cpu), Ok(2));
        }));
        // Named from CPU 0, CPU 1's batches are refused, not shared.
        let other = LruError::NotThisCpu { owner: 1, cpu: 0 };
        assert_eq!(batches.pending(1), Err(other));
        assert_eq!(batches.folio_add_lru(1, f[0], &lookup).err(), Some(other));
        assert_eq!(batches.drain_cpu(1, &lookup).err(), Some(other));
        assert_eq!(batches.pending(0), Ok(2));
        // lru_add_drain_all: each CPU drains its own; nothing is left anywhere.
        let s = batches.drain_all(0, &lookup).unwrap().expect("drained");
        assert_eq!((s.moved, s.error), (8, None));
        assert_eq!(lv.nr_folios(), 8);
        assert!(cpus.on_each_cpu(&|cpu| assert_eq!(batches.pending(cpu), Ok(0))));
        assert!(f.iter().all(|x| x.test_lru() && x.refcount() == 1));
    }
}

rusty_fork_test! {
    #[test]
    fn owned_batches_report_a_drain_that_could_not_run() {
        ksync::cpu::set_this_thread_cpu(0);
        // SAFETY: only the test thread (id 0) runs, and `refuse` runs nothing.
        let cpus = unsafe { ksync::local_lock::LocalCpus::new(refuse) };
        let lv = lruvec::<Ticket, G>(1, LruMode::Mglru);
        let lookup = Lookup(vec![lv]);
        let batches = LruBatches::<Ticket>::new_local(2, cpus);
        let f = folios(1, 1, false);
        batches.folio_add_lru(0, f[0], &lookup).unwrap();
        assert_eq!(batches.drain_all(0, &lookup), Err(LruError::DrainRefused));
        assert_eq!(batches.pending(0), Ok(1), "nothing drained behind the caller's back");
        batches.drain_cpu(0, &lookup).unwrap();
        assert_eq!(lv.nr_folios(), 1);
    }
}
