//! An error that cannot happen and has no caller to go to is not dropped: it is counted at
//! its call site (`ksync::warn_on_once!`, Linux's `WARN_ON_ONCE`) and the invariant checker
//! fails while any was counted, naming the first site.
//!
//! Its own process (`rusty_fork_test!`): the count is global to the process (as Linux's taint is to the
//! kernel), so a test that provokes a warning must not share a process with tests whose
//! checks must pass.

use crate::vm_common;
use rusty_fork::rusty_fork_test;

use lru::{Folio, Zone};
use mm::vma::VmAreaA;
use vm_common::*;

rusty_fork_test! {
    /// `__folio_put` of a folio whose frame is not the page allocator's: freeing it fails
    /// (`FreeError::Foreign`), which the release path used to drop.
    #[test]
    fn a_failed_free_is_counted_and_fails_the_checker() {
        let w = world(1, 512, |_| {});
        let mm = w.vm.new_mm::<VmAreaA>(VA, VA_LEN).unwrap();
        assert_eq!(ksync::warn::count(), 0, "nothing warned yet");
        w.vm.check(0, &[&*mm], &[]).expect("a healthy world passes");

        let foreign: &'static Folio =
            Box::leak(Box::new(Folio::new(1 << 40, 0, Zone::Normal).unwrap()));
        w.vm.release_folio(0, foreign);
        w.vm.release_folio(0, foreign);
        assert_eq!(ksync::warn::count(), 2, "every hit is counted");
        let first = ksync::warn::first().expect("the first site is kept");
        assert!(
            first.file().ends_with("reclaim.rs") && first.what().contains("freeing the frame"),
            "the site of the dropped FreeError: {first}"
        );

        let err =
            w.vm.check(0, &[&*mm], &[])
                .expect_err("the checker fails once anything warned")
                .to_string();
        assert!(
            err.contains("2 warning(s)") && err.contains("reclaim.rs"),
            "the checker names the count and the first site: {err}"
        );
    }
}
