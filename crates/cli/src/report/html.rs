//! report.html: a self-contained page with the plots drawn as inline SVG.

use std::fmt::Write as _;

use nvmswap_core::results::{RunOutput, RunsReport, TimelineSample};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{ratio_text, relaunch_base, relaunch_row, RelaunchRow};

/// The head of a self-contained report page.
fn page_start(h: &mut String, title: &str) -> std::fmt::Result {
    writeln!(
        h,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title>"
    )?;
    writeln!(h, "<style>body{{font-family:sans-serif;max-width:1000px;margin:auto}}table{{border-collapse:collapse;font-size:13px}}td,th{{border:1px solid #ccc;padding:3px 6px;text-align:right}}td:first-child,th:first-child,td:nth-child(2){{text-align:left}}figure{{margin:24px 0}}figcaption{{color:#444}}</style></head><body>")
}

/// The figures, each with its caption, and the end of the page.
fn page_end(mut h: String, figures: Vec<(Svg, &str)>) -> anyhow::Result<String> {
    for (i, (svg, caption)) in figures.into_iter().enumerate() {
        writeln!(
            h,
            "<figure class=\"chart\" id=\"figure-{}\">{}<figcaption>{caption}</figcaption></figure>",
            i + 1,
            svg?
        )?;
    }
    writeln!(h, "{REFERENCES_HTML}</body></html>")?;
    Ok(h)
}

/// The papers the captions cite as "seed 000" and "seed 001" (docs/references.md lists all five).
const REFERENCES_HTML: &str = "<h2>References</h2><ul>\
<li><b>Seed 000</b>: G. F. Oliveira, S. Ghose, J. G\u{f3}mez-Luna, A. Boroumand, A. Savery, S. Rao, S. Qazi, \
G. Grignou, R. Thakur, E. Shiu, O. Mutlu. <i>Extending Memory Capacity in Consumer Devices with Emerging \
Non-Volatile Memory: An Experimental Study.</i> arXiv:2111.02325, 2021.</li>\
<li><b>Seed 001</b>: D. Liu, K. Zhong, X. Zhu, Y. Li, L. Long, Z. Shao. <i>Non-Volatile Memory Based Page \
Swapping for Building High-Performance Mobile Devices.</i> IEEE Transactions on Computers, 2017.</li></ul>";

pub(super) fn relaunch(report: &RunsReport, outputs: &[RunOutput]) -> anyhow::Result<String> {
    let rows: Vec<RelaunchRow> = outputs.iter().map(relaunch_row).collect();
    let mut h = String::new();
    page_start(&mut h, "nvmswap relaunch report")?;
    writeln!(h, "<h1>App relaunch (seed 001 §4.5, §4.6)</h1><p>seed {}, {} run(s). Every number below comes from this run; results.json holds them all. Ratios are to the first configuration of the same category.</p>", report.seed, report.runs.len())?;
    writeln!(h, "<table><tr><th>config</th><th>category</th><th>relaunches</th><th>killed</th><th>relaunch ms</th><th>vs base</th><th>execute ms</th><th>vs base</th><th>NVM copies</th></tr>")?;
    for (row, o) in rows.iter().zip(outputs) {
        let base = relaunch_base(&rows, row);
        writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td></tr>",
            row.name, row.category, row.relaunches, row.kills, row.relaunch_ms,
            ratio_text(row.relaunch_ms, base.map(|b| b.relaunch_ms)), row.execute_ms,
            ratio_text(row.execute_ms, base.map(|b| b.execute_ms)),
            o.result.extra.get("nvm_copies").and_then(|v| v.as_u64()).unwrap_or(0),
        )?;
    }
    writeln!(h, "</table>")?;
    let figures: Vec<(Svg, &str)> = vec![
        (relaunch_small_multiples("Relaunch delay per category (mean over all relaunches, log axis)", &rows, |r| r.relaunch_ms, true, ms_label), "Seed 001 Fig. 13, one chart per category: the time from bringing an app to the foreground until its memory is back and its relaunch work done; a killed app starts from nothing."),
        (relaunch_small_multiples("Execution time of the foreground operation per category (log axis)", &rows, |r| r.execute_ms, true, ms_label), "Seed 001 Fig. 14: an operation that allocates and writes memory while the phone is under pressure, so its allocations reclaim."),
        (relaunch_small_multiples("Apps found killed per category", &rows, |r| r.kills as f64, false, num), "Relaunches that found the app discarded (seed 001 Fig. 1's terminations)."),
    ];
    page_end(h, figures)
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

type Svg = anyhow::Result<String>;

/// Seed 000's yardsticks: a fault under 10 µs is cheap (§4.2), a switch over 250 ms is felt
/// (§2.2).
const FAULT_MARK_US: f64 = 10.0;
const SWITCH_MARK_MS: f64 = 250.0;

const FONT: (&str, u32) = ("sans-serif", 13);
const TITLE: (&str, u32) = ("sans-serif", 17);

/// A number as a tick label: no trailing ".0", thousands grouped ("1,000,000").
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    if a >= 1000.0 {
        let n = v.round() as i64;
        let digits = n.unsigned_abs().to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        return if n < 0 { format!("-{out}") } else { out };
    }
    let text = if a >= 10.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else if a >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A duration given in ms, in the unit that reads best (µs, ms, s).
pub(crate) fn ms_label(v: f64) -> String {
    if v >= 1000.0 {
        format!("{} s", num(v / 1000.0))
    } else if v >= 1.0 || v == 0.0 {
        format!("{} ms", num(v))
    } else {
        format!("{} µs", num(v * 1000.0))
    }
}

fn us_label(v: f64) -> String {
    ms_label(v / 1000.0)
}

fn pct_label(v: f64) -> String {
    format!("{} %", num(v))
}

fn mib_label(v: f64) -> String {
    if v >= 1024.0 {
        format!("{} GiB", num(v / 1024.0))
    } else {
        format!("{} MiB", num(v))
    }
}

/// A decade-aligned range around `lo..hi` for a log axis (ticks at powers of ten).
fn decades(lo: f64, hi: f64) -> std::ops::Range<f64> {
    let lo = lo.max(1e-6);
    let hi = hi.max(lo * 10.0);
    10f64.powf(lo.log10().floor())..10f64.powf(hi.log10().ceil())
}

/// A linear range from 0 to a bit above the largest value (at least `floor`).
fn upto(max: f64, floor: f64) -> std::ops::Range<f64> {
    0.0..(max * 1.15).max(floor)
}

/// The legend mark of run `i`: a short line in its colour.
fn line_legend(i: usize) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color(i).stroke_width(2))
}

/// Draws the series labels in a framed box at `position`.
fn draw_legend<'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    position: SeriesLabelPosition,
) -> anyhow::Result<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.5))
        .label_font(FONT)
        .position(position)
        .draw()?;
    Ok(())
}

fn svg_sized(
    size: (u32, u32),
    draw: impl FnOnce(DrawingArea<SVGBackend, plotters::coord::Shift>) -> anyhow::Result<()>,
) -> Svg {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE)?;
        draw(root.clone())?;
        root.present()?;
    }
    Ok(buf)
}

fn svg(
    draw: impl FnOnce(DrawingArea<SVGBackend, plotters::coord::Shift>) -> anyhow::Result<()>,
) -> Svg {
    svg_sized((860, 400), draw)
}

fn run_label(o: &RunOutput) -> String {
    format!("{}:{}", o.result.substrate, o.result.config)
}

/// Latency at percentile `p` (0..=100) of sorted values (nearest rank).
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Seed 000 Fig. 3 made comparable across runs of different length: each configuration's switch
/// latency against its percentile (log y), with the 250 ms mark.
fn switch_percentiles(outputs: &[RunOutput]) -> Svg {
    svg(|root| {
        let all: Vec<f64> = outputs
            .iter()
            .flat_map(|o| o.series.switches.iter().map(|s| s.latency_ms))
            .filter(|v| *v > 0.0)
            .collect();
        let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = all.iter().copied().fold(SWITCH_MARK_MS, f64::max);
        let y = decades(if lo.is_finite() { lo } else { 1.0 }, hi);
        let mut chart = ChartBuilder::on(&root)
            .caption("Tab-switch latency by percentile (seed 000 Fig. 3)", TITLE)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..100f64, y.clone().log_scale())?;
        chart
            .configure_mesh()
            .x_desc("percentile of the run's switches")
            .y_desc("switch latency")
            .x_label_formatter(&|v| pct_label(*v))
            .y_label_formatter(&|v| ms_label(*v))
            .label_style(FONT)
            .draw()?;
        mark_y(&mut chart, 0.0, 100.0, SWITCH_MARK_MS, "250 ms")?;
        for (i, o) in outputs.iter().enumerate() {
            let mut v: Vec<f64> = o
                .series
                .switches
                .iter()
                .map(|s| s.latency_ms.max(y.start))
                .collect();
            if v.is_empty() {
                continue;
            }
            v.sort_by(|a, b| a.total_cmp(b));
            let n = v.len() as f64;
            let pts: Vec<(f64, f64)> = v
                .iter()
                .enumerate()
                .map(|(k, &l)| (100.0 * (k as f64 + 1.0) / n, l))
                .collect();
            chart
                .draw_series(LineSeries::new(pts, color(i).stroke_width(2)))?
                .label(run_label(o))
                .legend(line_legend(i));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        Ok(())
    })
}

/// A dashed horizontal reference line at `y` from `x0` to `x1`, labelled.
fn mark_y<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    x0: f64,
    x1: f64,
    y: f64,
    label: &str,
) -> anyhow::Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let grey = RGBColor(90, 90, 90);
    chart.draw_series(DashedLineSeries::new(
        vec![(x0, y), (x1, y)],
        6,
        4,
        grey.stroke_width(1),
    ))?;
    chart.draw_series(std::iter::once(Text::new(
        label.to_string(),
        (x1, y),
        FONT.into_font()
            .color(&grey)
            .pos(Pos::new(HPos::Right, VPos::Bottom)),
    )))?;
    Ok(())
}

/// A dashed vertical reference line at `x` from `y0` to `y1`, labelled.
fn mark_x<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    x: f64,
    y0: f64,
    y1: f64,
    label: &str,
) -> anyhow::Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let grey = RGBColor(90, 90, 90);
    chart.draw_series(DashedLineSeries::new(
        vec![(x, y0), (x, y1)],
        6,
        4,
        grey.stroke_width(1),
    ))?;
    chart.draw_series(std::iter::once(Text::new(
        format!(" {label}"),
        (x, y1),
        FONT.into_font()
            .color(&grey)
            .pos(Pos::new(HPos::Left, VPos::Top)),
    )))?;
    Ok(())
}

/// Width of the tabs-open buckets of seed 000 Fig. 4.
const BUCKET: u32 = 20;

/// Switches grouped by tabs open: (bucket centre, sorted latencies) of the non-empty buckets.
fn buckets(o: &RunOutput) -> Vec<(f64, Vec<f64>)> {
    let mut by: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
    for s in &o.series.switches {
        by.entry(s.tabs_open / BUCKET)
            .or_default()
            .push(s.latency_ms);
    }
    by.into_iter()
        .map(|(b, mut v)| {
            v.sort_by(|a, b| a.total_cmp(b));
            ((b * BUCKET) as f64 + BUCKET as f64 / 2.0, v)
        })
        .collect()
}

fn max_tabs_axis(outputs: &[RunOutput]) -> f64 {
    let max_tabs = outputs
        .iter()
        .flat_map(|o| o.series.switches.iter().map(|s| s.tabs_open))
        .max()
        .unwrap_or(1);
    ((max_tabs / BUCKET + 1) * BUCKET) as f64
}

/// Seed 000 Fig. 4: share of switches over 250 ms per bucket of open tabs, y scaled to the data.
fn over_250_by_tabs(outputs: &[RunOutput]) -> Svg {
    svg(|root| {
        let series: Vec<Vec<(f64, f64)>> = outputs
            .iter()
            .map(|o| {
                buckets(o)
                    .into_iter()
                    .map(|(x, v)| {
                        let over = v.iter().filter(|l| **l > SWITCH_MARK_MS).count();
                        (x, 100.0 * over as f64 / v.len() as f64)
                    })
                    .collect()
            })
            .collect();
        let max = series.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Share of switches over 250 ms, by tabs open (seed 000 Fig. 4)",
                TITLE,
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..max_tabs_axis(outputs), upto(max, 1.0))?;
        chart
            .configure_mesh()
            .x_desc(format!("tabs open (buckets of {BUCKET})"))
            .y_desc("switches over 250 ms")
            .x_label_formatter(&|v| num(*v))
            .y_label_formatter(&|v| pct_label(*v))
            .label_style(FONT)
            .draw()?;
        for (i, (o, pts)) in outputs.iter().zip(series).enumerate() {
            chart
                .draw_series(LineSeries::new(pts.clone(), color(i).stroke_width(2)))?
                .label(run_label(o))
                .legend(line_legend(i));
            chart.draw_series(
                pts.into_iter()
                    .map(|p| Circle::new(p, 3, color(i).filled())),
            )?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        Ok(())
    })
}

/// Per bucket of open tabs, the median (solid, dots) and 99th percentile (thin, triangles) of
/// switch latency per configuration (log y), with the 250 ms mark.
fn bucket_percentiles(outputs: &[RunOutput]) -> Svg {
    svg(|root| {
        let series: Vec<Vec<(f64, f64, f64)>> = outputs
            .iter()
            .map(|o| {
                buckets(o)
                    .into_iter()
                    .map(|(x, v)| (x, percentile(&v, 50.0), percentile(&v, 99.0)))
                    .collect()
            })
            .collect();
        let lo = series
            .iter()
            .flatten()
            .map(|p| p.1)
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let hi = series
            .iter()
            .flatten()
            .map(|p| p.2)
            .fold(SWITCH_MARK_MS, f64::max);
        let y = decades(if lo.is_finite() { lo } else { 1.0 }, hi);
        let x_max = max_tabs_axis(outputs);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Switch latency per bucket of open tabs: median and 99th percentile",
                TITLE,
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..x_max, y.clone().log_scale())?;
        chart
            .configure_mesh()
            .x_desc(format!("tabs open (buckets of {BUCKET})"))
            .y_desc("switch latency")
            .x_label_formatter(&|v| num(*v))
            .y_label_formatter(&|v| ms_label(*v))
            .label_style(FONT)
            .draw()?;
        mark_y(&mut chart, 0.0, x_max, SWITCH_MARK_MS, "250 ms")?;
        for (i, (o, pts)) in outputs.iter().zip(series).enumerate() {
            let p50: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1.max(y.start))).collect();
            let p99: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.2.max(y.start))).collect();
            chart
                .draw_series(LineSeries::new(p50.clone(), color(i).stroke_width(2)))?
                .label(format!("{} p50", run_label(o)))
                .legend(line_legend(i));
            chart.draw_series(
                p50.into_iter()
                    .map(|p| Circle::new(p, 3, color(i).filled())),
            )?;
            let c = color(i);
            chart
                .draw_series(LineSeries::new(p99.clone(), c.mix(0.6).stroke_width(1)))?
                .label(format!("{} p99", run_label(o)))
                .legend(move |(x, y)| TriangleMarker::new((x + 8, y), 4, c.filled()));
            chart.draw_series(
                p99.into_iter()
                    .map(|p| TriangleMarker::new(p, 4, c.filled())),
            )?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        Ok(())
    })
}

/// Seed 000 Fig. 5: fault-latency distribution as a CDF, log x and y both scaled to the data,
/// with the 10 µs mark.
fn fault_cdf(outputs: &[RunOutput]) -> Svg {
    svg(|root| {
        let curves: Vec<Vec<(f64, f64)>> = outputs
            .iter()
            .map(|o| {
                let h = &o.series.fault_latency_us_hist;
                let total: u64 = h.iter().map(|b| b.1).sum();
                let mut acc = 0;
                h.iter()
                    .filter(|b| total > 0 && b.1 > 0)
                    .map(|&(u, c)| {
                        acc += c;
                        (u, 100.0 * acc as f64 / total as f64)
                    })
                    .collect()
            })
            .collect();
        let xs = curves.iter().flatten().map(|p| p.0).filter(|u| *u > 0.0);
        let lo = xs.clone().fold(f64::INFINITY, f64::min).min(FAULT_MARK_US);
        let hi = xs.fold(FAULT_MARK_US, f64::max);
        let x = decades(if lo.is_finite() { lo } else { 1.0 }, hi);
        // The y axis starts at the lowest first step of any curve, rounded down to 10 %.
        let y_lo = curves
            .iter()
            .filter_map(|c| c.first().map(|p| p.1))
            .fold(100.0, f64::min);
        let y_lo = ((y_lo / 10.0).floor() * 10.0).clamp(0.0, 90.0);
        let mut chart = ChartBuilder::on(&root)
            .caption("Page-fault latency, cumulative (seed 000 Fig. 5)", TITLE)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x.clone().log_scale(), y_lo..100.0)?;
        chart
            .configure_mesh()
            .x_desc("fault latency (log)")
            .y_desc("faults at or below")
            .x_label_formatter(&|v| us_label(*v))
            .y_label_formatter(&|v| pct_label(*v))
            .label_style(FONT)
            .draw()?;
        mark_x(&mut chart, FAULT_MARK_US, y_lo, 100.0, "10 µs")?;
        for (i, (o, pts)) in outputs.iter().zip(curves).enumerate() {
            if pts.is_empty() {
                continue;
            }
            let pts: Vec<(f64, f64)> = pts.into_iter().map(|(u, c)| (u.max(x.start), c)).collect();
            chart
                .draw_series(LineSeries::new(pts, color(i).stroke_width(2)))?
                .label(run_label(o))
                .legend(line_legend(i));
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        Ok(())
    })
}

/// Horizontal bars of one figure per run, in the run's colour, each labelled with its value.
/// `note(o)` is written after the bar (e.g. the energy terms a profile does not know); a run
/// with a note is drawn hatched-light: its bar is a lower bound.
fn bars(
    title: &str,
    unit: &str,
    outputs: &[RunOutput],
    value: impl Fn(&RunOutput) -> f64,
    fmt: impl Fn(f64) -> String,
    note: impl Fn(&RunOutput) -> Option<String>,
) -> Svg {
    let n = outputs.len().max(1);
    svg_sized((860, 80 + 38 * n as u32), |root| {
        let max = outputs.iter().map(&value).fold(0.0, f64::max);
        let has_notes = outputs.iter().any(|o| note(o).is_some());
        // Room to the right of the longest bar for its label (and a note).
        let x = upto(max * if has_notes { 1.8 } else { 1.2 }, 1e-9);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, TITLE)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(150)
            .build_cartesian_2d(x, (0..n).into_segmented())?;
        let names: Vec<String> = outputs.iter().map(run_label).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc(unit)
            .x_label_formatter(&|v| fmt(*v))
            .y_label_formatter(&|v| match v {
                // The first run at the top, as in the table.
                SegmentValue::CenterOf(i) if *i < n => names[n - 1 - *i].clone(),
                _ => String::new(),
            })
            .label_style(FONT)
            .draw()?;
        for (i, o) in outputs.iter().enumerate() {
            let v = value(o);
            let row = n - 1 - i;
            let note = note(o);
            let fill = if note.is_some() {
                color(i).mix(0.35).filled()
            } else {
                color(i).mix(0.85).filled()
            };
            chart.draw_series(std::iter::once(Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(row)),
                    (v, SegmentValue::Exact(row + 1)),
                ],
                fill,
            )))?;
            let text = match note {
                Some(n) => format!(" {} + unknown: {n}", fmt(v)),
                None => format!(" {}", fmt(v)),
            };
            chart.draw_series(std::iter::once(Text::new(
                text,
                (v, SegmentValue::CenterOf(row)),
                FONT.into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            )))?;
        }
        Ok(())
    })
}

/// The headline of seed 000 §5: tabs open before the first discard, per configuration.
fn tabs_bars(outputs: &[RunOutput]) -> Svg {
    bars(
        "Tabs open before the first discard (seed 000 §5)",
        "tabs",
        outputs,
        |o| o.result.tabs_opened as f64,
        num,
        |_| None,
    )
}

/// The energy terms a run's profiles do not know, or None when all are known.
fn unknown_energy(o: &RunOutput) -> Option<String> {
    let terms: Vec<String> = o
        .result
        .extra
        .get("energy_unknown_terms")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    (!terms.is_empty()).then(|| terms.join(", "))
}

/// CPU time split per run (seed 000 Fig. 9 totals): user, kernel, iowait as stacked bars.
fn cpu_split(outputs: &[RunOutput]) -> Svg {
    let n = outputs.len().max(1);
    svg_sized((860, 90 + 38 * n as u32), |root| {
        let get = |o: &RunOutput, k: &str| {
            o.result
                .extra
                .get(k)
                .and_then(|v| v.as_f64())
                .unwrap_or(0.0)
        };
        let max = outputs
            .iter()
            .map(|o| get(o, "cpu_user_s") + get(o, "cpu_kernel_s") + get(o, "cpu_iowait_s"))
            .fold(0.0, f64::max);
        let mut chart = ChartBuilder::on(&root)
            .caption("CPU time: user / kernel / iowait (seed 000 Fig. 9)", TITLE)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(150)
            .build_cartesian_2d(upto(max * 1.25, 1e-9), (0..n).into_segmented())?;
        let names: Vec<String> = outputs.iter().map(run_label).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("CPU time")
            .x_label_formatter(&|v| format!("{} s", num(*v)))
            .y_label_formatter(&|v| match v {
                // The first run at the top, as in the table.
                SegmentValue::CenterOf(i) if *i < n => names[n - 1 - *i].clone(),
                _ => String::new(),
            })
            .label_style(FONT)
            .draw()?;
        let parts = [
            ("user", "cpu_user_s", color(0)),
            ("kernel", "cpu_kernel_s", color(3)),
            ("iowait", "cpu_iowait_s", color(1)),
        ];
        for (pi, (label, key, c)) in parts.iter().enumerate() {
            let series = outputs.iter().enumerate().map(|(i, o)| {
                let start: f64 = parts[..pi].iter().map(|p| get(o, p.1)).sum();
                Rectangle::new(
                    [
                        (start, SegmentValue::Exact(n - 1 - i)),
                        (start + get(o, key), SegmentValue::Exact(n - i)),
                    ],
                    c.mix(0.8).filled(),
                )
            });
            let c = *c;
            chart
                .draw_series(series)?
                .label(*label)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        Ok(())
    })
}

/// A line per run of a percentage over virtual time, from consecutive timeline samples: `share`
/// turns the samples at the start and end of an interval into a percentage, or None to skip it.
/// Runs for which `include` is false are left out (their colours stay those of the table). The
/// y axis spans the data's range, widened to whole tens.
fn percent_over_time(
    outputs: &[RunOutput],
    caption: &str,
    y_desc: &str,
    include: impl Fn(&RunOutput) -> bool,
    share: impl Fn(&TimelineSample, &TimelineSample) -> Option<f64>,
) -> Svg {
    svg(|root| {
        #[allow(clippy::type_complexity)] // (run index, run, points): local to this chart
        let series: Vec<(usize, &RunOutput, Vec<(f64, f64)>)> = outputs
            .iter()
            .enumerate()
            .filter(|(_, o)| include(o))
            .map(|(i, o)| {
                let pts = o
                    .series
                    .timeline
                    .windows(2)
                    .filter_map(|w| share(&w[0], &w[1]).map(|v| (w[1].t_s, v.clamp(0.0, 100.0))))
                    .collect();
                (i, o, pts)
            })
            .collect();
        let t_max = series
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.0))
            .fold(1.0, f64::max);
        let lo = series
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.1))
            .fold(100.0, f64::min);
        let hi = series
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        let (y0, y1) = if hi < lo {
            (0.0, 100.0)
        } else {
            (
                ((lo / 10.0).floor() * 10.0).max(0.0),
                ((hi / 10.0).ceil() * 10.0).clamp(10.0, 100.0),
            )
        };
        let y1 = if y1 <= y0 { (y0 + 10.0).min(100.0) } else { y1 };
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, TITLE)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..t_max, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc("time since the start (virtual for sim, wall for live and linux)")
            .y_desc(y_desc)
            .x_label_formatter(&|v| format!("{} s", num(*v)))
            .y_label_formatter(&|v| pct_label(*v))
            .label_style(FONT)
            .draw()?;
        for (i, o, pts) in series {
            chart
                .draw_series(LineSeries::new(pts, color(i).stroke_width(2)))?
                .label(run_label(o))
                .legend(line_legend(i));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        Ok(())
    })
}

/// Seed 000 Fig. 9 over time: within each timeline interval, the share of all CPUs' time spent
/// in the kernel (faults, compression, reclaim, block layer) and waiting for I/O.
fn cpu_over_time(outputs: &[RunOutput]) -> Svg {
    percent_over_time(
        outputs,
        "Kernel + iowait share of CPU time over time (seed 000 Fig. 9)",
        "kernel + iowait, of all CPUs",
        |_| true,
        |a, b| {
            let kernel = (b.cpu_kernel_s - a.cpu_kernel_s) + (b.cpu_iowait_s - a.cpu_iowait_s);
            let all = kernel + (b.cpu_user_s - a.cpu_user_s) + (b.cpu_idle_s - a.cpu_idle_s);
            (all > 0.0).then(|| 100.0 * kernel / all)
        },
    )
}

/// Seed 000's zswap analysis over time: the hit rate of swap-ins within each timeline interval,
/// for the runs that have a zswap pool.
fn zswap_hits_over_time(outputs: &[RunOutput]) -> Svg {
    percent_over_time(
        outputs,
        "zswap hit rate over time",
        "swap-ins served by the pool",
        |o| o.result.zswap_hit_rate.is_some(),
        |a, b| {
            let hits = b.zswap_hits.saturating_sub(a.zswap_hits);
            let misses = b.zswap_misses.saturating_sub(a.zswap_misses);
            (hits + misses > 0).then(|| 100.0 * hits as f64 / (hits + misses) as f64)
        },
    )
}

/// One small chart per relaunch category (seed 001 Fig. 13/14 split by category): a bar per
/// configuration on a log axis (relaunch delays span 0.2 to 30 s), one legend for all.
fn relaunch_small_multiples(
    title: &str,
    rows: &[RelaunchRow],
    value: impl Fn(&RelaunchRow) -> f64,
    log: bool,
    fmt: impl Fn(f64) -> String,
) -> Svg {
    let mut configs: Vec<String> = Vec::new();
    let mut categories: Vec<String> = Vec::new();
    for r in rows {
        if !configs.contains(&r.name) {
            configs.push(r.name.clone());
        }
        if !categories.contains(&r.category) {
            categories.push(r.category.clone());
        }
    }
    let cols = 3usize;
    let grid_rows = categories.len().div_ceil(cols).max(1);
    let cell_h = 60 + 24 * configs.len() as u32;
    let height = 70 + grid_rows as u32 * cell_h;
    svg_sized((900, height), |root| {
        let (top, body) = root.split_vertically(70);
        top.draw(&Text::new(title.to_string(), (10, 8), TITLE.into_font()))?;
        // The legend: one swatch per configuration, in the bars' colours.
        for (i, c) in configs.iter().enumerate() {
            let x = 10 + (i as i32 % 5) * 175;
            let y = 36 + (i as i32 / 5) * 18;
            top.draw(&Rectangle::new(
                [(x, y), (x + 14, y + 12)],
                color(i).filled(),
            ))?;
            top.draw(&Text::new(c.clone(), (x + 20, y), FONT.into_font()))?;
        }
        let all: Vec<f64> = rows.iter().map(&value).filter(|v| *v > 0.0).collect();
        let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = all.iter().copied().fold(0.0, f64::max);
        let range = if log {
            decades(if lo.is_finite() { lo } else { 1.0 }, hi.max(1e-9))
        } else {
            upto(hi, 1.0)
        };
        let cells = body.split_evenly((grid_rows, cols));
        for (cell, cat) in cells.iter().zip(&categories) {
            let mine: Vec<&RelaunchRow> = rows.iter().filter(|r| &r.category == cat).collect();
            let n = configs.len();
            let mut b = ChartBuilder::on(cell);
            b.caption(cat, FONT)
                .margin(8)
                .x_label_area_size(24)
                .y_label_area_size(10);
            if log {
                let mut chart =
                    b.build_cartesian_2d(range.clone().log_scale(), (0..n).into_segmented())?;
                chart
                    .configure_mesh()
                    .disable_y_mesh()
                    .y_labels(n + 1)
                    .y_label_formatter(&|_| String::new())
                    .x_labels(4)
                    .x_label_formatter(&|v| fmt(*v))
                    .label_style(("sans-serif", 11))
                    .draw()?;
                for r in &mine {
                    let i = configs.iter().position(|c| c == &r.name).unwrap_or(0);
                    let v = value(r).max(range.start);
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [
                            (range.start, SegmentValue::Exact(i)),
                            (v, SegmentValue::Exact(i + 1)),
                        ],
                        color(i).mix(0.85).filled(),
                    )))?;
                }
            } else {
                let mut chart = b.build_cartesian_2d(range.clone(), (0..n).into_segmented())?;
                chart
                    .configure_mesh()
                    .disable_y_mesh()
                    .y_labels(n + 1)
                    .y_label_formatter(&|_| String::new())
                    .x_labels(4)
                    .x_label_formatter(&|v| fmt(*v))
                    .label_style(("sans-serif", 11))
                    .draw()?;
                for r in &mine {
                    let i = configs.iter().position(|c| c == &r.name).unwrap_or(0);
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [
                            (0.0, SegmentValue::Exact(i)),
                            (value(r), SegmentValue::Exact(i + 1)),
                        ],
                        color(i).mix(0.85).filled(),
                    )))?;
                }
            }
        }
        Ok(())
    })
}

pub(super) fn pressure(report: &RunsReport, outputs: &[RunOutput]) -> anyhow::Result<String> {
    let mut h = String::new();
    page_start(&mut h, "nvmswap pressure report")?;
    writeln!(h, "<h1>Memory-capacity pressure test</h1><p>seed {}, {} run(s). Every number below comes from this run; results.json holds them all.</p>", report.seed, report.runs.len())?;
    writeln!(h, "<table><tr><th>substrate</th><th>config</th><th>tabs before first discard</th><th>switch mean ms</th><th>p50</th><th>p95</th><th>p99</th><th>&gt;250 ms</th><th>faults</th><th>&lt;10 µs</th><th>swap in MiB</th><th>swap out MiB</th><th>zswap hit</th><th>energy J</th><th>NVM writes</th><th>wear max/mean</th></tr>")?;
    for r in &report.runs {
        let s = &r.switch_latency_ms;
        writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}%</td><td>{}</td><td>{:.1}%</td><td>{:.0}</td><td>{:.0}</td><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td></tr>",
            r.substrate, r.config, r.tabs_opened, s.mean, s.p50, s.p95, s.p99,
            100.0 * r.switch_over_250ms_share, r.faults, 100.0 * r.fault_under_10us_share,
            r.swap_in_bytes as f64 / 1048576.0, r.swap_out_bytes as f64 / 1048576.0,
            r.zswap_hit_rate.map_or("-".into(), |x| format!("{:.0}%", 100.0 * x)),
            r.energy_j, r.nvm_writes, r.wear_max_over_mean.map_or("-".into(), |w| format!("{w:.3}"))
        )?;
    }
    writeln!(h, "</table>")?;
    let figures: Vec<(Svg, &str)> = vec![
        (tabs_bars(outputs), "The headline: how many tabs each configuration holds before Chrome discards the first one (more is better)."),
        (switch_percentiles(outputs), "Each configuration's tab switches against their percentile, so runs with different numbers of switches compare point for point; the right end is the tail a user feels. The dashed line is seed 000's 250 ms tolerable limit (§2.2)."),
        (bucket_percentiles(outputs), "Median (dots) and 99th percentile (triangles) of switch latency as more tabs are open."),
        (over_250_by_tabs(outputs), "How often a switch takes longer than 250 ms (the tolerable limit, seed 000 §2.2) as more tabs are open."),
        (fault_cdf(outputs), "Every page fault, demand-zero ones included. The further left a curve rises, the cheaper faults are; the dashed line is seed 000's 10 µs yardstick (§4.2)."),
        (cpu_split(outputs), "Where CPU time went: rendering (user), faults, compression and reclaim (kernel), waiting for the swap device (iowait)."),
        (cpu_over_time(outputs), "The same split over time: per 5 s interval, the share of all CPUs' time the kernel took (faults, compression, reclaim, block layer) or spent waiting for the swap device. It rises as memory fills."),
        (zswap_hits_over_time(outputs), "Per timeline interval, the share of swap-ins the zswap pool served (configurations with zswap only; seed 000 §4.2 reports about 97 %)."),
        (bars("Energy of memory and swap device", "energy", outputs, |o| o.result.energy_j, |v| format!("{} J", num(v)), unknown_energy), "DRAM standby, refresh and accesses plus the swap device's standby and accesses. A pale bar is a lower bound: the terms named after it are unknown for its device profile (results.json: energy_unknown_terms), so it cannot be compared with a full bar."),
        (bars("Swap traffic: pages swapped out", "swapped out", outputs, |o| o.result.swap_out_bytes as f64 / 1048576.0, mib_label, |_| None), "Bytes moved out of DRAM to the pool or the swap device."),
        (bars("Swap traffic: pages swapped in", "swapped in", outputs, |o| o.result.swap_in_bytes as f64 / 1048576.0, mib_label, |_| None), "Bytes brought back, read-ahead included."),
    ];
    page_end(h, figures)
}
