//! The statistics of a benchmark run, as mmtests reports them: per variant the harmonic mean
//! of the per-round rates (ops/s), min, max and coefficient of variation; per comparison the
//! ratio B/A of the harmonic means with a 95% confidence interval and a significance mark
//! (mmtests' `*`).
//!
//! # Why the harmonic mean, and which interval
//!
//! A round's rate is `ops / time`. The harmonic mean of rates is `1 / mean(time per op)`, the
//! rate the rounds achieved together per op, which is why mmtests reports rates (faults/s,
//! IOPS) as `Hmean`. So the natural samples are the per-round *times per op* `t = 1/rate`,
//! and the ratio of harmonic means B/A is `mean(t_A) / mean(t_B)`: a ratio of two means.
//!
//! The interval is Welch's t on the log of that ratio, with the delta method for the
//! standard error: `Var(ln mean(t)) ~= s^2 / (n mean(t)^2)` per side, the two added, the
//! degrees of freedom by Welch-Satterthwaite, and the interval `ratio * exp(-+ t_{0.975,df} *
//! se)`. It is deterministic (the same records give the same interval in the kernel, in the
//! runner and in `kx import`, with no random seed to carry), it is exact enough for the
//! 3-10 rounds a benchmark runs (a bootstrap of 3 rounds has only 10 distinct resamples and
//! its percentile interval is far too narrow), it is asymmetric like a ratio's should be and
//! never negative, and it always contains the point ratio. With fewer than two rounds on a
//! side there is no variance estimate and so no interval ([`RatioCi::ci`] is `None`,
//! never significant); with zero variance on both sides the interval is the point itself.
//!
//! Student's t quantile comes from the regularized incomplete beta function (continued
//! fraction, Lentz's method) inverted by bisection, using `libm` so the same code runs in the
//! kernel.

/// The name of the interval method, as recorded in `comparison` records.
pub const METHOD: &str = "welch-t-log-hmean-ratio-95";

/// The confidence level of [`ratio_ci`].
pub const CONFIDENCE: f64 = 0.95;

/// Why a set of samples cannot be summarised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatsError {
    /// No samples at all.
    Empty,
    /// A rate that is zero, negative, NaN or infinite (a round that did no work, or a clock
    /// that did not move).
    BadRate,
}

impl core::fmt::Display for StatsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            StatsError::Empty => "no samples",
            StatsError::BadRate => "a rate that is not a positive finite number",
        })
    }
}

fn check(rates: &[f64]) -> Result<(), StatsError> {
    if rates.is_empty() {
        return Err(StatsError::Empty);
    }
    if rates.iter().any(|r| !r.is_finite() || *r <= 0.0) {
        return Err(StatsError::BadRate);
    }
    Ok(())
}

/// The harmonic mean of positive finite rates.
pub fn hmean(rates: &[f64]) -> Result<f64, StatsError> {
    check(rates)?;
    let inv: f64 = rates.iter().map(|r| 1.0 / r).sum();
    Ok(rates.len() as f64 / inv)
}

/// The arithmetic mean and the sample variance (`n - 1`; zero for one sample).
fn mean_var(xs: &[f64]) -> (f64, f64) {
    // Equal samples have exactly zero variance (summing them may not give n * x exactly).
    if xs.iter().all(|x| *x == xs[0]) {
        return (xs[0], 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    (mean, ss / (n - 1.0))
}

/// One variant's rates at one CPU count, summarised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSummary {
    /// Number of rounds.
    pub n: usize,
    /// Harmonic mean of the rates.
    pub hmean: f64,
    /// Arithmetic mean of the rates.
    pub mean: f64,
    /// Slowest round.
    pub min: f64,
    /// Fastest round.
    pub max: f64,
    /// Coefficient of variation of the rates (sample standard deviation / mean; 0 for one
    /// round), as a fraction.
    pub cv: f64,
}

/// Summarises positive finite rates.
pub fn summarize(rates: &[f64]) -> Result<RateSummary, StatsError> {
    let hmean = hmean(rates)?;
    let (mean, var) = mean_var(rates);
    let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let max = rates.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Ok(RateSummary {
        n: rates.len(),
        hmean,
        mean,
        min,
        max,
        cv: libm::sqrt(var) / mean,
    })
}

/// The ratio B/A of harmonic means with its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatioCi {
    /// `hmean(b) / hmean(a)`.
    pub ratio: f64,
    /// Harmonic mean of A's rates.
    pub a_hmean: f64,
    /// Harmonic mean of B's rates.
    pub b_hmean: f64,
    /// The 95% interval `(low, high)`; `None` with fewer than two rounds on a side.
    pub ci: Option<(f64, f64)>,
    /// Welch-Satterthwaite degrees of freedom (`None` without an interval or with zero
    /// variance).
    pub df: Option<f64>,
}

impl RatioCi {
    /// Whether the interval excludes 1.0 (mmtests' `*`).
    #[must_use]
    pub fn significant(&self) -> bool {
        self.ci.is_some_and(|(lo, hi)| lo > 1.0 || hi < 1.0)
    }
}

/// The ratio of harmonic means B/A of two sets of per-round rates, with a 95% interval
/// (Welch's t on the log ratio, see the module doc).
pub fn ratio_ci(a: &[f64], b: &[f64]) -> Result<RatioCi, StatsError> {
    check(a)?;
    check(b)?;
    let ta: alloc::vec::Vec<f64> = a.iter().map(|r| 1.0 / r).collect();
    let tb: alloc::vec::Vec<f64> = b.iter().map(|r| 1.0 / r).collect();
    let (ma, va) = mean_var(&ta);
    let (mb, vb) = mean_var(&tb);
    let (a_hmean, b_hmean) = (1.0 / ma, 1.0 / mb);
    let ratio = ma / mb;
    let mut out = RatioCi {
        ratio,
        a_hmean,
        b_hmean,
        ci: None,
        df: None,
    };
    if a.len() < 2 || b.len() < 2 {
        return Ok(out);
    }
    // Relative variances of the two means: the variances of their logarithms.
    let ua = va / (a.len() as f64 * ma * ma);
    let ub = vb / (b.len() as f64 * mb * mb);
    let se2 = ua + ub;
    if se2 <= 0.0 || !se2.is_finite() {
        out.ci = Some((ratio, ratio));
        return Ok(out);
    }
    let df = se2 * se2 / (ua * ua / (a.len() as f64 - 1.0) + ub * ub / (b.len() as f64 - 1.0));
    let t = student_t_quantile(0.5 + CONFIDENCE / 2.0, df);
    let half = t * libm::sqrt(se2);
    out.ci = Some((ratio * libm::exp(-half), ratio * libm::exp(half)));
    out.df = Some(df);
    Ok(out)
}

/// The `p` quantile (0.5 < p < 1) of Student's t with `df` degrees of freedom (`df` is
/// clamped to at least 1, which Welch's df never goes below in theory).
#[must_use]
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    let df = if df.is_finite() { df.max(1.0) } else { 1e9 };
    // P(T <= t) for t >= 0 is 1 - I_{df/(df+t^2)}(df/2, 1/2) / 2: increasing in t.
    let cdf = |t: f64| 1.0 - 0.5 * beta_inc(df / 2.0, 0.5, df / (df + t * t));
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while cdf(hi) < p && hi < 1e12 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-12 * hi {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// The regularized incomplete beta function `I_x(a, b)`.
fn beta_inc(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = libm::lgamma(a + b) - libm::lgamma(a) - libm::lgamma(b)
        + a * libm::log(x)
        + b * libm::log(1.0 - x);
    let front = libm::exp(ln_front);
    // The continued fraction converges fast for x < (a + 1) / (a + b + 2); use the symmetry
    // I_x(a, b) = 1 - I_{1-x}(b, a) otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function, by the modified Lentz method.
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let tiny = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / tiny(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / tiny(1.0 + aa * d);
        c = tiny(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / tiny(1.0 + aa * d);
        c = tiny(1.0 + aa / c);
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        for (df, t) in [
            (1.0, 12.7062),
            (2.0, 4.3027),
            (3.0, 3.1824),
            (4.0, 2.7764),
            (10.0, 2.2281),
            (30.0, 2.0423),
            (1e6, 1.9600),
        ] {
            let q = student_t_quantile(0.975, df);
            assert!((q - t).abs() < 1e-3, "df {df}: {q} != {t}");
        }
        assert!((student_t_quantile(0.95, 5.0) - 2.0150).abs() < 1e-3);
    }

    #[test]
    fn hmean_and_summary() {
        assert_eq!(hmean(&[1.0, 4.0, 4.0]), Ok(2.0));
        let s = summarize(&[1.0, 4.0, 4.0]).unwrap();
        assert_eq!((s.n, s.min, s.max, s.mean), (3, 1.0, 4.0, 3.0));
        assert!((s.cv - libm::sqrt(3.0) / 3.0).abs() < 1e-12);
        assert_eq!(summarize(&[5.0]).unwrap().cv, 0.0);
        assert_eq!(hmean(&[]), Err(StatsError::Empty));
        assert_eq!(hmean(&[1.0, 0.0]), Err(StatsError::BadRate));
        assert_eq!(summarize(&[f64::NAN]), Err(StatsError::BadRate));
        assert_eq!(ratio_ci(&[1.0], &[f64::INFINITY]), Err(StatsError::BadRate));
    }

    #[test]
    fn known_interval() {
        // Times per op 1, 2, 3 (mean 2) against 1/2, 1, 3/2 (mean 1): B is twice as fast.
        let a = [1.0, 0.5, 1.0 / 3.0];
        let b = [2.0, 1.0, 2.0 / 3.0];
        let r = ratio_ci(&a, &b).unwrap();
        assert!((r.ratio - 2.0).abs() < 1e-12);
        // Each side's relative variance of the mean is 1/12; df = 4.
        let df = r.df.unwrap();
        assert!((df - 4.0).abs() < 1e-9, "{df}");
        let half = 2.7764 * libm::sqrt(1.0 / 6.0);
        let (lo, hi) = r.ci.unwrap();
        assert!((lo - 2.0 * libm::exp(-half)).abs() < 1e-3, "{lo}");
        assert!((hi - 2.0 * libm::exp(half)).abs() < 1e-2, "{hi}");
        assert!(!r.significant(), "the interval is wide: {lo}..{hi}");
    }

    #[test]
    fn clear_difference_is_significant_and_one_round_is_not() {
        let a = [100.0, 101.0, 99.0, 100.5];
        let b = [120.0, 121.0, 119.5, 120.2];
        let r = ratio_ci(&a, &b).unwrap();
        assert!(r.significant() && r.ci.unwrap().0 > 1.15);
        let r = ratio_ci(&a[..1], &b).unwrap();
        assert_eq!((r.ci, r.significant()), (None, false));
        // Zero variance on both sides: the interval is the point, and 1.2 != 1.
        let r = ratio_ci(&[100.0, 100.0], &[120.0, 120.0]).unwrap();
        assert_eq!(r.ci, Some((r.ratio, r.ratio)));
        assert!(r.significant());
        // ... and identical constant samples give [1, 1], which does not exclude 1.
        let r = ratio_ci(&[5.0, 5.0, 5.0], &[5.0, 5.0, 5.0]).unwrap();
        assert_eq!((r.ci, r.significant()), (Some((1.0, 1.0)), false));
    }

    fn rates() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(1e-3f64..1e9, 1..12)
    }

    proptest! {
        #[test]
        fn hmean_is_between_min_and_mean(r in rates()) {
            let s = summarize(&r).unwrap();
            let tol = 1e-9 * s.max;
            prop_assert!(s.min <= s.hmean + tol);
            prop_assert!(s.hmean <= s.mean + tol);
            prop_assert!(s.mean <= s.max + tol);
            prop_assert!(s.cv >= 0.0);
        }

        #[test]
        fn interval_contains_the_point_ratio(a in rates(), b in rates()) {
            let r = ratio_ci(&a, &b).unwrap();
            let expect = hmean(&b).unwrap() / hmean(&a).unwrap();
            prop_assert!((r.ratio - expect).abs() <= 1e-9 * expect);
            if let Some((lo, hi)) = r.ci {
                prop_assert!(lo > 0.0 && lo <= r.ratio && r.ratio <= hi && hi.is_finite());
            } else {
                prop_assert!(a.len() < 2 || b.len() < 2);
            }
        }

        #[test]
        fn identical_samples_are_not_significant(a in rates()) {
            let r = ratio_ci(&a, &a).unwrap();
            prop_assert_eq!(r.ratio, 1.0);
            prop_assert!(!r.significant());
        }

        #[test]
        fn swapping_inverts_and_scaling_scales(a in rates(), b in rates(), k in 0.1f64..10.0) {
            let ab = ratio_ci(&a, &b).unwrap();
            let ba = ratio_ci(&b, &a).unwrap();
            prop_assert!((ab.ratio * ba.ratio - 1.0).abs() < 1e-9);
            prop_assert_eq!(ab.significant(), ba.significant());
            if let (Some((lo, hi)), Some((lo2, hi2))) = (ab.ci, ba.ci) {
                prop_assert!((lo * hi2 - 1.0).abs() < 1e-6 && (hi * lo2 - 1.0).abs() < 1e-6);
            }
            let kb: Vec<f64> = b.iter().map(|x| x * k).collect();
            let scaled = ratio_ci(&a, &kb).unwrap();
            prop_assert!((scaled.ratio / ab.ratio - k).abs() < 1e-9 * k);
        }
    }
}
