//! The two-level interval of a ratio B/A: rounds within instances, instances within
//! variants, so the placement of each instance is a random effect in the error model.
//!
//! # Why
//!
//! An instance of a variant is one set of allocations: its structures sit at some physical
//! addresses, on some cache sets and pages, and that placement moves its rate by a few
//! percent for as long as the instance lives (an A/A control of the same code at two
//! placements moved +5% in one run). Rounds of one instance share its placement, so the
//! per-round interval ([`crate::stats::paired_ratio_ci`]) measures only round-to-round
//! noise: it says nothing about the next placement, and an A/A comparison "finds" the
//! offset between two placements as often as it likes. The engine therefore builds every
//! variant several times per point (`instances=`, each block afresh at new addresses,
//! [`crate::engine::run()`]), and the interval here treats the instance as the unit.
//!
//! # The model
//!
//! For variant `v` and instance block `j`, `y_vj` is the mean over that instance's measured
//! rounds of `ln(rate)`. The model is `y_vj = mu_v + b_j + e_vj`: a variant effect, a block
//! effect (every variant of block `j` ran in the same rounds, so drift between blocks
//! cancels in every difference) and an error `e_vj` that holds the instance's placement
//! offset (variance `sigma_p^2`) and its rounds' mean noise (`sigma_r^2 / R`). The estimate
//! of `ln(B/A)` is `d = mean_j(y_Bj) - mean_j(y_Aj)`, the mean of the per-block log ratios.
//! Its variance `2 (sigma_p^2 + sigma_r^2 / R) / J` is estimated by the residual mean
//! square of the additive two-way fit over all `V` variants of the point, with
//! `(V - 1)(J - 1)` degrees of freedom: the variants share one placement variance (their
//! instances are built by the same allocator from the same kind of structures), and
//! pooling them is what makes two instances per variant usable (`V = 3`, `J = 2`: 2 df;
//! `V = 5`: 4 df). For balanced data this is the exact t interval of the randomised-block
//! ANOVA (Montgomery, *Design and Analysis of Experiments*, ch. 4); the interval is
//! `exp(d -+ t_{0.975, df} se)` and the p-value Student's on `d / se`. Only blocks in which
//! every pooled variant has a measured round are used.

use crate::stats::{self, StatsError};
use alloc::vec::Vec;

/// The name of the two-level interval method, as recorded in `comparison` records.
pub const METHOD: &str = "two-level-instance-log-ratio-95";

/// The two-level ratio B/A of one point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InstanceCi {
    /// `exp(d)`: the geometric mean of the per-block ratios of the instances' geometric
    /// mean rates.
    pub ratio: f64,
    /// Instance blocks used (every pooled variant measured in each).
    pub instances: usize,
    /// Variants pooled for the variance.
    pub variants: usize,
    /// Degrees of freedom, `(V - 1)(J - 1)`.
    pub df: f64,
    /// The standard error of `ln(ratio)`.
    pub se: f64,
    /// The 95% interval; `None` with fewer than two blocks.
    pub ci: Option<(f64, f64)>,
    /// The two-sided p of `d / se` (`None` without an interval).
    pub p: Option<f64>,
}

impl InstanceCi {
    /// Whether the interval excludes 1.0.
    #[must_use]
    pub fn significant(&self) -> bool {
        stats::excludes_one(self.ci)
    }
}

/// One variant's instance means: `cells[j]` is the mean of `ln(rate)` over the measured
/// rounds of its instance in block `j`, `None` where it has none.
pub type Cells = Vec<Option<f64>>;

/// The mean of `ln(rate)` of each instance block `0..blocks` over `(instance, rate)` runs.
pub fn cells(runs: &[(u32, f64)], blocks: usize) -> Result<Cells, StatsError> {
    let mut sum = alloc::vec![(0.0f64, 0u32); blocks];
    for &(j, rate) in runs {
        if !rate.is_finite() || rate <= 0.0 {
            return Err(StatsError::BadRate);
        }
        if let Some(s) = sum.get_mut(j as usize) {
            s.0 += libm::log(rate);
            s.1 += 1;
        }
    }
    Ok(sum
        .into_iter()
        .map(|(s, n)| (n > 0).then(|| s / f64::from(n)))
        .collect())
}

/// The two-level ratio `table[b] / table[a]` with the variance pooled over every row of
/// `table` (one row per variant, see the module doc).
pub fn instance_ratio_ci(table: &[Cells], a: usize, b: usize) -> Result<InstanceCi, StatsError> {
    let blocks = table.iter().map(Vec::len).max().unwrap_or(0);
    let complete: Vec<usize> = (0..blocks)
        .filter(|&j| {
            table
                .iter()
                .all(|row| row.get(j).copied().flatten().is_some())
        })
        .collect();
    if complete.is_empty() || a >= table.len() || b >= table.len() {
        return Err(StatsError::Empty);
    }
    let y = |v: usize, j: usize| table[v][j].expect("complete block");
    let (nv, nj) = (table.len(), complete.len());
    let row_mean: Vec<f64> = (0..nv)
        .map(|v| complete.iter().map(|&j| y(v, j)).sum::<f64>() / nj as f64)
        .collect();
    let d = row_mean[b] - row_mean[a];
    let ratio = libm::exp(d);
    let df = ((nv - 1) * (nj - 1)) as f64;
    let mut out = InstanceCi {
        ratio,
        instances: nj,
        variants: nv,
        df,
        se: 0.0,
        ci: None,
        p: None,
    };
    if df < 1.0 {
        return Ok(out);
    }
    let col_mean: Vec<f64> = complete
        .iter()
        .map(|&j| (0..nv).map(|v| y(v, j)).sum::<f64>() / nv as f64)
        .collect();
    let grand = row_mean.iter().sum::<f64>() / nv as f64;
    let mut ss = 0.0;
    for (v, rm) in row_mean.iter().enumerate() {
        for (k, &j) in complete.iter().enumerate() {
            let r = y(v, j) - rm - col_mean[k] + grand;
            ss += r * r;
        }
    }
    let se = libm::sqrt(2.0 * (ss / df) / nj as f64);
    out.se = se;
    if se <= 0.0 || !se.is_finite() {
        out.ci = Some((ratio, ratio));
        out.p = Some(if d == 0.0 { 1.0 } else { 0.0 });
        return Ok(out);
    }
    let half = stats::student_t_quantile(0.5 + stats::CONFIDENCE / 2.0, df) * se;
    out.ci = Some((libm::exp(d - half), libm::exp(d + half)));
    out.p = Some(stats::student_t_two_sided_p(d / se, df));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(v: &[f64]) -> Cells {
        v.iter().map(|&x| Some(libm::log(x))).collect()
    }

    /// Hand-computed: A = (100, 110), B = (120, 121), A' = (105, 100) per block.
    #[test]
    fn the_interval_is_the_randomised_block_anova_one() {
        let t = [
            row(&[100.0, 110.0]),
            row(&[120.0, 121.0]),
            row(&[105.0, 100.0]),
        ];
        let c = instance_ratio_ci(&t, 0, 1).unwrap();
        let ln = libm::log;
        let d = (ln(120.0) + ln(121.0) - ln(100.0) - ln(110.0)) / 2.0;
        assert!((libm::log(c.ratio) - d).abs() < 1e-12);
        // Residuals of the additive fit, by hand.
        let y = [
            [ln(100.0), ln(110.0)],
            [ln(120.0), ln(121.0)],
            [ln(105.0), ln(100.0)],
        ];
        let rm: Vec<f64> = y.iter().map(|r| (r[0] + r[1]) / 2.0).collect();
        let cm: Vec<f64> = (0..2)
            .map(|j| (y[0][j] + y[1][j] + y[2][j]) / 3.0)
            .collect();
        let g = rm.iter().sum::<f64>() / 3.0;
        let ss: f64 = (0..3)
            .flat_map(|v| (0..2).map(move |j| (v, j)))
            .map(|(v, j)| (y[v][j] - rm[v] - cm[j] + g).powi(2))
            .sum();
        let se = (2.0 * ss / 2.0 / 2.0).sqrt();
        assert_eq!((c.instances, c.variants, c.df), (2, 3, 2.0));
        assert!((c.se - se).abs() < 1e-12, "{} {se}", c.se);
        // t_{0.975, 2} = 4.302653.
        let (lo, hi) = c.ci.unwrap();
        assert!((libm::log(hi) - d - 4.302_653 * se).abs() < 1e-5);
        assert!((d - libm::log(lo) - 4.302_653 * se).abs() < 1e-5);
    }

    /// A block effect (every variant 10% faster in block 1) is not noise.
    #[test]
    fn drift_between_blocks_cancels() {
        let t = [
            row(&[100.0, 110.0, 121.0]),
            row(&[102.0, 112.2, 123.42]),
            row(&[100.0, 110.0, 121.0]),
        ];
        let c = instance_ratio_ci(&t, 0, 1).unwrap();
        assert!((c.ratio - 1.02).abs() < 1e-9);
        assert!(c.se < 1e-9 && c.significant(), "{c:?}");
    }

    /// A placement offset between two instances of the same code widens the interval: the
    /// rounds alone would call the same offset significant.
    #[test]
    fn a_placement_offset_is_in_the_interval() {
        let t = [
            row(&[100.0, 100.0, 100.0, 100.0]),
            row(&[105.0, 96.0, 103.0, 97.0]),
            row(&[97.0, 104.0, 99.0, 101.0]),
        ];
        let c = instance_ratio_ci(&t, 0, 1).unwrap();
        assert!(!c.significant(), "{c:?}");
        let (lo, hi) = c.ci.unwrap();
        assert!(lo < 0.97 && hi > 1.03, "{c:?}");
    }

    #[test]
    fn incomplete_blocks_are_left_out_and_one_block_has_no_interval() {
        let mut t = [row(&[100.0, 110.0, 90.0]), row(&[120.0, 121.0, 130.0])];
        t[1][2] = None;
        let c = instance_ratio_ci(&t, 0, 1).unwrap();
        assert_eq!(c.instances, 2);
        t[1][1] = None;
        let c = instance_ratio_ci(&t, 0, 1).unwrap();
        assert_eq!((c.instances, c.ci, c.p), (1, None, None));
        t[1][0] = None;
        assert_eq!(instance_ratio_ci(&t, 0, 1), Err(StatsError::Empty));
    }

    #[test]
    fn an_interval_that_touches_1_is_not_significant_and_rows_must_exist() {
        let ci = |lo, hi| InstanceCi {
            ratio: 1.0,
            instances: 2,
            variants: 2,
            df: 1.0,
            se: 0.1,
            ci: Some((lo, hi)),
            p: None,
        };
        assert!(!ci(1.0, 1.2).significant() && !ci(0.8, 1.0).significant());
        assert!(ci(1.001, 1.2).significant() && ci(0.8, 0.999).significant());
        let t = [row(&[100.0, 110.0]), row(&[120.0, 121.0])];
        assert_eq!(instance_ratio_ci(&t, 0, 2), Err(StatsError::Empty));
        assert_eq!(instance_ratio_ci(&t, 2, 1), Err(StatsError::Empty));
        // Two variants in two blocks: one degree of freedom, an interval.
        let c = instance_ratio_ci(&t, 0, 1).unwrap();
        assert_eq!(c.df, 1.0);
        assert!(c.ci.is_some() && c.p.is_some(), "{c:?}");
        // No noise and no effect: a zero-width interval at 1 and p = 1, not NaN.
        let flat = [
            row(&[100.0, 110.0]),
            row(&[100.0, 110.0]),
            row(&[100.0, 110.0]),
        ];
        let c = instance_ratio_ci(&flat, 0, 1).unwrap();
        assert_eq!((c.ratio, c.ci, c.p), (1.0, Some((1.0, 1.0)), Some(1.0)));
    }

    #[test]
    fn cells_average_the_log_rates_of_each_instance() {
        let c = cells(&[(0, 100.0), (1, 50.0), (0, 400.0)], 3).unwrap();
        assert!((c[0].unwrap() - libm::log(200.0)).abs() < 1e-12);
        assert!((c[1].unwrap() - libm::log(50.0)).abs() < 1e-12);
        assert_eq!(c[2], None);
        assert_eq!(cells(&[(0, 0.0)], 1), Err(StatsError::BadRate));
    }
}
