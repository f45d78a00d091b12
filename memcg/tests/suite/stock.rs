//! The per-CPU charge stock on its own (`consume_stock()`, `refill_stock()`,
//! `drain_stock()`, `drain_all_stock()`): what each CPU holds, when it is handed out, when
//! it is uncharged, and that every reference a stock takes on its memcg is dropped once,
//! including when the stocks themselves go away.
#![cfg(not(loom))]

use ksync::Ticket;
use ksync::local_lock::pinned_threads;
use ksync::rcu::Rcu;
use memcg::stock::{ChargeStocks, StockTarget};
use memcg::{MEMCG_CHARGE_BATCH, MemcgError, PAGE_COUNTER_MAX, PageCounter};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Memcg {
    memory: PageCounter,
    refcnt: AtomicUsize,
}

// SAFETY: every `Memcg` of these tests outlives the stocks that cache it.
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

fn memcg() -> Memcg {
    Memcg {
        memory: PageCounter::new_root(PAGE_COUNTER_MAX),
        refcnt: AtomicUsize::new(1),
    }
}

type Stocks = ChargeStocks<Ticket, Memcg>;

/// Charges `nr` pages to `m`'s counter and puts them into `cpu`'s stock.
fn stock(stocks: &Stocks, cpu: usize, m: &Memcg, nr: u64) {
    m.memory.try_charge(nr).unwrap();
    stocks.refill(cpu, m, nr).unwrap();
}

fn refs(m: &Memcg) -> usize {
    m.refcnt.load(Ordering::Relaxed)
}

#[test]
fn consume_takes_exactly_what_the_stock_holds_of_that_memcg() {
    let stocks = Stocks::new(2);
    let (a, b) = (memcg(), memcg());
    assert!(!stocks.consume(0, &a, 1).unwrap(), "empty stock");
    stock(&stocks, 0, &a, 10);
    assert_eq!(
        refs(&a),
        12,
        "the stock holds one reference for caching a, one per page"
    );
    assert!(!stocks.consume(0, &b, 1).unwrap(), "another memcg's stock");
    assert!(!stocks.consume(1, &a, 1).unwrap(), "another CPU's stock");
    assert!(!stocks.consume(0, &a, 11).unwrap(), "more than stocked");
    assert_eq!(stocks.stocked(0, &a).unwrap(), 10);
    assert!(stocks.consume(0, &a, 4).unwrap());
    assert_eq!(stocks.stocked(0, &a).unwrap(), 6);
    // The last pages too: `>=`, not `>`.
    assert!(stocks.consume(0, &a, 6).unwrap());
    assert_eq!(stocks.stocked(0, &a).unwrap(), 0);
    assert!(!stocks.consume(0, &a, 1).unwrap());
    assert_eq!(
        refs(&a),
        12,
        "the consumed pages' references went with them"
    );
    // Consuming never touches the counter: the pages were charged when stocked.
    assert_eq!(a.memory.usage(), 10);
    assert_eq!(stocks.stocked(0, &b).unwrap(), 0);
}

#[test]
fn requests_above_the_batch_never_use_the_stock() {
    let stocks = Stocks::new(1);
    let a = memcg();
    stock(&stocks, 0, &a, MEMCG_CHARGE_BATCH);
    assert_eq!(stocks.stocked(0, &a).unwrap(), MEMCG_CHARGE_BATCH);
    assert!(!stocks.consume(0, &a, MEMCG_CHARGE_BATCH + 1).unwrap());
    assert!(stocks.consume(0, &a, MEMCG_CHARGE_BATCH).unwrap());
}

#[test]
fn refill_drains_another_memcg_and_an_overfull_stock() {
    let stocks = Stocks::new(1);
    let (a, b) = (memcg(), memcg());
    stock(&stocks, 0, &a, 30);
    stock(&stocks, 0, &a, 34);
    // Exactly the batch: kept.
    assert_eq!(stocks.stocked(0, &a).unwrap(), MEMCG_CHARGE_BATCH);
    assert_eq!(
        (a.memory.usage(), refs(&a)),
        (64, 66),
        "one reference per stocked page and one for caching a"
    );
    // Switching to b uncharges a's stocked pages and drops a's reference.
    stock(&stocks, 0, &b, 5);
    assert_eq!((a.memory.usage(), refs(&a)), (0, 1));
    assert_eq!(stocks.stocked(0, &a).unwrap(), 0);
    assert_eq!((stocks.stocked(0, &b).unwrap(), refs(&b)), (5, 7));
    // Above the batch: everything is uncharged and the reference dropped.
    stock(&stocks, 0, &b, MEMCG_CHARGE_BATCH);
    assert_eq!(stocks.stocked(0, &b).unwrap(), 0);
    assert_eq!((b.memory.usage(), refs(&b)), (0, 1));
}

#[test]
fn drains_uncharge_and_drop_the_reference_once() {
    let stocks = Stocks::new(3);
    let (a, b) = (memcg(), memcg());
    stock(&stocks, 0, &a, 7);
    stock(&stocks, 1, &a, 8);
    stock(&stocks, 2, &b, 9);
    assert_eq!((refs(&a), refs(&b)), (1 + 8 + 9, 1 + 10));
    stocks.drain(1).unwrap();
    assert_eq!((a.memory.usage(), refs(&a)), (7, 9));
    stocks.drain(1).unwrap();
    assert_eq!(
        (a.memory.usage(), refs(&a)),
        (7, 9),
        "an empty stock drains nothing"
    );
    // Only the stocks whose memcg matches, counted.
    assert_eq!(stocks.drain_all(|m| std::ptr::eq(m, &a)), 1);
    assert_eq!((a.memory.usage(), refs(&a)), (0, 1));
    assert_eq!((b.memory.usage(), refs(&b)), (9, 11));
    assert_eq!(stocks.drain_all(|m| std::ptr::eq(m, &a)), 0);
    assert_eq!(stocks.drain_all(|_| true), 1);
    assert_eq!((b.memory.usage(), refs(&b)), (0, 1));
}

#[test]
fn dropping_the_stocks_drains_them() {
    let (a, b) = (memcg(), memcg());
    a.memory.try_charge(1).unwrap();
    {
        let stocks = Stocks::new(2);
        stock(&stocks, 0, &a, 63);
        stock(&stocks, 1, &b, 10);
        assert_eq!((refs(&a), refs(&b)), (65, 12));
    }
    assert_eq!((a.memory.usage(), refs(&a)), (1, 1));
    assert_eq!((b.memory.usage(), refs(&b)), (0, 1));
}

#[test]
fn cpu_ids_are_checked() {
    let stocks = Stocks::new(2);
    let a = memcg();
    assert_eq!(stocks.nr_cpus(), 2);
    let bad = MemcgError::InvalidCpu { cpu: 2, nr_cpus: 2 };
    assert_eq!(stocks.consume(2, &a, 1), Err(bad));
    assert_eq!(stocks.consume(2, &a, MEMCG_CHARGE_BATCH + 1), Err(bad));
    assert_eq!(stocks.refill(2, &a, 1), Err(bad));
    assert_eq!(stocks.drain(2), Err(bad));
    assert_eq!(stocks.stocked(2, &a), Err(bad));
    assert_eq!(refs(&a), 1, "a refused refill takes no reference");
    stocks.refill(1, &a, 0).unwrap();
    assert_eq!(refs(&a), 2);
    assert!(format!("{stocks:?}").contains("nr_cpus: 2"));
}

/// A platform whose other CPUs are busy: nothing can be run on them.
fn busy(_: &(dyn Fn(usize) + Sync)) -> bool {
    false
}

/// Owned stocks of three CPUs whose platform finds the other CPUs busy (`drain_all` can run
/// nothing on them), and the threads, ids 0..3, to take each one on its own CPU. This
/// thread is CPU 0.
fn busy_stocks() -> (ksync::local_lock::LocalCpus, Stocks) {
    ksync::cpu::set_this_thread_cpu(0);
    // SAFETY: ids 0..3 are the threads `pinned_threads` starts, one per id; the test thread
    // (id 0) takes no stock while they run.
    let threads = unsafe { ksync::local_lock::LocalCpus::new(pinned_threads::<3>) };
    // SAFETY: the same threads and the test thread take the stocks; `busy` runs nothing.
    let busy_cpus = unsafe { ksync::local_lock::LocalCpus::new(busy) };
    (threads, Stocks::new_local(3, busy_cpus, rcu(3)))
}

/// An RCU domain for `n` CPUs with this thread's CPU (0) online, as the kernel's, which
/// `drain_all` reads other CPUs' cached memcgs under. Leaked: domains live as long as the
/// system.
fn rcu(n: usize) -> &'static Rcu<Ticket> {
    let rcu = Box::leak(Box::new(Rcu::new(n)));
    rcu.online(0).unwrap();
    rcu
}

#[test]
fn owned_stocks_are_taken_on_their_cpu_and_drained_on_each() {
    ksync::cpu::set_this_thread_cpu(0);
    // SAFETY: ids 0..3 are the threads `pinned_threads` starts, one per id; the test thread
    // (id 0) takes no stock while they run.
    let cpus = unsafe { ksync::local_lock::LocalCpus::new(pinned_threads::<3>) };
    let stocks = Stocks::new_local(3, cpus, rcu(3));
    let a = memcg();
    assert!(cpus.on_each_cpu(&|cpu| stock(&stocks, cpu, &a, 5)));
    assert_eq!((a.memory.usage(), refs(&a)), (15, 1 + 3 * 6));
    let other = MemcgError::NotThisCpu { owner: 1, cpu: 0 };
    assert_eq!(stocks.stocked(1, &a), Err(other));
    assert_eq!(stocks.consume(1, &a, 1), Err(other));
    assert_eq!(stocks.stocked(0, &a), Ok(5));
    assert_eq!(stocks.drain_all(|_| true), 3, "each CPU drained its own");
    assert_eq!((a.memory.usage(), refs(&a)), (0, 1));
}

#[test]
fn owned_stocks_of_busy_cpus_drain_at_their_next_use() {
    let (threads, stocks) = busy_stocks();
    let (a, b) = (memcg(), memcg());
    assert!(threads.on_each_cpu(&|cpu| stock(&stocks, cpu, &a, 5)));
    // drain_all_stock with the others busy: this CPU's now, the others' asked for.
    assert_eq!(stocks.drain_all(|_| true), 1);
    assert_eq!(a.memory.usage(), 10, "the busy CPUs still hold theirs");
    assert!(threads.on_each_cpu(&|cpu| {
        assert!(!stocks.consume(cpu, &a, 1).unwrap(), "drained at first use");
        assert_eq!(stocks.stocked(cpu, &a), Ok(0));
    }));
    assert_eq!((a.memory.usage(), refs(&a)), (0, 1));
    // A request is honoured once: the stock fills again afterwards.
    assert!(threads.on_each_cpu(&|cpu| {
        stock(&stocks, cpu, &b, 2);
        assert!(stocks.consume(cpu, &b, 1).unwrap());
    }));
    assert_eq!(b.memory.usage(), 6);
    drop(stocks);
    // The consumed pages stay charged with their references (their charges own them).
    assert_eq!(
        (b.memory.usage(), refs(&b)),
        (3, 1 + 3),
        "dropping drains the rest"
    );
}

#[test]
fn busy_cpus_caching_another_memcg_are_not_asked_to_drain() {
    let (threads, stocks) = busy_stocks();
    let (over, other) = (memcg(), memcg());
    // CPUs 0 and 1 stock the memcg over its limit, CPU 2 an unrelated one.
    let of = |cpu: usize| if cpu == 2 { &other } else { &over };
    assert!(threads.on_each_cpu(&|cpu| stock(&stocks, cpu, of(cpu), 5)));
    // drain_all_stock(over) on CPU 0 with the others busy (`mem_cgroup_is_descendant`).
    assert_eq!(stocks.drain_all(|m| std::ptr::eq(m, &over)), 1);
    assert!(threads.on_each_cpu(&|cpu| {
        let kept = stocks.consume(cpu, of(cpu), 1).unwrap();
        assert_eq!(
            kept,
            cpu == 2,
            "cpu {cpu}: only the stock of another memcg is kept"
        );
    }));
    assert_eq!((over.memory.usage(), refs(&over)), (0, 1));
    assert_eq!(other.memory.usage(), 5, "4 stocked and 1 consumed");
    assert!(threads.on_each_cpu(&|cpu| {
        if cpu == 2 {
            assert_eq!(stocks.stocked(cpu, &other), Ok(4));
        }
    }));
    // A drained stock no longer names its memcg (which may be freed once the stock's
    // reference is gone): only CPU 2's is looked at now.
    let looked = AtomicUsize::new(0);
    let pred = |m: &Memcg| {
        looked.fetch_add(1, Ordering::Relaxed);
        std::ptr::eq(m, &over)
    };
    assert_eq!(stocks.drain_all(pred), 0);
    assert_eq!(looked.load(Ordering::Relaxed), 1);
}
