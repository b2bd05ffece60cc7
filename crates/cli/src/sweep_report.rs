//! The sweep's summary over seeds (mean and 95 % interval) and its report: for every swept field
//! with more than one value, a figure per metric of the mean against that field, one line per
//! combination of the other swept fields, with the 95 % interval as a bar at each point.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use nvmswap_sim::sweep::Grid;
use plotters::prelude::*;

use crate::cmd::sweep::Stored;

/// Two-sided 95 % quantile of Student's t with `df` degrees of freedom (standard table values).
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        d if d <= 30 => T[d - 1],
        _ => 1.960,
    }
}

/// One swept combination and metric, over its seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    pub values: Vec<String>,
    pub metric: String,
    pub n: usize,
    pub mean: f64,
    /// Half-width of the 95 % interval of the mean (t-distribution); NaN with one seed.
    pub ci95: f64,
}

/// Mean and 95 % interval over seeds, in the order the combinations first appear.
pub fn summarise(swept: &[String], stored: &[Stored]) -> Vec<SummaryRow> {
    let mut groups: Vec<(Vec<String>, String, Vec<f64>)> = Vec::new();
    for s in stored {
        let values: Vec<String> = swept
            .iter()
            .map(|f| s.point.swept.get(f).cloned().unwrap_or_default())
            .collect();
        for (metric, v) in &s.metrics {
            match groups
                .iter_mut()
                .find(|(vals, m, _)| *vals == values && m == metric)
            {
                Some(g) => g.2.push(*v),
                None => groups.push((values.clone(), metric.clone(), vec![*v])),
            }
        }
    }
    groups
        .into_iter()
        .map(|(values, metric, xs)| {
            let n = xs.len();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let ci95 = if n > 1 {
                let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
                t975(n - 1) * (var / n as f64).sqrt()
            } else {
                f64::NAN
            };
            SummaryRow {
                values,
                metric,
                n,
                mean,
                ci95,
            }
        })
        .collect()
}

pub fn write_summary(path: &Path, swept: &[String], rows: &[SummaryRow]) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(path).with_context(|| format!("{}", path.display()))?;
    let mut header: Vec<String> = swept.to_vec();
    header.extend(["metric", "seeds", "mean", "ci95"].map(String::from));
    w.write_record(&header)?;
    for r in rows {
        let mut rec = r.values.clone();
        rec.push(r.metric.clone());
        rec.push(r.n.to_string());
        rec.push(r.mean.to_string());
        rec.push(r.ci95.to_string());
        w.write_record(&rec)?;
    }
    w.flush()?;
    Ok(())
}

fn default_metrics(workload: &str) -> Vec<&'static str> {
    match workload {
        "relaunch" => vec![
            "relaunch_ms",
            "execute_ms",
            "memory_copies",
            "kills",
            "cost_usd",
        ],
        "wear" => vec![
            "exchanges",
            "exchange_share",
            "average_write_us",
            "max_over_mean",
        ],
        _ => vec![
            "tabs_opened",
            "switch_ms_mean",
            "switch_ms_p99",
            "switch_over_250ms_share",
            "swap_traffic_mb",
            "energy_j",
        ],
    }
}

/// report.html and one SVG per figure.
pub fn write_report(
    out: &Path,
    grid: &Grid,
    swept: &[String],
    rows: &[SummaryRow],
) -> anyhow::Result<()> {
    let metrics: Vec<String> = if grid.plot.is_empty() {
        default_metrics(&grid.workload)
            .into_iter()
            .map(String::from)
            .collect()
    } else {
        grid.plot.clone()
    };
    let mut h = String::new();
    writeln!(
        h,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>sweep {}</title></head><body>",
        grid.name
    )?;
    writeln!(
        h,
        "<h1>Sweep {}</h1><p>{}</p><p>workload {}, seeds {:?}, scale {}. Points: mean over seeds; bars: 95 % interval of the mean (t-distribution).</p>",
        grid.name, grid.description, grid.workload, grid.seeds, grid.scale
    )?;
    for (fi, field) in swept.iter().enumerate() {
        let mut xs: Vec<String> = Vec::new();
        for r in rows {
            if !xs.contains(&r.values[fi]) {
                xs.push(r.values[fi].clone());
            }
        }
        if xs.len() < 2 && swept.len() > 1 {
            continue;
        }
        for metric in &metrics {
            let mine: Vec<&SummaryRow> = rows.iter().filter(|r| &r.metric == metric).collect();
            if mine.is_empty() {
                continue;
            }
            let name = format!("{}-vs-{}.svg", metric, field.replace(['.', '/'], "_"));
            let svg = figure(field, fi, &xs, metric, &mine)?;
            std::fs::write(out.join(&name), &svg)?;
            writeln!(
                h,
                "<figure>{svg}<figcaption>{metric} against {field}</figcaption></figure>"
            )?;
        }
    }
    writeln!(h, "</body></html>")?;
    std::fs::write(out.join("report.html"), h)?;
    Ok(())
}

fn figure(
    field: &str,
    fi: usize,
    xs: &[String],
    metric: &str,
    rows: &[&SummaryRow],
) -> anyhow::Result<String> {
    // One line per combination of the other swept fields.
    let mut series: Vec<Vec<String>> = Vec::new();
    for r in rows {
        let mut other = r.values.clone();
        other.remove(fi);
        if !series.contains(&other) {
            series.push(other);
        }
    }
    let ymax = rows
        .iter()
        .map(|r| r.mean + if r.ci95.is_finite() { r.ci95 } else { 0.0 })
        .fold(0.0, f64::max);
    let ymin = rows
        .iter()
        .map(|r| r.mean - if r.ci95.is_finite() { r.ci95 } else { 0.0 })
        .fold(0.0, f64::min);
    let top = if ymax > ymin { ymax * 1.1 } else { ymin + 1.0 };
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (760, 380)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{metric} vs {field}"), ("sans-serif", 17))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(65)
            .build_cartesian_2d(-0.5f64..xs.len() as f64 - 0.5, ymin..top)?;
        chart
            .configure_mesh()
            .x_labels(xs.len())
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < xs.len() {
                    xs[i as usize].clone()
                } else {
                    String::new()
                }
            })
            .x_desc(field)
            .y_desc(metric)
            .draw()?;
        for (si, other) in series.iter().enumerate() {
            let colour = Palette99::pick(si).to_rgba();
            let mut pts = Vec::new();
            for r in rows {
                let mut o = r.values.clone();
                let x = o.remove(fi);
                if &o == other {
                    let xi = xs.iter().position(|v| *v == x).unwrap_or(0) as f64;
                    pts.push((xi, r.mean, r.ci95));
                }
            }
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let label = if other.is_empty() {
                "mean".to_string()
            } else {
                other.join(", ")
            };
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|p| (p.0, p.1)),
                    colour.stroke_width(2),
                ))?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2))
                });
            chart.draw_series(
                pts.iter()
                    .map(|p| Circle::new((p.0, p.1), 3, colour.filled())),
            )?;
            chart.draw_series(pts.iter().filter(|p| p.2.is_finite()).map(|p| {
                PathElement::new(
                    vec![(p.0, p.1 - p.2), (p.0, p.1 + p.2)],
                    colour.stroke_width(1),
                )
            }))?;
        }
        if series.len() > 1 || !series[0].is_empty() {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()?;
        }
        root.present()?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_uses_students_t() {
        assert_eq!(t975(1), 12.706);
        assert_eq!(t975(100), 1.96);
        assert!(t975(0).is_nan());
    }
}
