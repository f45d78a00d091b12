//! The statistics of a benchmark run, as mmtests reports them: per variant the harmonic mean
//! of the per-round rates (ops/s), min, max and coefficient of variation; per comparison the
//! ratio B/A with a 95% confidence interval and a significance mark (mmtests' `*`).
//!
//! # Paired by round
//!
//! A and B of one round run side by side, so a comparison's estimate is the geometric mean of
//! the per-round ratios `B_r / A_r` and its interval Student's t on the mean of their
//! logarithms, `n - 1` degrees of freedom ([`paired_ratio_ci`], [`PAIRED_METHOD`]), with the
//! two-sided p of the same t-test: drift between rounds cancels in each ratio instead of
//! widening the interval. Rounds of one instance share its placement, so this interval
//! leaves placement noise out: with two or more instances per variant a comparison uses
//! [`crate::two_level`] instead and keeps this one beside it. Holm-Bonferroni ([`holm`])
//! corrects the primary comparisons' p-values ([`crate::primary`]). The unpaired interval
//! below is what a comparison falls back to when no round has both variants.
//!
//! # The unpaired interval
//!
//! Why the harmonic mean:
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
        excludes_one(self.ci)
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

/// Whether a ratio interval excludes 1.0 (`None`, no interval: never).
#[must_use]
pub fn excludes_one(ci: Option<(f64, f64)>) -> bool {
    ci.is_some_and(|(lo, hi)| lo > 1.0 || hi < 1.0)
}

/// The name of the paired interval method, as recorded in `comparison` records.
pub const PAIRED_METHOD: &str = "paired-t-log-ratio-95";

/// The family-wise error rate of [`holm`]'s correction, and the level the marks use.
pub const ALPHA: f64 = 0.05;

/// The paired ratio B/A: per round `r`, `B_r / A_r` of two runs that ran side by side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairedCi {
    /// The geometric mean of the per-round ratios, `exp(mean(ln(B_r / A_r)))`.
    pub ratio: f64,
    /// Pairs (rounds present on both sides).
    pub n: usize,
    /// The 95% interval `exp(mean -+ t_{0.975, n-1} s / sqrt(n))`; `None` with one pair.
    pub ci: Option<(f64, f64)>,
    /// The two-sided p of the paired t-test that the mean log ratio is 0 (`None` with one
    /// pair; 0 or 1 when every pair has the same ratio).
    pub p: Option<f64>,
}

impl PairedCi {
    /// Whether the interval excludes 1.0.
    #[must_use]
    pub fn significant(&self) -> bool {
        excludes_one(self.ci)
    }
}

/// The paired ratio of `pairs` `(a_rate, b_rate)`, one per round: its estimate is the
/// geometric mean of the per-round ratios and its interval Student's t on their logarithms
/// with `n - 1` degrees of freedom. Drift between rounds cancels in each ratio (A and B of
/// one round ran side by side), so it is not in the interval; with the variants' order
/// following a Williams square a position effect inside a round cancels in the mean over a
/// square.
pub fn paired_ratio_ci(pairs: &[(f64, f64)]) -> Result<PairedCi, StatsError> {
    if pairs.is_empty() {
        return Err(StatsError::Empty);
    }
    let a: alloc::vec::Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let b: alloc::vec::Vec<f64> = pairs.iter().map(|p| p.1).collect();
    check(&a)?;
    check(&b)?;
    let d: alloc::vec::Vec<f64> = pairs.iter().map(|(a, b)| libm::log(b / a)).collect();
    let (mean, var) = mean_var(&d);
    let ratio = libm::exp(mean);
    let n = d.len();
    let mut out = PairedCi {
        ratio,
        n,
        ci: None,
        p: None,
    };
    if n < 2 {
        return Ok(out);
    }
    let se = libm::sqrt(var / n as f64);
    if se <= 0.0 || !se.is_finite() {
        out.ci = Some((ratio, ratio));
        out.p = Some(if mean == 0.0 { 1.0 } else { 0.0 });
        return Ok(out);
    }
    let df = (n - 1) as f64;
    let half = student_t_quantile(0.5 + CONFIDENCE / 2.0, df) * se;
    out.ci = Some((libm::exp(mean - half), libm::exp(mean + half)));
    out.p = Some(student_t_two_sided_p(mean / se, df));
    Ok(out)
}

/// The half-width of a ratio interval `(lo, hi)` around `ratio`, as a fraction: the larger
/// of `hi / ratio - 1` and `1 - lo / ratio` (what `--ci-width` compares).
#[must_use]
pub fn half_width(ratio: f64, (lo, hi): (f64, f64)) -> f64 {
    (hi / ratio - 1.0).max(1.0 - lo / ratio)
}

/// `P(|T| >= |t|)` for Student's t with `df` degrees of freedom.
#[must_use]
pub fn student_t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    let df = if df.is_finite() { df.max(1.0) } else { 1e9 };
    beta_inc(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
}

/// Holm-Bonferroni: the adjusted p-values of `p`, in the same order, controlling the
/// family-wise error rate over all of them (`p_(i)` sorted ascending is multiplied by
/// `m - i`, made monotone, capped at 1).
#[must_use]
pub fn holm(p: &[f64]) -> alloc::vec::Vec<f64> {
    let m = p.len();
    let mut idx: alloc::vec::Vec<usize> = (0..m).collect();
    idx.sort_by(|&i, &j| p[i].total_cmp(&p[j]).then(i.cmp(&j)));
    let mut out = alloc::vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in idx.iter().enumerate() {
        let adj = ((m - rank) as f64 * p[i]).min(1.0);
        running = running.max(adj);
        out[i] = running;
    }
    out
}

/// The `p` quantile (0.5 < p < 1) of Student's t with `df` degrees of freedom (`df` is
/// clamped to at least 1, which Welch's df never goes below in theory).
#[must_use]
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    let df = if df.is_finite() { df.max(1.0) } else { 1e9 };
    // P(T <= t) for t >= 0 is 1 - I_{df/(df+t^2)}(df/2, 1/2) / 2: increasing in t.
    let cdf = |t: f64| 1.0 - 0.5 * beta_inc(df / 2.0, 0.5, df / (df + t * t));
    // Bracket the quantile by doubling, at most up to 2^40 (about 1e12): a bounded loop,
    // so a broken bracket gives a wrong quantile rather than a hang.
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..40 {
        if cdf(hi) >= p {
            break;
        }
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
        // Far in the tail, where the bracket must double many times: with one degree of
        // freedom (Cauchy) the quantile is exactly tan(pi (p - 1/2)).
        let cauchy = libm::tan(core::f64::consts::PI * (0.9999 - 0.5));
        let q = student_t_quantile(0.9999, 1.0);
        assert!((q - cauchy).abs() < 1e-6 * cauchy, "{q} != {cauchy}");
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
    fn welch_intervals_match_an_independent_computation() {
        // Expected values from mpmath (30 digits): Welch's t on the log ratio of the mean
        // times per op, Student's quantile from mpmath's regularized incomplete beta.
        for (a, b, ratio, lo, hi, df) in [
            (
                &[100.0, 120.0][..],
                &[130.0, 125.0, 140.0][..],
                1.20428296438884,
                0.565404442571456,
                2.56506201423041,
                1.26880549538358,
            ),
            (
                &[100.0, 110.0, 90.0, 105.0][..],
                &[120.0, 118.0, 125.0, 130.0][..],
                1.22232504979921,
                1.07218991141237,
                1.39348310543095,
                4.37479223970162,
            ),
        ] {
            let r = ratio_ci(a, b).unwrap();
            let (l, h) = r.ci.unwrap();
            assert!((r.ratio - ratio).abs() < 1e-12, "{a:?} {b:?}: {}", r.ratio);
            assert!((r.df.unwrap() - df).abs() < 1e-9, "{a:?} {b:?}: {:?}", r.df);
            assert!((l - lo).abs() < 1e-6 * lo, "{a:?} {b:?}: {l} != {lo}");
            assert!((h - hi).abs() < 1e-6 * hi, "{a:?} {b:?}: {h} != {hi}");
            assert!((r.a_hmean - hmean(a).unwrap()).abs() < 1e-9);
            assert!((r.b_hmean - hmean(b).unwrap()).abs() < 1e-9);
        }
        // Two distinct rounds have a variance: 100 and 120 around 110, s^2 = 200.
        let s = summarize(&[100.0, 120.0]).unwrap();
        assert!((s.cv - libm::sqrt(200.0) / 110.0).abs() < 1e-12, "{}", s.cv);
    }

    #[test]
    fn incomplete_beta_matches_an_independent_computation_on_both_branches() {
        // mpmath's regularized incomplete beta; the first of each pair is below
        // (a + 1) / (a + b + 2) (the continued fraction directly), the second above (by
        // the symmetry I_x(a, b) = 1 - I_{1-x}(b, a)).
        for (a, b, x, want) in [
            (2.0, 0.5, 0.3, 0.037840969485813117),
            (2.0, 0.5, 0.9, 0.541_469_739_275_585),
            (3.0, 2.0, 0.2, 0.0272),
            (3.0, 2.0, 0.8, 0.8192),
            (5.0, 0.5, 0.95, 0.48479121309839683),
            (15.0, 0.5, 0.99, 0.5860649647763354),
            (0.5, 0.5, 0.5, 0.5),
        ] {
            let got = beta_inc(a, b, x);
            assert!(
                (got - want).abs() < 1e-12,
                "I_{x}({a}, {b}) = {got}, not {want}"
            );
        }
        assert_eq!(beta_inc(2.0, 0.5, 0.0), 0.0);
        assert_eq!(beta_inc(2.0, 0.5, 1.0), 1.0);
        // Small |t|: the two-sided p takes the symmetric branch.
        for (t, df, want) in [
            (0.5, 10.0, 0.627_893_605_742_972_8),
            (0.1, 3.0, 0.926_652_348_800_806_8),
            (1.0, 1.0, 0.5),
        ] {
            let got = student_t_two_sided_p(t, df);
            assert!(
                (got - want).abs() < 1e-12,
                "p(|T| >= {t}; {df}) = {got}, not {want}"
            );
        }
    }

    #[test]
    fn no_variance_on_either_side_gives_the_point_as_its_interval() {
        let r = ratio_ci(&[2.0, 2.0], &[4.0, 4.0]).unwrap();
        assert_eq!(r.ratio, 2.0);
        assert_eq!(r.ci, Some((2.0, 2.0)));
        assert_eq!(r.df, None);
        assert!(r.significant());
    }

    #[test]
    fn half_width_is_the_wider_side_as_a_fraction() {
        assert!((half_width(2.0, (1.5, 3.0)) - 0.5).abs() < 1e-12);
        assert!((half_width(1.0, (0.8, 1.1)) - 0.2).abs() < 1e-12);
        assert!((half_width(2.0, (1.0, 2.2)) - 0.5).abs() < 1e-12);
        assert_eq!(half_width(1.0, (1.0, 1.0)), 0.0);
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(StatsError::Empty.to_string(), "no samples");
        assert_eq!(
            StatsError::BadRate.to_string(),
            "a rate that is not a positive finite number"
        );
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

    #[test]
    fn paired_known_interval_and_p() {
        // Log ratios ln 2 + {-d, 0, +d}: mean ln 2, so the ratio is exactly 2.
        let d = 0.1f64;
        let pairs: Vec<(f64, f64)> = [-d, 0.0, d]
            .iter()
            .map(|x| (10.0, 20.0 * libm::exp(*x)))
            .collect();
        let r = paired_ratio_ci(&pairs).unwrap();
        assert_eq!(r.n, 3);
        assert!((r.ratio - 2.0).abs() < 1e-12, "{}", r.ratio);
        // s = d, se = d / sqrt 3, t_{0.975, 2} = 4.3027.
        let half = 4.3027 * d / libm::sqrt(3.0);
        let (lo, hi) = r.ci.unwrap();
        assert!((lo - 2.0 * libm::exp(-half)).abs() < 1e-3, "{lo}");
        assert!((hi - 2.0 * libm::exp(half)).abs() < 1e-3, "{hi}");
        assert!(r.significant() && r.p.unwrap() < 0.01);
        // One pair: a ratio, no interval, no p.
        let one = paired_ratio_ci(&pairs[..1]).unwrap();
        assert_eq!((one.ci, one.p, one.significant()), (None, None, false));
        // Equal ratios every round: the interval is the point.
        let same = paired_ratio_ci(&[(1.0, 1.5), (2.0, 3.0)]).unwrap();
        assert_eq!(same.p, Some(0.0));
        assert!(same.significant());
        let flat = paired_ratio_ci(&[(1.0, 1.0), (2.0, 2.0)]).unwrap();
        assert_eq!((flat.p, flat.significant()), (Some(1.0), false));
        assert_eq!(paired_ratio_ci(&[]), Err(StatsError::Empty));
        assert_eq!(paired_ratio_ci(&[(1.0, 0.0)]), Err(StatsError::BadRate));
    }

    #[test]
    fn two_sided_p_matches_the_tables() {
        for (t, df, p) in [(2.7764, 4.0, 0.05), (12.7062, 1.0, 0.05), (1.96, 1e6, 0.05)] {
            let got = student_t_two_sided_p(t, df);
            assert!((got - p).abs() < 1e-4, "t {t} df {df}: {got}");
        }
        assert!((student_t_two_sided_p(0.0, 5.0) - 1.0).abs() < 1e-12);
        assert!((student_t_two_sided_p(-2.7764, 4.0) - 0.05).abs() < 1e-4);
    }

    #[test]
    fn holm_adjusts_in_step_down_order() {
        // Sorted: 0.01 x 4 = 0.04, 0.02 x 3 = 0.06, 0.03 x 2 = 0.06 (monotone), 0.5 x 1.
        let adj = holm(&[0.03, 0.5, 0.01, 0.02]);
        let want = [0.06, 0.5, 0.04, 0.06];
        for (g, w) in adj.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{adj:?}");
        }
        assert_eq!(holm(&[0.9, 0.8]), [1.0, 1.0]);
        assert_eq!(holm(&[0.2, 0.01]), [0.2, 0.02]);
        let adj = holm(&[0.6, 0.7, 0.01]);
        assert_eq!(adj[..2], [1.0, 1.0]);
        assert!((adj[2] - 0.03).abs() < 1e-12, "{adj:?}");
        assert!(holm(&[]).is_empty());
    }

    /// A deterministic generator of standard normal draws (xorshift + Box-Muller).
    struct Normal(u64);

    impl Normal {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn next(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            libm::sqrt(-2.0 * libm::log(u)) * libm::cos(2.0 * core::f64::consts::PI * v)
        }
    }

    /// Rounds whose speed drifts (each round's level is off by ~20%, as a host's load or
    /// frequency moves), A and B of a round side by side with 2% noise each, B truly 5%
    /// faster. The paired interval covers 1.05 about 95% of the time; the unpaired one,
    /// which takes the drift for noise, nearly always (it is far too wide, so it misses
    /// real effects), and it is several times wider.
    #[test]
    fn paired_interval_keeps_its_coverage_under_drift() {
        let mut g = Normal(0x9e37_79b9_7f4a_7c15);
        let (trials, rounds, truth) = (4000, 5, 1.05f64);
        let (mut paired_in, mut welch_in) = (0, 0);
        let (mut paired_w, mut welch_w) = (0.0, 0.0);
        for _ in 0..trials {
            let mut pairs = Vec::new();
            for _ in 0..rounds {
                let level = 1000.0 * libm::exp(0.2 * g.next());
                let a = level * libm::exp(0.02 * g.next());
                let b = level * truth * libm::exp(0.02 * g.next());
                pairs.push((a, b));
            }
            let p = paired_ratio_ci(&pairs).unwrap();
            let (lo, hi) = p.ci.unwrap();
            paired_in += usize::from(lo <= truth && truth <= hi);
            paired_w += half_width(p.ratio, (lo, hi));
            let a: Vec<f64> = pairs.iter().map(|x| x.0).collect();
            let b: Vec<f64> = pairs.iter().map(|x| x.1).collect();
            let w = ratio_ci(&a, &b).unwrap();
            let (lo, hi) = w.ci.unwrap();
            welch_in += usize::from(lo <= truth && truth <= hi);
            welch_w += half_width(w.ratio, (lo, hi));
        }
        let paired = paired_in as f64 / f64::from(trials);
        let welch = welch_in as f64 / f64::from(trials);
        assert!((0.93..=0.97).contains(&paired), "paired coverage {paired}");
        assert!(welch > 0.99, "unpaired coverage {welch}");
        assert!(welch_w > 4.0 * paired_w, "widths {welch_w} vs {paired_w}");
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
