//! Which instructions take each variant's locked read-modify-writes (`rmw-sites.csv`).
//!
//! The cost boot's plugin keeps, per window, every locked RMW's instruction address and
//! how many it made there ([`coherence::RmwSite`]); the same plugin counts the Linux
//! reference's counted boot. Added up over a variant's measured runs and divided by its
//! operations, they say where `costs.csv`'s `rmws_per_op` come from, site by site: the
//! kernel's named by its ELF's symbols, Linux's by its own `/proc/kallsyms`, which the
//! counted boot's `/init` copies to the console after its runs (KASLR is off, so those are
//! the addresses executed; Debian's `System.map` is a stub naming the `-dbg` package). A
//! reader then holds both kernels' lists side by side: `kx bench --quick --linux --cpus 1
//! --scenarios limit,seed001-faultfree` writes them.

use crate::coherence::symbols::Symbols;
use bench::Cost;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One instruction's locked RMWs per operation in one variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RmwSite {
    /// The instruction's guest virtual address.
    pub pc: u64,
    /// The function holding it; `None` where no symbol covers it, or no symbols were read.
    pub function: Option<String>,
    /// The instruction's offset into `function` (0 without one).
    pub offset: u64,
    /// Locked RMWs it made per operation.
    pub per_op: f64,
}

/// One variant's sites, most RMWs per operation first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantRmwSites {
    /// Scenario.
    pub scenario: String,
    /// Configuration.
    pub config: String,
    /// Variant.
    pub variant: String,
    /// The measured runs' operations the counts are divided by.
    pub ops: u64,
    /// Its sites.
    pub sites: Vec<RmwSite>,
}

impl VariantRmwSites {
    /// The sites' locked RMWs per operation added up (the variant's `rmws_per_op`).
    #[must_use]
    pub fn total_per_op(&self) -> f64 {
        self.sites.iter().map(|s| s.per_op).sum()
    }

    /// The locked RMWs per operation of the sites in function `f`.
    #[must_use]
    pub fn per_function(&self, f: &str) -> f64 {
        self.sites
            .iter()
            .filter(|s| s.function.as_deref() == Some(f))
            .map(|s| s.per_op)
            .sum()
    }

    /// Names every site by the function of `symbols` holding it.
    pub fn name(&mut self, symbols: &Symbols) {
        for s in &mut self.sites {
            if let Some((f, off)) = symbols.function_at(s.pc) {
                s.function = Some(f.to_owned());
                s.offset = off;
            }
        }
    }
}

/// One measured run's sites: its scenario, configuration and variant, and what the plugin
/// kept.
pub type MeasuredSites<'a> = (&'a str, &'a str, &'a str, &'a [coherence::RmwSite]);

/// Each counted variant's sites, unnamed ([`VariantRmwSites::name`] names them): the sites
/// of the variant's measured `runs` added up and divided by the operations its cost
/// counted ([`bench::cost::per_variant`] groups the runs and adds their operations), in
/// `costs`' order.
#[must_use]
pub fn per_variant(costs: &[Cost], runs: &[MeasuredSites<'_>]) -> Vec<VariantRmwSites> {
    costs
        .iter()
        .map(|c| {
            let key = (c.scenario.as_str(), c.config.as_str(), c.variant.as_str());
            let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
            for (.., sites) in runs.iter().filter(|r| (r.0, r.1, r.2) == key) {
                for site in *sites {
                    *counts.entry(site.pc).or_default() += site.count;
                }
            }
            let mut sites: Vec<RmwSite> = counts
                .into_iter()
                .map(|(pc, n)| RmwSite {
                    pc,
                    function: None,
                    offset: 0,
                    per_op: n as f64 / c.ops as f64,
                })
                .collect();
            sites.sort_by(|a, b| b.per_op.total_cmp(&a.per_op).then(a.pc.cmp(&b.pc)));
            VariantRmwSites {
                scenario: c.scenario.clone(),
                config: c.config.clone(),
                variant: c.variant.clone(),
                ops: c.ops,
                sites,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench::cost::Counted;

    fn site(pc: u64, count: u64) -> coherence::RmwSite {
        coherence::RmwSite { pc, count }
    }

    /// The costs of `runs` (scenario `s`, config `c`): each a variant and its operations.
    fn costs(runs: &[(&'static str, u64)]) -> Vec<Cost> {
        bench::cost::per_variant(runs.iter().map(|&(v, ops)| {
            (
                "s",
                "c",
                v,
                Counted {
                    ops,
                    ..Counted::default()
                },
            )
        }))
    }

    #[test]
    fn runs_add_up_per_variant_and_divide_by_its_operations() {
        let a1 = [site(0x10, 300), site(0x20, 100)];
        let b = [site(0x10, 50)];
        let a2 = [site(0x20, 700), site(0x30, 1)];
        let costs = costs(&[("A", 100), ("B", 50), ("A", 100), ("idle", 0)]);
        let v = per_variant(
            &costs,
            &[
                ("s", "c", "A", &a1[..]),
                ("s", "c", "B", &b[..]),
                ("s", "c", "A", &a2[..]),
                ("s", "c", "idle", &[][..]),
            ],
        );
        assert_eq!(
            v.len(),
            2,
            "a variant without operations has no cost, so no sites"
        );
        assert_eq!((v[0].variant.as_str(), v[0].ops), ("A", 200));
        let per: Vec<(u64, f64)> = v[0].sites.iter().map(|s| (s.pc, s.per_op)).collect();
        assert_eq!(per, vec![(0x20, 4.0), (0x10, 1.5), (0x30, 0.005)]);
        assert!((v[0].total_per_op() - 5.505).abs() < 1e-12);
        assert_eq!(v[1].sites[0].per_op, 1.0);
    }

    #[test]
    fn sites_are_named_by_the_function_holding_them() {
        let map = "ffffffff81000000 T _stext\nffffffff81000100 t lock_it\n\
                   ffffffff81000180 T unlock_it\n";
        let symbols = Symbols::parse_nm(map).unwrap();
        let raw = [
            site(0xffff_ffff_8100_0104, 2),
            site(0xffff_ffff_8100_0110, 1),
            site(0x1000, 1),
        ];
        let mut v = per_variant(&costs(&[("A", 1)]), &[("s", "c", "A", &raw[..])]);
        v[0].name(&symbols);
        assert_eq!(v[0].sites[0].function.as_deref(), Some("lock_it"));
        assert_eq!(v[0].sites[0].offset, 4);
        assert_eq!(v[0].per_function("lock_it"), 3.0);
        let below = v[0].sites.iter().find(|s| s.pc == 0x1000).unwrap();
        assert_eq!(below.function, None, "below every symbol");
    }
}
