//! The Linux system calls host-thread mode (and the pinning of QEMU's threads) needs, with
//! safe wrappers: CPU affinity (`sched_getaffinity` / `sched_setaffinity`, of this thread or
//! of any thread by id), `CLOCK_MONOTONIC`, per-thread minor-fault
//! counts (`getrusage(RUSAGE_THREAD)`), the parent-death signal, and the anonymous mappings
//! the Linux reference faults in (`mmap` / `madvise(MADV_NOHUGEPAGE)` / `munmap`).
//!
//! Unsafe code here, and why: the system calls above, through `libc`. This is the
//! host-thread mode's one place with `unsafe` (the runner's others are
//! [`crate::process`] and [`crate::accel`]'s `/dev/kvm` check).
#![allow(unsafe_code)]

use std::io;
use std::sync::atomic::{AtomicU8, Ordering};

/// The CPUs this thread may run on, ascending.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    thread_affinity(0)
}

/// Pins the calling thread to `cpu`.
pub fn pin_this_thread(cpu: usize) -> io::Result<()> {
    if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "cpu id too large",
        ));
    }
    // SAFETY: a zeroed set with one bit set below its capacity, passed by pointer with its
    // size; pid 0 is the calling thread.
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Pins thread `tid` (of any process the runner may change: its own, QEMU's) to `cpus`.
pub fn set_thread_affinity(tid: i32, cpus: &[usize]) -> io::Result<()> {
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    if cpus.is_empty() || cpus.iter().any(|&c| c >= max) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "empty CPU set or cpu id too large",
        ));
    }
    // SAFETY: a zeroed set with bits set below its capacity (checked above), passed by
    // pointer with its size; `tid` is a plain number (a thread that is gone gives ESRCH).
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPUs thread `tid` may run on, ascending (`tid` 0: the calling thread).
pub fn thread_affinity(tid: i32) -> io::Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most
    // `size_of::<cpu_set_t>()` bytes into it.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        set
    };
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    Ok((0..max)
        // SAFETY: CPU_ISSET only reads the set, for indices below its capacity.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// `CLOCK_MONOTONIC` in ns: one clock for every thread and process of the machine.
#[must_use]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer; CLOCK_MONOTONIC
    // always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Minor page faults the calling thread has taken.
#[must_use]
pub fn thread_minor_faults() -> u64 {
    // SAFETY: getrusage writes one rusage through a valid pointer to zeroed memory.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru.ru_minflt as u64
    }
}

/// Makes the kernel kill this process when its parent dies (a worker must not outlive the
/// runner); `false` when the parent is already gone.
#[must_use]
pub fn die_with_parent() -> bool {
    // SAFETY: prctl with PR_SET_PDEATHSIG and a signal number; getppid has no arguments.
    unsafe {
        let parent = libc::getppid();
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        parent != 1 && libc::getppid() == parent
    }
}

/// Bytes of a base page.
pub const PAGE: usize = 4096;

/// A private anonymous read-write mapping, unmapped on drop. Its memory is only ever
/// written through [`AnonMap::touch`], an atomic byte store (a plain `mov` on x86, as the
/// C benchmarks' stores are), so any threads may touch any pages of one mapping at once
/// (mmtests' pft shares one region), even the same byte, without a data race.
pub struct AnonMap {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is memory owned by this value (unmapped only by its drop); the pointer
// is not tied to the thread that made it.
unsafe impl Send for AnonMap {}
// SAFETY: `&AnonMap` allows only `touch` and `pages`: `touch` writes through `AtomicU8`
// (atomic stores from several threads to one byte are defined), `pages` reads a field that
// never changes. No other reference into the mapping is ever made.
unsafe impl Sync for AnonMap {}

impl AnonMap {
    /// Maps `pages` base pages, asking for no transparent huge pages (every fault is one
    /// 4 KiB page, as will-it-scale's page_fault1 measures on a THP-never kernel).
    pub fn new(pages: usize) -> io::Result<AnonMap> {
        let len = pages
            .checked_mul(PAGE)
            .filter(|&l| l > 0)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "bad mapping size"))?;
        // SAFETY: an anonymous private mapping at an address of the kernel's choice; the
        // result is checked before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the range was just mapped by us. A kernel without THP rejects the advice;
        // then there is nothing to avoid.
        unsafe { libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE) };
        Ok(AnonMap {
            ptr: ptr.cast(),
            len,
        })
    }

    /// Pages in the mapping.
    #[must_use]
    pub fn pages(&self) -> usize {
        self.len / PAGE
    }

    /// Writes a byte to page `page` (faulting it in the first time). Out of range: nothing.
    pub fn touch(&self, page: usize, value: u8) {
        if page < self.pages() {
            // SAFETY: in bounds of our live mapping, which is readable and writable for as
            // long as `self` lives; `AtomicU8` has the size and alignment of `u8`, and the
            // byte is only ever accessed atomically (see the type's doc).
            let byte = unsafe { AtomicU8::from_ptr(self.ptr.add(page * PAGE)) };
            byte.store(value, Ordering::Relaxed);
        }
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once; nothing refers into it.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_and_clock() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        std::thread::spawn(move || {
            pin_this_thread(cpus[0]).unwrap();
            assert_eq!(allowed_cpus().unwrap(), [cpus[0]]);
        })
        .join()
        .unwrap();
        let a = monotonic_ns();
        assert!(monotonic_ns() >= a);
        assert!(pin_this_thread(1 << 20).is_err());
        // Another thread, by id: pinned and read back.
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            // SAFETY: gettid has no arguments.
            tx.send(unsafe { libc::gettid() }).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        let all = allowed_cpus().unwrap();
        set_thread_affinity(tid, &all[..1]).unwrap();
        assert_eq!(thread_affinity(tid).unwrap(), &all[..1]);
        assert!(set_thread_affinity(tid, &[]).is_err());
        done_tx.send(()).unwrap();
        h.join().unwrap();
    }

    #[test]
    fn touching_a_mapping_faults_its_pages() {
        let m = AnonMap::new(64).unwrap();
        assert_eq!(m.pages(), 64);
        let before = thread_minor_faults();
        for p in 0..64 {
            m.touch(p, 1);
        }
        m.touch(64, 1);
        // Each first touch of a base page is a minor fault (a kernel may map ahead a few).
        assert!(thread_minor_faults() > before);
        assert!(AnonMap::new(0).is_err());
    }

    /// Threads that share a mapping may store to the same page at once (atomic stores):
    /// every page reads back one of the values stored to it.
    #[test]
    fn threads_may_touch_the_same_pages() {
        let m = AnonMap::new(8).unwrap();
        std::thread::scope(|s| {
            for t in 1..=4u8 {
                let m = &m;
                s.spawn(move || {
                    for _ in 0..1000 {
                        for p in 0..m.pages() {
                            m.touch(p, t);
                        }
                    }
                });
            }
        });
        for p in 0..m.pages() {
            // SAFETY: in bounds of the live mapping; no store runs any more.
            let v = unsafe { AtomicU8::from_ptr(m.ptr.add(p * PAGE)) }.load(Ordering::Relaxed);
            assert!((1..=4).contains(&v), "page {p} reads {v}");
        }
    }
}
