//! The layout report of this crate's key structs: folio, both `lru_gen_folio` layouts, the
//! lruvec over each, `lru_gen_memcg` and `pglist_data`, printed with the descriptors of
//! [`crate::layout`].
//!
//! It sits above the structs it prints (each describes itself next to its asserts), so the
//! modules read bottom up: descriptors, structs, report.

use crate::layout::StructLayout;
use core::fmt::{self, Write};

/// Print every key struct of this crate, with family `F`'s locks.
pub fn report_with<F: ksync::LockFamily>(w: &mut dyn Write) -> fmt::Result {
    use crate::lru_gen::LruGenFolio;
    use crate::lru_gen_folio::{LruGenFolioBase, LruGenFolioGrouped};
    let folio = crate::folio::folio_layout();
    folio.print(w)?;
    for lrugen in [
        StructLayout {
            name: "lru_gen_folio (base)",
            size: core::mem::size_of::<LruGenFolioBase>(),
            align: core::mem::align_of::<LruGenFolioBase>(),
            fields: LruGenFolioBase::layout_fields(),
        },
        StructLayout {
            name: "lru_gen_folio (grouped)",
            size: core::mem::size_of::<LruGenFolioGrouped>(),
            align: core::mem::align_of::<LruGenFolioGrouped>(),
            fields: LruGenFolioGrouped::layout_fields(),
        },
    ] {
        lrugen.print(w)?;
    }
    type Base<F> = crate::LruvecStandalone<F, LruGenFolioBase>;
    type Grouped<F> = crate::LruvecStandalone<F, LruGenFolioGrouped>;
    let f = crate::lruvec::lruvec_fields_expanded::<Base<F>>();
    crate::lruvec::lruvec_layout::<Base<F>>("lruvec (base lrugen)", &f).print(w)?;
    let f = crate::lruvec::lruvec_fields_expanded::<Grouped<F>>();
    crate::lruvec::lruvec_layout::<Grouped<F>>("lruvec (grouped lrugen)", &f).print(w)?;
    let f = crate::memcg_lru::lru_gen_memcg_fields::<F>();
    crate::memcg_lru::lru_gen_memcg_layout::<F>(&f).print(w)?;
    let f = crate::pgdat::pgdat_fields::<Grouped<F>>();
    crate::pgdat::pgdat_layout::<Grouped<F>>(&f).print(w)
}

/// Print every key struct with the kernel's locks ([`ksync::Ticket`]).
#[cfg(not(loom))]
pub fn report(w: &mut dyn Write) -> fmt::Result {
    report_with::<ksync::Ticket>(w)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use alloc::string::String;

    #[test]
    fn report_names_every_struct_and_flags_base_sharing() {
        let mut s = String::new();
        report(&mut s).unwrap();
        for name in [
            "struct folio",
            "struct lru_gen_folio (base)",
            "struct lru_gen_folio (grouped)",
            "struct lruvec (base lrugen)",
            "struct lruvec (grouped lrugen)",
            "struct lru_gen_memcg",
        ] {
            assert!(s.contains(name), "missing {name} in\n{s}");
        }
        let base = s.split("struct lru_gen_folio (grouped)").next().unwrap();
        let grouped = s
            .split("struct lru_gen_folio (grouped)")
            .nth(1)
            .unwrap()
            .split("struct lruvec")
            .next()
            .unwrap();
        assert!(base.contains("shares a line with lockless counters"));
        assert!(!grouped.contains("shares a line with lockless counters"));
        assert!(s.contains("max_seq"));
    }
}
