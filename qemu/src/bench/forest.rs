//! One forest plot per scenario (`<scenario>-forest.svg`): every comparison of the run as a
//! row (config, B/A, CPU count; the A/A controls included, labelled `A'/A`), its paired ratio
//! as a dot with its 95% interval as a horizontal bar, a vertical line at 1, and the seed's
//! figure for the same comparison (at the nearest thread count it published) as a red cross
//! on the same row. The x axis is logarithmic, so 0.5 and 2 are as far from 1: the chart
//! is drawn in `ln(B/A)` and its ticks are labelled with the ratios, with as many decimals
//! as the range needs for every label to differ ([`tick_decimals`]; plotters' own log axis
//! put every tick of a narrow range at "1.000"). A marked comparison (see `bench::summary`)
//! is drawn filled, an unmarked one hollow.
//!
//! Drawn with plotters' SVG backend like the other plots ([`super::plot`]).

use bench::catalog;
use bench::summary::Summary;
use plotters::prelude::*;

/// One row of a forest plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// `config b/a @cpus`.
    pub label: String,
    /// The paired ratio.
    pub ratio: f64,
    /// Its 95% interval, when there is one.
    pub ci: Option<(f64, f64)>,
    /// Whether it is marked.
    pub marked: bool,
    /// The seed's figure for it, if any.
    pub seed: Option<f64>,
}

/// The rows of `scenario`, in table order.
#[must_use]
pub fn rows(summary: &Summary, scenario: &str) -> Vec<Row> {
    let s = catalog::scenario(scenario);
    summary
        .scenario_points(scenario)
        .flat_map(|p| &p.comparisons)
        .map(|c| Row {
            label: format!("{} {}/{} @{}", c.config, c.b, c.a, c.cpus),
            ratio: c.ratio,
            ci: c.ci_low.zip(c.ci_high),
            marked: c.marked.unwrap_or(c.significant),
            seed: s
                .and_then(|s| catalog::published_near(s, &c.a, &c.b, &c.config, c.cpus))
                .map(|p| p.ratio),
        })
        .collect()
}

/// Decimals for ratio labels on an axis from `lo` to `hi` (ratios) with about `ticks`
/// ticks: enough that neighbouring ticks, `ln(hi / lo) / ticks` apart in `ln`, read
/// differently.
#[must_use]
pub fn tick_decimals(lo: f64, hi: f64, ticks: u32) -> usize {
    let step = (hi / lo).ln() / f64::from(ticks.max(1));
    if !step.is_finite() || step <= 0.0 {
        return 3;
    }
    ((-step.log10()).ceil() as i64 + 1).clamp(2, 6) as usize
}

/// The forest plot of `scenario` (`None` when it has no comparison), or why plotters failed.
pub fn svg(summary: &Summary, scenario: &str) -> Result<Option<String>, String> {
    let rows = rows(summary, scenario);
    if rows.is_empty() {
        return Ok(None);
    }
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let n = rows.len();
    let (mut lo, mut hi) = (1.0f64, 1.0f64);
    for r in &rows {
        let (a, b) = r.ci.unwrap_or((r.ratio, r.ratio));
        for v in [a, b, r.ratio].into_iter().chain(r.seed) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    let (lo, hi) = (lo / 1.02, hi * 1.02);
    let decimals = tick_decimals(lo, hi, 8);
    let ln = f64::ln;
    let height = 110 + 24 * n as u32;
    let mut buf = String::new();
    {
        let area = SVGBackend::with_string(&mut buf, (900, height)).into_drawing_area();
        area.fill(&WHITE).map_err(|x| e(&x))?;
        let mut chart = ChartBuilder::on(&area)
            .caption(
                format!("{scenario}: B/A with 95% intervals (x: seed's figure)"),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(250)
            .build_cartesian_2d(ln(lo)..ln(hi), -0.5..n as f64 - 0.5)
            .map_err(|x| e(&x))?;
        let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&|y| {
                let i = y.round();
                if (y - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                    // Row 0 at the top.
                    labels[n - 1 - i as usize].clone()
                } else {
                    String::new()
                }
            })
            .x_desc("B/A (log scale)")
            .x_labels(8)
            .x_label_formatter(&|x| format!("{:.*}", decimals, x.exp()))
            .draw()
            .map_err(|x| e(&x))?;
        let y = |i: usize| (n - 1 - i) as f64;
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, -0.5), (0.0, n as f64 - 0.5)],
                BLACK.stroke_width(1),
            ))
            .map_err(|x| e(&x))?;
        let blue = RGBColor(31, 90, 180);
        for (i, r) in rows.iter().enumerate() {
            if let Some((a, b)) = r.ci {
                chart
                    .draw_series(std::iter::once(ErrorBar::new_horizontal(
                        y(i),
                        ln(a),
                        ln(r.ratio),
                        ln(b),
                        blue.stroke_width(2),
                        8,
                    )))
                    .map_err(|x| e(&x))?;
            }
            let style = if r.marked {
                blue.filled()
            } else {
                blue.stroke_width(2)
            };
            chart
                .draw_series(std::iter::once(Circle::new((ln(r.ratio), y(i)), 4, style)))
                .map_err(|x| e(&x))?;
            if let Some(s) = r.seed {
                chart
                    .draw_series(std::iter::once(Cross::new(
                        (ln(s), y(i)),
                        6,
                        RED.stroke_width(2),
                    )))
                    .map_err(|x| e(&x))?;
            }
        }
        area.present().map_err(|x| e(&x))?;
    }
    Ok(Some(buf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench::Run;
    use std::collections::BTreeSet;

    /// A narrow range (seed003's B/A within 1% of A, the seed's -0.02% at 1 CPU): the ticks
    /// still read as distinct ratios (plotters' log axis labelled them all 1.000).
    #[test]
    fn a_narrow_forest_has_distinct_ticks() {
        let mut runs = Vec::new();
        for round in 1..=3u32 {
            for (v, k) in [("A", 100_000u64), ("B", 100_500), ("A'", 100_100)] {
                let ops = k + u64::from(round) * 37;
                runs.push(
                    Run::new("seed003-pft", "anon", v, 1, round, false, ops, 1_000_000).unwrap(),
                );
            }
        }
        let svg = svg(&Summary::new(&runs, &[]), "seed003-pft")
            .unwrap()
            .unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("the SVG is XML");
        let ticks: BTreeSet<&str> = doc
            .descendants()
            .filter_map(|n| n.text())
            .map(str::trim)
            .filter(|t| t.parse::<f64>().is_ok())
            .collect();
        assert!(ticks.len() >= 4, "{ticks:?}");
    }

    #[test]
    fn narrow_ranges_get_enough_decimals() {
        assert_eq!(tick_decimals(0.99, 1.01, 8), 4);
        assert_eq!(tick_decimals(0.5, 10.0, 8), 2);
        assert_eq!(tick_decimals(0.999, 1.001, 8), 5);
        assert_eq!(tick_decimals(1.0, 1.0, 8), 3);
    }

    #[test]
    fn one_row_per_comparison_with_the_seed() {
        let mut runs = Vec::new();
        for cpus in [1u32, 2] {
            for round in 1..=3u32 {
                for (v, k) in [("A", 100u64), ("B", 150), ("A'", 100)] {
                    let ops = k * 1000 + u64::from(round * cpus);
                    runs.push(
                        Run::new(
                            "seed002-reclaim",
                            "1500",
                            v,
                            cpus,
                            round,
                            false,
                            ops,
                            1_000_000,
                        )
                        .unwrap(),
                    );
                }
            }
        }
        let summary = Summary::new(&runs, &[]);
        let r = rows(&summary, "seed002-reclaim");
        let labels: Vec<&str> = r.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            ["1500 B/A @1", "1500 A'/A @1", "1500 B/A @2", "1500 A'/A @2"]
        );
        assert_eq!(r[0].seed, Some(9.5));
        assert_eq!(r[1].seed, None);
        assert!((r[0].ratio - 1.5).abs() < 0.01);
        let svg = svg(&summary, "seed002-reclaim").unwrap().unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("the SVG is XML");
        let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
        for l in labels {
            assert!(texts.iter().any(|t| t.trim() == l), "{l}: {texts:?}");
        }
        assert!(svg.contains("#FF0000"), "the seed's cross");
        // The x ticks read as distinct ratios.
        let ticks: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| t.trim().parse::<f64>().is_ok())
            .collect();
        let distinct: BTreeSet<&str> = ticks.iter().map(|t| t.trim()).collect();
        assert!(distinct.len() >= 4, "{ticks:?}");
        assert!(
            super::svg(&Summary::new(&[], &[]), "limit")
                .unwrap()
                .is_none()
        );
    }
}
