//! `WARN_ON_ONCE`: an error the code cannot handle and must not drop silently.
//!
//! Some failures cannot happen if the code is right (uncharging pages that were charged, a
//! frame freed twice, a folio put back on the list it was isolated from) and have no caller
//! to return to: Linux warns once per call site (`WARN_ON_ONCE`, which also taints the
//! kernel) and goes on. [`warn_on_once!`](crate::warn_on_once) does the same here: each call
//! site has a static [`WarnSite`] (file, line, what went wrong); every hit is counted
//! ([`count`]), and the first site that fired is kept ([`first`]) so a report can name it.
//! Nothing is printed here (this crate has no console): the invariant checker
//! (`mm::check`) fails while any warning has been counted, naming the first site, so a
//! test or a benchmark run that hit one fails instead of going on with wrong books.
//!
//! The count is global, as the taint is in Linux: once warned, every later check fails.
//!
//! Unsafe code here, and why: the warning registry stores `&'static WarnSite` as raw
//! pointers in atomics, and turns them back into references.
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

/// One `warn_on_once!` call site.
#[derive(Debug)]
pub struct WarnSite {
    file: &'static str,
    line: u32,
    what: &'static str,
    fired: AtomicBool,
}

/// Warnings counted since boot (every hit, not only the first per site).
static COUNT: AtomicU64 = AtomicU64::new(0);
/// The first site that fired (null until one did).
static FIRST: AtomicPtr<WarnSite> = AtomicPtr::new(core::ptr::null_mut());

impl WarnSite {
    /// The site at `file`:`line`, warning that `what`.
    #[must_use]
    pub const fn new(file: &'static str, line: u32, what: &'static str) -> Self {
        WarnSite {
            file,
            line,
            what,
            fired: AtomicBool::new(false),
        }
    }

    /// Counts a hit of this site; the first hit of the first site to fire is remembered.
    /// Out of line, so that a site costs its caller's hot code a test and a call only.
    #[cold]
    #[inline(never)]
    pub fn warn(&'static self) {
        COUNT.fetch_add(1, Ordering::Relaxed);
        if !self.fired.swap(true, Ordering::AcqRel) {
            let me = core::ptr::from_ref(self).cast_mut();
            let _already_one = FIRST.compare_exchange(
                core::ptr::null_mut(),
                me,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }

    /// The source file.
    #[must_use]
    pub fn file(&self) -> &'static str {
        self.file
    }

    /// The source line.
    #[must_use]
    pub fn line(&self) -> u32 {
        self.line
    }

    /// What went wrong.
    #[must_use]
    pub fn what(&self) -> &'static str {
        self.what
    }
}

impl core::fmt::Display for WarnSite {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.what)
    }
}

/// Warnings counted since boot.
#[must_use]
pub fn count() -> u64 {
    COUNT.load(Ordering::Relaxed)
}

/// The first site that warned, if any did.
#[must_use]
pub fn first() -> Option<&'static WarnSite> {
    let p = FIRST.load(Ordering::Acquire);
    // SAFETY: only `WarnSite::warn` stores here, and it stores the address of a
    // `&'static WarnSite`.
    unsafe { p.as_ref() }
}

/// `WARN_ON_ONCE(cond)`: if `cond` holds, counts a warning at this call site (see the module
/// documentation) and evaluates to `true`; otherwise `false`.
///
/// ```
/// let r: Result<(), ()> = Err(());
/// assert!(ksync::warn_on_once!(r.is_err(), "a made-up error"));
/// assert!(ksync::warn::count() >= 1);
/// assert!(ksync::warn::first().is_some());
/// ```
#[macro_export]
macro_rules! warn_on_once {
    ($cond:expr, $what:expr $(,)?) => {{
        let cond: bool = $cond;
        if cond {
            static SITE: $crate::warn::WarnSite =
                $crate::warn::WarnSite::new(file!(), line!(), $what);
            SITE.warn();
        }
        cond
    }};
}
