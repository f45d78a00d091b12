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
use serde::{Deserialize, Serialize};

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

/// One measured run's sites: its scenario, configuration, variant, operations and what
/// the plugin kept.
pub type MeasuredSites<'a> = (&'a str, &'a str, &'a str, u64, &'a [coherence::RmwSite]);

/// The runs' sites added up per variant (variants in the order they first ran), divided
/// by the variant's operations; unnamed ([`VariantRmwSites::name`] names them). A variant
/// without operations has no sites.
#[must_use]
pub fn per_variant<'a>(runs: impl IntoIterator<Item = MeasuredSites<'a>>) -> Vec<VariantRmwSites> {
    let mut acc: Vec<(VariantRmwSites, Vec<(u64, u64)>)> = Vec::new();
    for (scenario, config, variant, ops, sites) in runs {
        let i = match acc.iter().position(|(v, _)| {
            (v.scenario.as_str(), v.config.as_str(), v.variant.as_str())
                == (scenario, config, variant)
        }) {
            Some(i) => i,
            None => {
                acc.push((
                    VariantRmwSites {
                        scenario: scenario.to_owned(),
                        config: config.to_owned(),
                        variant: variant.to_owned(),
                        ops: 0,
                        sites: Vec::new(),
                    },
                    Vec::new(),
                ));
                acc.len() - 1
            }
        };
        let (v, counts) = &mut acc[i];
        v.ops += ops;
        for s in sites {
            match counts.iter_mut().find(|(pc, _)| *pc == s.pc) {
                Some((_, n)) => *n += s.count,
                None => counts.push((s.pc, s.count)),
            }
        }
    }
    acc.into_iter()
        .filter(|(v, _)| v.ops > 0)
        .map(|(mut v, mut counts)| {
            counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            v.sites = counts
                .into_iter()
                .map(|(pc, n)| RmwSite {
                    pc,
                    function: None,
                    offset: 0,
                    per_op: n as f64 / v.ops as f64,
                })
                .collect();
            v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(pc: u64, count: u64) -> coherence::RmwSite {
        coherence::RmwSite { pc, count }
    }

    #[test]
    fn runs_add_up_per_variant_and_divide_by_its_operations() {
        let a1 = [site(0x10, 300), site(0x20, 100)];
        let b = [site(0x10, 50)];
        let a2 = [site(0x20, 700), site(0x30, 1)];
        let v = per_variant([
            ("s", "c", "A", 100, &a1[..]),
            ("s", "c", "B", 50, &b[..]),
            ("s", "c", "A", 100, &a2[..]),
            ("s", "c", "idle", 0, &[][..]),
        ]);
        assert_eq!(v.len(), 2, "a variant without operations has no sites");
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
        let raw = [site(0xffff_ffff_8100_0104, 2), site(0x1000, 1)];
        let mut v = per_variant([("linux", "linux", "4k", 1, &raw[..])]);
        v[0].name(&symbols);
        assert_eq!(v[0].sites[0].function.as_deref(), Some("lock_it"));
        assert_eq!(v[0].sites[0].offset, 4);
        assert_eq!(v[0].sites[1].function, None, "below every symbol");
    }
}
