//! report.html parsed as a browser parses it (html5ever, through scraper): valid HTML, every
//! chart present with its title, axes and caption, tick labels without float noise.

mod common;

use common::{nvmswap, scratch};
use scraper::{Html, Selector};

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

/// Parses `path` and checks it: no parse errors, `charts` figures each with one SVG that has
/// text and shapes, and a caption; returns the texts of every SVG.
fn check_report(path: &str, charts: usize) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = Html::parse_document(&text);
    assert!(
        doc.errors.is_empty(),
        "{path}: HTML parse errors {:?}",
        doc.errors
    );
    let figures: Vec<_> = doc.select(&sel("figure.chart")).collect();
    assert_eq!(figures.len(), charts, "{path}: figures");
    let mut texts = Vec::new();
    for (i, fig) in figures.iter().enumerate() {
        assert_eq!(
            fig.value().attr("id"),
            Some(format!("figure-{}", i + 1).as_str())
        );
        let svgs: Vec<_> = fig.select(&sel("svg")).collect();
        assert_eq!(svgs.len(), 1, "figure {i}: one chart");
        let svg = svgs[0];
        let shapes = svg
            .select(&sel("rect, polyline, path, circle, line"))
            .count();
        assert!(shapes > 3, "figure {i}: {shapes} shapes");
        let t: Vec<String> = svg
            .select(&sel("text"))
            .map(|t| t.text().collect::<String>().trim().to_string())
            .collect();
        assert!(t.len() > 4, "figure {i}: texts {t:?}");
        let caption: String = fig
            .select(&sel("figcaption"))
            .flat_map(|c| c.text())
            .collect();
        assert!(caption.len() > 20, "figure {i}: caption {caption:?}");
        texts.extend(t);
    }
    for t in &texts {
        // "1000000.0" and its kin: a tick label is a formatted number with a unit.
        let t = t.trim();
        assert!(
            !(t.ends_with(".0") && t.chars().all(|c| c.is_ascii_digit() || c == '.')),
            "{path}: raw float label {t:?}"
        );
    }
    texts
}

#[test]
fn the_pressure_report_is_valid_html_with_every_chart() {
    let out = scratch("report", "pressure");
    let o = nvmswap(&[
        "pressure",
        "--config",
        "optane,baseline-zram",
        "--scale",
        "0.1",
        "--out",
        &out,
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let texts = check_report(&format!("{out}/report.html"), 11);
    for wanted in [
        "Tabs open before the first discard (seed 000 §5)",
        "Tab-switch latency by percentile (seed 000 Fig. 3)",
        "250 ms",
        "10 µs",
        "sim:optane",
        "sim:baseline-zram",
    ] {
        assert!(
            texts.iter().any(|t| t == wanted),
            "no {wanted:?} in {texts:?}"
        );
    }
    // Units on the axes' ticks.
    assert!(texts.iter().any(|t| t.ends_with(" ms")));
    assert!(texts.iter().any(|t| t.ends_with(" µs")));
    assert!(texts.iter().any(|t| t.ends_with(" %")));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_relaunch_report_draws_one_chart_per_category_with_a_legend() {
    let out = scratch("report", "relaunch");
    let o = nvmswap(&[
        "relaunch",
        "--config",
        "nand,nvm-swap",
        "--category",
        "social,news",
        "--rounds",
        "2",
        "--foreground-s",
        "1",
        "--out",
        &out,
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let texts = check_report(&format!("{out}/report.html"), 3);
    for wanted in ["social", "news"] {
        assert!(
            texts.iter().any(|t| t == wanted),
            "no {wanted:?} in {texts:?}"
        );
    }
    for wanted in ["nand", "nvm-swap"] {
        assert!(
            texts.iter().any(|t| t.starts_with(wanted)),
            "no {wanted:?} legend in {texts:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}
