//! report.html: a self-contained page with the plots drawn as inline SVG.

use std::fmt::Write as _;

use nvmswap_core::results::{RunOutput, RunsReport, TimelineSample};
use plotters::prelude::*;

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
    for (svg, caption) in figures {
        writeln!(
            h,
            "<figure>{}<figcaption>{caption}</figcaption></figure>",
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
        (bars("Relaunch delay (mean over all relaunches)", "ms", outputs, |o| relaunch_row(o).relaunch_ms), "Seed 001 Fig. 13: the time from bringing an app to the foreground until its memory is back and its relaunch work done; a killed app starts from nothing."),
        (bars("Execution time of the foreground operation", "ms", outputs, |o| relaunch_row(o).execute_ms), "Seed 001 Fig. 14: an operation that allocates and writes memory while the phone is under pressure, so its allocations reclaim."),
        (bars("Apps found killed", "relaunches", outputs, |o| relaunch_row(o).kills as f64), "Relaunches that found the app discarded (seed 001 Fig. 1's terminations)."),
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
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(position)
        .draw()?;
    Ok(())
}

fn svg(
    draw: impl FnOnce(DrawingArea<SVGBackend, plotters::coord::Shift>) -> anyhow::Result<()>,
) -> Svg {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (860, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        draw(root.clone())?;
        root.present()?;
    }
    Ok(buf)
}

/// Seed 000 Fig. 3: every switch's latency, sorted, per configuration (log scale).
fn sorted_switches(outputs: &[RunOutput]) -> Svg {
    svg(|root| {
        let n = outputs
            .iter()
            .map(|o| o.series.switches.len())
            .max()
            .unwrap_or(1)
            .max(1);
        let max = outputs
            .iter()
            .flat_map(|o| o.series.switches.iter().map(|s| s.latency_ms))
            .fold(1.0, f64::max);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Tab-switch latency, sorted (seed 000 Fig. 3)",
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..n as f64, (0.1f64..max * 1.5).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("switch (sorted)")
            .y_desc("latency (ms)")
            .draw()?;
        for (i, o) in outputs.iter().enumerate() {
            let mut v: Vec<f64> = o
                .series
                .switches
                .iter()
                .map(|s| s.latency_ms.max(0.1))
                .collect();
            v.sort_by(|a, b| a.total_cmp(b));
            chart
                .draw_series(LineSeries::new(
                    v.into_iter().enumerate().map(|(x, y)| (x as f64, y)),
                    color(i).stroke_width(2),
                ))?
                .label(o.result.config.clone())
                .legend(line_legend(i));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        Ok(())
    })
}

/// A line per run of a percentage over virtual time, from consecutive timeline samples: `share`
/// turns the samples at the start and end of an interval into a percentage, or None to skip it.
/// Runs for which `include` is false are left out (their colours stay those of the table).
fn percent_over_time(
    outputs: &[RunOutput],
    caption: &str,
    y_desc: &str,
    include: impl Fn(&RunOutput) -> bool,
    share: impl Fn(&TimelineSample, &TimelineSample) -> Option<f64>,
) -> Svg {
    svg(|root| {
        let t_max = outputs
            .iter()
            .filter_map(|o| o.series.timeline.last().map(|s| s.t_s))
            .fold(1.0, f64::max);
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..t_max, 0f64..100f64)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc(y_desc)
            .draw()?;
        for (i, o) in outputs.iter().enumerate().filter(|(_, o)| include(o)) {
            let points: Vec<(f64, f64)> = o
                .series
                .timeline
                .windows(2)
                .filter_map(|w| share(&w[0], &w[1]).map(|v| (w[1].t_s, v.clamp(0.0, 100.0))))
                .collect();
            chart
                .draw_series(LineSeries::new(points, color(i).stroke_width(2)))?
                .label(format!("{}:{}", o.result.substrate, o.result.config))
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
        "kernel + iowait (% of all CPUs)",
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
        "swap-ins served by the pool (%)",
        |o| o.result.zswap_hit_rate.is_some(),
        |a, b| {
            let hits = b.zswap_hits.saturating_sub(a.zswap_hits);
            let misses = b.zswap_misses.saturating_sub(a.zswap_misses);
            (hits + misses > 0).then(|| 100.0 * hits as f64 / (hits + misses) as f64)
        },
    )
}

/// Seed 000 Fig. 4: share of switches over 250 ms per bucket of open tabs.
fn over_250_by_tabs(outputs: &[RunOutput]) -> Svg {
    const BUCKET: u32 = 20;
    svg(|root| {
        let max_tabs = outputs
            .iter()
            .flat_map(|o| o.series.switches.iter().map(|s| s.tabs_open))
            .max()
            .unwrap_or(1);
        let buckets = max_tabs / BUCKET + 1;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Share of switches over 250 ms, by tabs open (seed 000 Fig. 4)",
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..(buckets * BUCKET) as f64, 0f64..1.0)?;
        chart
            .configure_mesh()
            .x_desc("tabs open (buckets of 20)")
            .y_desc("share > 250 ms")
            .draw()?;
        for (i, o) in outputs.iter().enumerate() {
            let mut pts = Vec::new();
            for b in 0..buckets {
                let in_b: Vec<_> = o
                    .series
                    .switches
                    .iter()
                    .filter(|s| s.tabs_open / BUCKET == b)
                    .collect();
                if !in_b.is_empty() {
                    let over = in_b.iter().filter(|s| s.latency_ms > 250.0).count() as f64
                        / in_b.len() as f64;
                    pts.push(((b * BUCKET) as f64 + BUCKET as f64 / 2.0, over));
                }
            }
            chart
                .draw_series(LineSeries::new(pts.clone(), color(i).stroke_width(2)))?
                .label(o.result.config.clone())
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

/// Seed 000 Fig. 5: fault-latency distribution as a CDF (log x).
fn fault_cdf(outputs: &[RunOutput]) -> Svg {
    svg(|root| {
        let max = outputs
            .iter()
            .flat_map(|o| o.series.fault_latency_us_hist.iter().map(|b| b.0))
            .fold(10.0, f64::max);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Page-fault latency, cumulative (seed 000 Fig. 5)",
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d((0.5f64..max * 1.2).log_scale(), 0f64..1.0)?;
        chart
            .configure_mesh()
            .x_desc("fault latency (us)")
            .y_desc("share of faults at or below")
            .draw()?;
        for (i, o) in outputs.iter().enumerate() {
            let total: u64 = o.series.fault_latency_us_hist.iter().map(|b| b.1).sum();
            if total == 0 {
                continue;
            }
            let mut acc = 0;
            let pts: Vec<(f64, f64)> = o
                .series
                .fault_latency_us_hist
                .iter()
                .map(|&(u, c)| {
                    acc += c;
                    (u.max(0.5), acc as f64 / total as f64)
                })
                .collect();
            chart
                .draw_series(LineSeries::new(pts, color(i).stroke_width(2)))?
                .label(o.result.config.clone())
                .legend(line_legend(i));
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        Ok(())
    })
}

/// Horizontal bars of one figure per run, in the configuration's colour.
fn bars(title: &str, unit: &str, outputs: &[RunOutput], value: impl Fn(&RunOutput) -> f64) -> Svg {
    svg(|root| {
        let n = outputs.len().max(1);
        let max = outputs.iter().map(&value).fold(1e-9, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(130)
            .build_cartesian_2d(0f64..max, (0..n).into_segmented())?;
        let names: Vec<String> = outputs.iter().map(|o| o.result.config.clone()).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc(unit)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .draw()?;
        for (i, o) in outputs.iter().enumerate() {
            let v = value(o);
            chart.draw_series(std::iter::once(Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(i)),
                    (v, SegmentValue::Exact(i + 1)),
                ],
                color(i).mix(0.8).filled(),
            )))?;
        }
        Ok(())
    })
}

/// CPU time split per run (seed 000 Fig. 9 totals): user, kernel, iowait as stacked bars.
fn cpu_split(outputs: &[RunOutput]) -> Svg {
    svg(|root| {
        let get = |o: &RunOutput, k: &str| {
            o.result
                .extra
                .get(k)
                .and_then(|v| v.as_f64())
                .unwrap_or(0.0)
        };
        let n = outputs.len().max(1);
        let max = outputs
            .iter()
            .map(|o| get(o, "cpu_user_s") + get(o, "cpu_kernel_s") + get(o, "cpu_iowait_s"))
            .fold(1e-9, f64::max)
            * 1.15;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "CPU time: user / kernel / iowait (seed 000 Fig. 9)",
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(130)
            .build_cartesian_2d(0f64..max, (0..n).into_segmented())?;
        let names: Vec<String> = outputs.iter().map(|o| o.result.config.clone()).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("seconds")
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
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
                        (start, SegmentValue::Exact(i)),
                        (start + get(o, key), SegmentValue::Exact(i + 1)),
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
        (sorted_switches(outputs), "Each configuration's tab switches sorted by latency. Look at where the curves cross and at the right end: the tail a user feels."),
        (over_250_by_tabs(outputs), "How often a switch takes longer than 250 ms (the tolerable limit, seed 000 §2.2) as more tabs are open."),
        (fault_cdf(outputs), "Every page fault, demand-zero ones included. The further left a curve rises, the cheaper faults are; the 10 µs mark is seed 000's yardstick."),
        (cpu_split(outputs), "Where CPU time went: rendering (user), faults, compression and reclaim (kernel), waiting for the swap device (iowait)."),
        (cpu_over_time(outputs), "The same split over time: per 5 s interval, the share of all CPUs' time the kernel took (faults, compression, reclaim, block layer) or spent waiting for the swap device. It rises as memory fills."),
        (zswap_hits_over_time(outputs), "Per timeline interval, the share of swap-ins the zswap pool served (configurations with zswap only; seed 000 §4.2 reports about 97 %)."),
        (bars("Energy of memory and swap device", "joules", outputs, |o| o.result.energy_j), "DRAM standby, refresh and accesses plus the swap device's standby and accesses; terms a profile does not know are listed per run in results.json (energy_unknown_terms)."),
        (bars("Swap traffic: pages swapped out", "MiB", outputs, |o| o.result.swap_out_bytes as f64 / 1048576.0), "Bytes moved out of DRAM to the pool or the swap device."),
        (bars("Swap traffic: pages swapped in", "MiB", outputs, |o| o.result.swap_in_bytes as f64 / 1048576.0), "Bytes brought back, read-ahead included."),
    ];
    page_end(h, figures)
}
