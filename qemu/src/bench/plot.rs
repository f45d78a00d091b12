//! One SVG per scenario: ops/s against CPUs, one line per (config, variant), each point the
//! harmonic mean of the measured rounds with a whisker from the slowest to the fastest round.
//!
//! Drawn with plotters' SVG backend only (no font-kit, no system fonts: text goes out as SVG
//! `<text>` and plotters estimates its extent). The x axis is logarithmic when the CPU counts
//! span more than a factor of two (1, 2, 4, ... spread evenly), linear otherwise; the y axis
//! starts at zero so ratios read off the picture are honest. Each series has its own colour
//! ([`series_color`]): its line, markers, whiskers and legend entry are drawn in it, which is
//! how a reader (and the tests) tell the series apart in plotters' anonymous polylines.

use bench::summary::Summary;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Width and height of a plot, pixels.
pub const SIZE: (u32, u32) = (900, 520);

/// One plotted series.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend label: `variant` or `config variant`.
    pub label: String,
    /// (cpus, hmean, min, max), by CPUs.
    pub points: Vec<(u32, f64, f64, f64)>,
}

/// The series of `scenario`: one per (config, variant), in table order.
#[must_use]
pub fn series(summary: &Summary, scenario: &str) -> Vec<Series> {
    let points: Vec<_> = summary.scenario_points(scenario).collect();
    let mut configs: Vec<&str> = Vec::new();
    for p in &points {
        if !configs.contains(&p.config.as_str()) {
            configs.push(&p.config);
        }
    }
    let mut out: Vec<Series> = Vec::new();
    for config in &configs {
        for p in points.iter().filter(|p| p.config == *config) {
            for v in &p.variants {
                let label = if configs.len() > 1 {
                    format!("{config} {}", v.variant)
                } else {
                    v.variant.clone()
                };
                let point = (p.cpus, v.stats.hmean, v.stats.min, v.stats.max);
                match out.iter_mut().find(|s| s.label == label) {
                    Some(s) => s.points.push(point),
                    None => out.push(Series {
                        label,
                        points: vec![point],
                    }),
                }
            }
        }
    }
    out
}

fn color(i: usize) -> RGBColor {
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn draw(area: &Area<'_>, title: &str, all: &[Series]) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let cpus = all.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (lo, hi) = cpus.fold((u32::MAX, 0), |(lo, hi), c| (lo.min(c), hi.max(c)));
    let (lo, hi) = (f64::from(lo.min(hi)), f64::from(hi.max(1)));
    let ymax = all
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.3))
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.15;
    let mut chart = ChartBuilder::on(area);
    chart
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80);
    let y_fmt = |v: &f64| bench::table::Rate(*v).to_string();
    // Both axis kinds draw the same things on differently typed coordinates.
    macro_rules! body {
        ($chart:ident) => {{
            let mut c = $chart;
            c.configure_mesh()
                .x_desc("CPUs")
                .y_desc("ops/s (harmonic mean; whiskers: min..max)")
                // CPU counts are integers: label only the ticks that fall on one.
                .x_label_formatter(&|x| {
                    if (x - x.round()).abs() < 1e-9 {
                        format!("{}", x.round())
                    } else {
                        String::new()
                    }
                })
                .y_label_formatter(&y_fmt)
                .draw()
                .map_err(|x| e(&x))?;
            for (i, s) in all.iter().enumerate() {
                let style = color(i).stroke_width(2);
                let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (f64::from(p.0), p.1)).collect();
                c.draw_series(LineSeries::new(pts.clone(), style))
                    .map_err(|x| e(&x))?
                    .label(s.label.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
                c.draw_series(pts.iter().map(|p| Circle::new(*p, 3, style.filled())))
                    .map_err(|x| e(&x))?;
                c.draw_series(
                    s.points
                        .iter()
                        .map(|p| ErrorBar::new_vertical(f64::from(p.0), p.2, p.1, p.3, style, 8)),
                )
                .map_err(|x| e(&x))?;
            }
            c.configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(|x| e(&x))?;
            Ok(())
        }};
    }
    if hi / lo > 2.0 {
        let c = chart
            .build_cartesian_2d((lo / 1.25..hi * 1.25).log_scale(), 0.0..ymax)
            .map_err(|x| e(&x))?;
        body!(c)
    } else {
        let c = chart
            .build_cartesian_2d(lo - 0.5..hi + 0.5, 0.0..ymax)
            .map_err(|x| e(&x))?;
        body!(c)
    }
}

/// The stroke colour of series `i` as it appears in the SVG (`#rrggbb`).
#[must_use]
pub fn series_color(i: usize) -> String {
    let c = color(i);
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// The SVG of `scenario` (`None` when it has no measured runs), or why plotters failed.
pub fn svg(summary: &Summary, scenario: &str) -> Result<Option<String>, String> {
    let all = series(summary, scenario);
    if all.is_empty() {
        return Ok(None);
    }
    let title = format!("{scenario}: ops/s against CPUs");
    let mut buf = String::new();
    {
        let area = SVGBackend::with_string(&mut buf, SIZE).into_drawing_area();
        area.fill(&WHITE).map_err(|x| x.to_string())?;
        draw(&area, &title, &all)?;
        area.present().map_err(|x| x.to_string())?;
    }
    Ok(Some(buf))
}

/// Escapes text for XML content and attributes.
#[must_use]
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}
