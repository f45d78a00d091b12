//! One SVG per scenario: transfers per operation on the hottest lines of its first
//! comparison's A and B at the largest CPU count, one bar per line and variant, each line
//! labelled by the fields on it (or its code, where no object was named there). A and B are
//! separate instances, so their lines are matched by what is on them, not by address.

use super::results::CoherenceResults;
use super::table::{VariantFigures, figures};
use plotters::prelude::*;

/// Lines per chart.
const LINES: usize = 8;

/// One bar pair: the line's label, A's transfers per operation, B's.
pub type Bar = (String, f64, f64);

/// A hot line's label: its fields, or the functions that moved it.
fn label(h: &super::results::Hot) -> String {
    let text = match &h.fields {
        Some(f) => f.clone(),
        None => h
            .functions
            .first()
            .map_or_else(|| format!("{:#x}", h.addr), |(f, _)| format!("(code) {f}")),
    };
    if text.chars().count() > 70 {
        format!("{}...", text.chars().take(67).collect::<String>())
    } else {
        text
    }
}

/// The bars of `scenario`: (line label, A's transfers/op, B's), A's hottest first, and the
/// names of A and B with their CPU count; `None` when the scenario has no comparison run at
/// two or more CPUs.
#[must_use]
pub fn bars(c: &CoherenceResults, scenario: &str) -> Option<(String, Vec<Bar>)> {
    let s = bench::catalog::scenario(scenario)?;
    let d = s.comparisons.first()?;
    let figs = figures(c);
    let cpus = figs
        .iter()
        .filter(|f| f.scenario == scenario && f.cpus >= 2)
        .map(|f| f.cpus)
        .max()?;
    let config = &figs.iter().find(|f| f.scenario == scenario)?.config;
    let find = |v: &str| -> Option<&VariantFigures> {
        figs.iter().find(|f| {
            f.scenario == scenario && f.cpus == cpus && &f.config == config && f.variant == v
        })
    };
    let (a, b) = (find(d.a)?, find(d.b)?);
    let per = |f: &VariantFigures, h: &super::results::Hot| {
        h.counts.transfers() as f64 / f.ops.max(1) as f64
    };
    let mut rows: Vec<Bar> = Vec::new();
    for (f, is_a) in [(a, true), (b, false)] {
        for h in f.hot.iter().take(LINES) {
            let l = label(h);
            let x = per(f, h);
            match rows.iter_mut().find(|r| r.0 == l) {
                Some(r) if is_a => r.1 += x,
                Some(r) => r.2 += x,
                None if is_a => rows.push((l, x, 0.0)),
                None => rows.push((l, 0.0, x)),
            }
        }
    }
    rows.sort_by(|x, y| (y.1 + y.2).total_cmp(&(x.1 + x.2)));
    rows.truncate(LINES);
    Some((
        format!(
            "{scenario} {config}, {cpus} CPUs: {} (A) and {} (B)",
            d.a, d.b
        ),
        rows,
    ))
}

/// The chart of `scenario` as SVG (`None`: nothing to draw).
pub fn svg(c: &CoherenceResults, scenario: &str) -> Result<Option<String>, String> {
    let Some((title, rows)) = bars(c, scenario) else {
        return Ok(None);
    };
    if rows.is_empty() {
        return Ok(None);
    }
    let mut out = String::new();
    {
        let height = 120 + 44 * rows.len() as u32;
        let root = SVGBackend::with_string(&mut out, (1000, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let max = rows
            .iter()
            .map(|r| r.1.max(r.2))
            .fold(0.0f64, f64::max)
            .max(1e-6)
            * 1.1;
        let n = rows.len() as i32;
        let mut chart = ChartBuilder::on(&root)
            .caption(&title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(420)
            .build_cartesian_2d(0.0..max, 0..(2 * n))
            .map_err(|e| e.to_string())?;
        let labels = rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("transfers per operation (64-byte lines)")
            .y_labels(2 * rows.len())
            .y_label_formatter(&|y| {
                if y % 2 == 1 {
                    labels
                        .get(((2 * n - 1 - y) / 2) as usize)
                        .cloned()
                        .unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(|e| e.to_string())?;
        let blue = RGBColor(31, 119, 180);
        let orange = RGBColor(255, 127, 14);
        for (i, r) in rows.iter().enumerate() {
            let top = 2 * n - 2 * i as i32;
            chart
                .draw_series([
                    Rectangle::new([(0.0, top - 1), (r.1, top)], blue.filled()),
                    Rectangle::new([(0.0, top - 2), (r.2, top - 1)], orange.filled()),
                ])
                .map_err(|e| e.to_string())?;
        }
        chart
            .draw_series([Rectangle::new([(0.0, 0), (0.0, 0)], blue.filled())])
            .map_err(|e| e.to_string())?
            .label("A")
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], blue.filled()));
        chart
            .draw_series([Rectangle::new([(0.0, 0), (0.0, 0)], orange.filled())])
            .map_err(|e| e.to_string())?
            .label("B")
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], orange.filled()));
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coherence::results::{CoherenceRun, Hot, ModelRun};
    use coherence::report::{Header, Transactions, VcpuAccesses};

    fn run(variant: &str, fields: &str, rfo: u64) -> CoherenceRun {
        let counts = Transactions {
            rfo_hitm: rfo,
            ..Transactions::default()
        };
        CoherenceRun {
            scenario: "page-counter-802f1d".into(),
            config: "one-memcg".into(),
            variant: variant.into(),
            cpus: 2,
            round: 1,
            warmup: false,
            ops: 100,
            complete: true,
            overlap: Some(1.0),
            accesses: VcpuAccesses::default(),
            windows: 2,
            models: vec![ModelRun {
                line_bytes: 64,
                total: counts.clone(),
                hot: vec![Hot {
                    addr: 0x1000,
                    counts,
                    vcpus: vec![0, 1],
                    symbol: None,
                    functions: vec![("PageCounter::try_charge".into(), rfo)],
                    fields: Some(fields.into()),
                    on: vec![],
                }],
            }],
        }
    }

    #[test]
    fn bars_match_a_and_b_lines_by_their_fields() {
        let c = CoherenceResults {
            header: Header {
                api: (0, 1),
                vcpus: 2,
                sockets: vec![0, 0],
                cache_kib: 1024,
                ways: 8,
                line_bytes: vec![64],
            },
            runs: vec![
                run("A", "page_counter (leaf 0): usage, parent", 50),
                run("B", "page_counter (leaf 0): usage", 20),
            ],
            problems: vec![],
            verdicts: vec![],
            projection: None,
        };
        let (title, rows) = bars(&c, "page-counter-802f1d").expect("bars");
        assert!(title.contains("2 CPUs") && title.contains("(A)"), "{title}");
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0],
            ("page_counter (leaf 0): usage, parent".into(), 0.5, 0.0)
        );
        assert_eq!(rows[1], ("page_counter (leaf 0): usage".into(), 0.0, 0.2));
        let svg = svg(&c, "page-counter-802f1d").unwrap().expect("an svg");
        assert!(svg.starts_with("<svg") && svg.contains("usage, parent"));
        assert_eq!(bars(&c, "seed004-readtwice"), None);
    }
}
