//! Writes to the classic list heads (`lru::events::list_head_writes`): one per add, one per
//! delete of a list's first or last folio, two for its only one, none for a folio in the
//! middle; none at all on MGLRU's generation lists. One test in its own process, so no other
//! test's thread adds to the per-CPU counts it reads.

use crate::common;
use rusty_fork::rusty_fork_test;

use common::{folios, lruvec};
use ksync::Ticket;
use lru::events::list_head_writes;
use lru::{LruGenFolioGrouped, LruMode};

type G = LruGenFolioGrouped;

rusty_fork_test! {
    #[test]
    fn classic_adds_and_end_deletes_write_the_head_mglru_never() {
        let lv = lruvec::<Ticket, G>(1, LruMode::Classic);
        let f = folios(4, 1, false);
        let w0 = list_head_writes();
        for &x in &f {
            lv.lock().add_folio(x).unwrap();
        }
        assert_eq!(list_head_writes() - w0, 4, "every list_add writes the head");
        // The list is f[3] f[2] f[1] f[0] (head = most recent). Delete a middle folio: no head
        // write.
        let w1 = list_head_writes();
        assert!(f[1].test_clear_lru());
        lv.lock().del_folio(f[1]).unwrap();
        assert_eq!(
            list_head_writes() - w1,
            0,
            "a middle folio's neighbours only"
        );
        // The first, then the last: one each.
        for x in [f[3], f[0]] {
            let w = list_head_writes();
            assert!(x.test_clear_lru());
            lv.lock().del_folio(x).unwrap();
            assert_eq!(list_head_writes() - w, 1);
        }
        // The only folio left: head->next and head->prev.
        let w2 = list_head_writes();
        assert!(f[2].test_clear_lru());
        lv.lock().del_folio(f[2]).unwrap();
        assert_eq!(list_head_writes() - w2, 2);

        // MGLRU keeps its folios on lru_gen_folio's lists: lists[] is never written.
        let mg = lruvec::<Ticket, G>(1, LruMode::Mglru);
        let g = folios(4, 1, false);
        let w3 = list_head_writes();
        for &x in &g {
            mg.lock().add_folio(x).unwrap();
        }
        for &x in &g {
            assert!(x.test_clear_lru());
            mg.lock().del_folio(x).unwrap();
        }
        assert_eq!(list_head_writes() - w3, 0);
    }
}
