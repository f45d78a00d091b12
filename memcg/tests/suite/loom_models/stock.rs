//! Loom: the per-CPU charge stock against a concurrent `drain_all_stock()` (as offline and
//! limit reclaim do from another CPU). No page is lost or double-uncharged: the page counter
//! always equals the pages handed out plus what the stocks hold, and references taken by a
//! stock are dropped exactly once.
use super::loom_support;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use loom_support::Loom;
use memcg::stock::{ChargeStocks, StockTarget};
use memcg::{MEMCG_CHARGE_BATCH, PageCounter};
use std::ptr::NonNull;

struct Memcg {
    memory: PageCounter,
    refcnt: AtomicUsize,
}

// SAFETY: the test keeps every `Memcg` alive (in an `Arc`) for the whole model run.
unsafe impl StockTarget for Memcg {
    fn page_counter(&self) -> &PageCounter {
        &self.memory
    }
    fn css_get_many(&self, _cpu: usize, n: usize) {
        self.refcnt.fetch_add(n, Ordering::Relaxed);
    }
    unsafe fn css_put_many(this: NonNull<Self>, _cpu: Option<usize>, n: usize) {
        // SAFETY: the stock passes back a pointer it took references through.
        unsafe { this.as_ref() }
            .refcnt
            .fetch_sub(n, Ordering::Relaxed);
    }
}

/// `try_charge_memcg()`'s stock logic on one CPU (no limit, so no reclaim).
fn charge(stocks: &ChargeStocks<Loom, Memcg>, cpu: usize, m: &Memcg, nr: u64) {
    if stocks.consume(cpu, m, nr).unwrap() {
        // The pages' references came with them; a plain charge keeps none.
        m.refcnt.fetch_sub(nr as usize, Ordering::Relaxed);
        return;
    }
    m.memory.try_charge(MEMCG_CHARGE_BATCH).unwrap();
    stocks.refill(cpu, m, MEMCG_CHARGE_BATCH - nr).unwrap();
}

fn memcg() -> Memcg {
    Memcg {
        memory: PageCounter::new_root(memcg::PAGE_COUNTER_MAX),
        refcnt: AtomicUsize::new(1),
    }
}

#[test]
fn drain_all_against_charge_keeps_the_counter_exact() {
    loom_support::model(|| {
        let stocks = Arc::new(ChargeStocks::<Loom, Memcg>::new(2));
        let m = Arc::new(memcg());
        let (s2, m2) = (stocks.clone(), m.clone());
        let drainer = thread::spawn(move || s2.drain_all(|c| std::ptr::eq(c, &*m2)));
        charge(&stocks, 0, &m, 1);
        charge(&stocks, 0, &m, 1);
        drainer.join().unwrap();
        let stocked = stocks.stocked(0, &m).unwrap();
        assert_eq!(m.memory.usage(), 2 + stocked);
        stocks.drain_all(|_| true);
        assert_eq!(m.memory.usage(), 2);
        assert_eq!(m.refcnt.load(Ordering::Relaxed), 1);
    });
}

#[test]
fn switching_memcgs_drains_the_old_one_against_a_remote_drain() {
    loom_support::model(|| {
        let stocks = Arc::new(ChargeStocks::<Loom, Memcg>::new(1));
        let a = Arc::new(memcg());
        let b = Arc::new(memcg());
        charge(&stocks, 0, &a, 1);
        let (s2, a2) = (stocks.clone(), a.clone());
        let drainer = thread::spawn(move || s2.drain_all(|c| std::ptr::eq(c, &*a2)));
        // CPU 0 moves on to b: a's stock goes back either here or in the drainer, once.
        charge(&stocks, 0, &b, 1);
        drainer.join().unwrap();
        assert_eq!(a.memory.usage(), 1);
        assert_eq!(a.refcnt.load(Ordering::Relaxed), 1);
        assert_eq!(b.memory.usage(), 1 + stocks.stocked(0, &b).unwrap());
        drop(stocks);
        assert_eq!(b.memory.usage(), 1);
        assert_eq!(b.refcnt.load(Ordering::Relaxed), 1);
    });
}
