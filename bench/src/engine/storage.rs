//! Storage the engine owns for what its instances borrow: each instance's fault-core
//! context ([`mm::context::Vm`]) lives here, outside the instance, so that the address
//! spaces and memcg references the instance keeps can borrow it with an ordinary lifetime.
//!
//! Why the engine owns it: an instance holds both the context and the borrowers of the
//! context (its address spaces, which point at the context's page allocator and page
//! tables, and its memcg references, which borrow the context's hierarchy). A struct that
//! owned the context and borrowed it at once would be self-referential, which safe Rust
//! cannot express; the borrowers would need a `'static` they do not have. Here the engine
//! makes one [`Storage`] per (scenario, config, CPU count) before it builds any instance
//! of it, passes it in [`super::Setup::storage`], and drops it after the last instance
//! of that point is torn down, so the borrow checker proves that nothing an instance
//! keeps outlives the context it borrows.
//!
//! What stays until the point ends: each context's own structure (its hierarchy's root,
//! id table, node data and per-CPU batches: 197 KiB for seed002's 1,564-memcg context,
//! measured on the host), not what the context manages. An instance's
//! teardown ([`crate::vm::Ctx::shutdown`]) unmaps its address spaces, frees its pages,
//! offlines and reaps its memcgs (and with the last of them their per-node slab chunks)
//! and checks that nothing is left charged or cached, block by block, as before.
//!
//! The storage only grows: [`Storage::keep`] takes `&self`, hands back a reference that
//! lives as long as the storage, and never moves or drops a kept value before the storage
//! itself is dropped. Each value is boxed, so its address is fixed when it is kept. It is a
//! list of write-once cells, walked to its end on each `keep`: a point keeps one context
//! per instance (its variants times its instance blocks, tens), not thousands.

use alloc::boxed::Box;
use core::any::Any;
use core::cell::OnceCell;
use core::fmt;

/// Values kept for as long as the storage lives (see the [module docs](self)).
#[derive(Default)]
pub struct Storage {
    head: OnceCell<Box<Slot>>,
}

/// One kept value and the rest of the list.
struct Slot {
    value: Box<dyn Any>,
    next: OnceCell<Box<Slot>>,
}

impl Storage {
    /// An empty storage.
    #[must_use]
    pub fn new() -> Storage {
        Storage::default()
    }

    /// Keeps `value` until the storage is dropped and returns it, borrowed from the storage.
    pub fn keep<T: Any>(&self, value: Box<T>) -> &T {
        let mut cell = &self.head;
        while let Some(slot) = cell.get() {
            cell = &slot.next;
        }
        let slot = cell.get_or_init(|| {
            Box::new(Slot {
                value,
                next: OnceCell::new(),
            })
        });
        slot.value
            .downcast_ref::<T>()
            .expect("the last slot holds the value just kept")
    }

    /// How many values are kept.
    #[must_use]
    pub fn len(&self) -> usize {
        let mut n = 0;
        let mut cell = &self.head;
        while let Some(slot) = cell.get() {
            n += 1;
            cell = &slot.next;
        }
        n
    }

    /// Whether nothing is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.head.get().is_none()
    }
}

impl fmt::Debug for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Storage")
            .field("kept", &self.len())
            .finish()
    }
}

impl Drop for Storage {
    /// Drops the kept values in the order they were kept, one at a time (not by recursion
    /// down the list).
    fn drop(&mut self) {
        let mut next = self.head.take();
        while let Some(mut slot) = next {
            next = slot.next.take();
            drop(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Storage;
    use alloc::boxed::Box;
    use alloc::rc::Rc;
    use alloc::vec::Vec;
    use core::cell::RefCell;

    #[test]
    fn kept_values_stay_at_their_address_until_the_storage_is_dropped_in_order() {
        struct Noisy(u32, Rc<RefCell<Vec<u32>>>);
        impl Drop for Noisy {
            fn drop(&mut self) {
                self.1.borrow_mut().push(self.0);
            }
        }
        let dropped = Rc::new(RefCell::new(Vec::new()));
        let storage = Storage::new();
        assert!(storage.is_empty());
        let a = storage.keep(Box::new(Noisy(1, dropped.clone())));
        let a_addr = core::ptr::from_ref(a) as usize;
        let mut others = Vec::new();
        for i in 2..=100 {
            others.push(storage.keep(Box::new(Noisy(i, dropped.clone()))));
        }
        let s = storage.keep(Box::new(7_u64));
        assert_eq!((a.0, others[98].0, *s), (1, 100, 7));
        assert_eq!(core::ptr::from_ref(a) as usize, a_addr);
        assert_eq!(storage.len(), 101);
        assert!(dropped.borrow().is_empty(), "nothing dropped while kept");
        drop(storage);
        assert_eq!(*dropped.borrow(), (1..=100).collect::<Vec<_>>());
    }
}
