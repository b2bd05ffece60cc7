//! `nvmswap workload measure`: the tab model measured on real Chromium (root), written as a
//! bundled profile (profiles/workloads/chromium-measured.toml by default).

use std::path::PathBuf;

use anyhow::Context;

use crate::progress::Bar;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand, Debug)]
enum What {
    /// Run the generated pages in Chromium and measure per page kind: footprint over time,
    /// pages touched by a switch and by background activity, write share, how the touched set
    /// moves, compressibility (lzo-rle, lz4), same-filled share, load and render CPU. Root.
    Measure(MeasureArgs),
}

#[derive(clap::Args, Debug)]
struct MeasureArgs {
    /// Where the profile goes.
    #[arg(long, default_value = "profiles/workloads/chromium-measured.toml")]
    out: PathBuf,
    /// Scale of the pages' data (1 = full size).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Footprint samples, 2 s apart, after load.
    #[arg(long, default_value_t = 10)]
    footprint_samples: u32,
    /// Switch visits per page kind (at least 2).
    #[arg(long, default_value_t = 3)]
    visits: u32,
    /// Page kinds to measure, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<String>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let What::Measure(a) = args.what;
    if !(a.scale > 0.0 && a.scale <= 4.0) {
        anyhow::bail!("--scale must be within (0, 4], got {}", a.scale);
    }
    let names: Vec<&str> = nvmswap_linux::chromium::pages::KINDS
        .iter()
        .map(|k| k.name)
        .collect();
    let kinds = a
        .kinds
        .iter()
        .map(|k| {
            names
                .iter()
                .position(|n| n == k)
                .with_context(|| format!("--kinds: no page kind '{k}' ({})", names.join(", ")))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let opts = nvmswap_linux::chromium::measure::MeasureOptions {
        scale: a.scale,
        seed: a.seed,
        footprint_samples: a.footprint_samples,
        visits: a.visits,
        kinds,
        ..Default::default()
    };
    let bar = Bar::new("workload measure");
    let m = nvmswap_linux::chromium::measure::run_measure(&opts, &bar)?;
    bar.finish();
    if let Some(dir) = a.out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&a.out, m.to_toml()).with_context(|| format!("writing {}", a.out.display()))?;
    for k in &m.kinds {
        println!(
            "{:<8} anon {:>6.1} MiB  +{:>5.1} MiB/min  switch {:>5.1} % (new {:>5.1} %)  bg {:>5.2} %/s  \
             writes {:>5.1} %  lzo-rle {:.2}  lz4 {:.2}  same {:>4.1} %  load {:>6.0} ms cpu  render {:>5.1} ms cpu",
            k.name,
            k.anon_mib,
            k.anon_growth_mib_per_min,
            100.0 * k.switch_touch_share,
            100.0 * k.switch_new_share,
            100.0 * k.background_touch_share_per_s,
            100.0 * k.write_share,
            k.lzo_rle_ratio,
            k.lz4_ratio,
            100.0 * k.same_filled_share,
            k.load_cpu_ms,
            k.render_cpu_ms
        );
    }
    tracing::info!("profile: {}", a.out.display());
    Ok(())
}
