//! `nvmswap devices`: the device profiles the models use, with where each value comes from.

use anyhow::Context;
use nvmswap_core::device::DeviceProfile;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// `list` (default) prints every profile in a table; `show NAME` prints one with its sources.
    #[arg(value_name = "ACTION", default_value = "list", value_parser = ["list", "show"])]
    action: String,
    /// With `show`: a bundled profile name or a path to a profile TOML file.
    #[arg(value_name = "NAME")]
    name: Option<String>,
    /// Also load (and validate) a profile from this TOML file; it is listed beside the bundled ones.
    #[arg(long, value_name = "FILE")]
    file: Option<std::path::PathBuf>,
    /// Print JSON (an array of profiles for `list`, one profile for `show`) instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut profiles = DeviceProfile::all_bundled().context("bundled device profiles")?;
    if let Some(path) = &args.file {
        profiles.push(DeviceProfile::from_file(path)?);
    }
    if args.action == "show" {
        let name = args
            .name
            .as_deref()
            .context("`nvmswap devices show` needs a NAME")?;
        let profile = match profiles.iter().find(|p| p.name == name) {
            Some(p) => p.clone(),
            None => DeviceProfile::resolve(name)?,
        };
        if args.json {
            println!("{}", serde_json::to_string_pretty(&profile)?);
        } else {
            print!("{}", toml::to_string(&profile)?);
        }
        return Ok(());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&profiles)?);
        return Ok(());
    }
    println!(
        "{:<12} {:<10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>8} {:>9}",
        "name",
        "kind",
        "rd mean",
        "rd p99",
        "wr mean",
        "wr p99",
        "rd nJ",
        "wr nJ",
        "$/GB",
        "endurance"
    );
    let us = |ns: f64| format!("{:.2}us", ns / 1000.0);
    let opt =
        |v: Option<f64>, prec: usize| v.map_or("unknown".to_string(), |v| format!("{v:.prec$}"));
    for p in &profiles {
        println!(
            "{:<12} {:<10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>8} {:>9}",
            p.name,
            serde_json::to_value(p.kind)?
                .as_str()
                .unwrap_or("?")
                .to_string(),
            us(p.read_4k.mean_ns),
            us(p.read_4k.p99_ns),
            us(p.write_4k.mean_ns),
            us(p.write_4k.p99_ns),
            opt(p.read_energy_nj, 0),
            opt(p.write_energy_nj, 0),
            opt(p.price_usd_per_gb, 1),
            p.endurance_cycles
                .map_or("unknown".to_string(), |e| format!("{e:.0e}")),
        );
    }
    println!("\n`nvmswap devices show NAME` prints a profile with the source of every value.");
    Ok(())
}
