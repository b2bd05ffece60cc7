//! Performance per cost: seed 001 §4.7 (Liu et al., *Non-Volatile Memory Based Page Swapping for
//! Building High-Performance Mobile Devices*, IEEE Transactions on Computers 2017), Eq. 1-3 with
//! the energy and price parameters of its Table 4 (which the device profiles carry, each with its
//! source).
//!
//! - Eq. 1/2, performance of a swap scheme: the mean relaunch speedup over the NAND-flash
//!   baseline plus the mean execution-time speedup, `P = mean_i(T_base^launch(i) / T^launch(i)) +
//!   mean_i(T_base^exec(i) / T^exec(i))`. The baseline scores 2 against itself.
//! - Eq. 3, cost of a swap scheme over the device's life: `Cost = (E_rd N_rd + E_wr N_wr + P_stby +
//!   P_ref) T C_E + C_price Size`, with `E` in J per 4 KiB page, `N` in pages per second, the
//!   standby and refresh powers per GB of swap area (Table 4 gives them in mW/GB, so they are
//!   multiplied by the area's size), `T` the device's lifetime, `C_E` the electricity price
//!   (Table 4: "~0.12 $/KW", read as $/kWh) and `C_price` the $/GB of the swap medium.
//!
//! `E` is per 4 KiB page (Table 4: "J/4KB"), so `N` counts pages moved, not device requests: a
//! block-layer write request that carries a plugged run of 8 swap slots costs 8 pages' energy
//! (`device_pages` reads a run's page counts, `extra.device_read_pages` / `device_write_pages`).
//!
//! No I/O: callers hand in device profiles and counts.

use serde::{Deserialize, Serialize};

use crate::device::DeviceProfile;

/// Seed 001 Table 4: electricity price "~0.12$/KW"; a price of energy, so $ per kWh.
pub const SEED001_ELECTRICITY_USD_PER_KWH: f64 = 0.12;

/// Seed 001 Table 4: "Swap-outs (N_wr) ~20000 per 15 min" and "Swap-ins (N_rd) ~10000 per 15 min".
pub const SEED001_SWAP_OUTS_PER_15_MIN: f64 = 20_000.0;
pub const SEED001_SWAP_INS_PER_15_MIN: f64 = 10_000.0;

/// T of Eq. 3, "the endurance of mobile devices". Seed 001 gives no value: OUR ASSUMPTION, three
/// years of use. It scales only the energy term, which with Table 4's parameters is a few cents
/// against dollars of device price (see `docs/experiments/cost.md`), so the ranking of the
/// configurations does not hinge on it.
pub const ASSUMED_DEVICE_LIFETIME_YEARS: f64 = 3.0;

const SECONDS_PER_YEAR: f64 = 365.25 * 24.0 * 3600.0;
const JOULES_PER_KWH: f64 = 3.6e6;
/// Table 4's per-GB figures are per decimal gigabyte, as the device profiles' are.
const BYTES_PER_GB: f64 = 1e9;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CostError {
    #[error("device profile '{profile}' has no {field}: Eq. 3 needs it")]
    MissingParameter {
        profile: String,
        field: &'static str,
    },
    #[error("Eq. 1: {0}")]
    Performance(String),
    #[error("{field} must be a finite non-negative number (got {value})")]
    Invalid { field: &'static str, value: f64 },
}

/// Pages per second from a count over a span: Table 4's "~20000 per 15 min, thus ~22.22
/// pages/sec".
pub fn rate_per_s(count: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count / seconds
    } else {
        0.0
    }
}

/// Seed 001 Eq. 1 (and Eq. 2, the same form): the mean speedup of relaunches plus the mean
/// speedup of executions over the baseline. Each pair is (baseline time, scheme time) of one
/// application; times in any one unit.
pub fn performance(launch: &[(f64, f64)], exec: &[(f64, f64)]) -> Result<f64, CostError> {
    let mean_speedup = |what: &str, pairs: &[(f64, f64)]| -> Result<f64, CostError> {
        if pairs.is_empty() {
            return Err(CostError::Performance(format!("no {what} times")));
        }
        let mut sum = 0.0;
        for &(base, mine) in pairs {
            if !(base.is_finite() && mine.is_finite() && base > 0.0 && mine > 0.0) {
                return Err(CostError::Performance(format!(
                    "{what} times must be positive (got baseline {base}, scheme {mine})"
                )));
            }
            sum += base / mine;
        }
        Ok(sum / pairs.len() as f64)
    };
    Ok(mean_speedup("relaunch", launch)? + mean_speedup("execution", exec)?)
}

/// The parameters of Eq. 3 for one swap area: its medium's Table 4 row and its size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SwapMedium {
    /// E_rd, E_wr: joules per 4 KiB page.
    pub read_j: f64,
    pub write_j: f64,
    /// P_stby, P_ref: watts per GB.
    pub standby_w_per_gb: f64,
    pub refresh_w_per_gb: f64,
    /// C_price: $ per GB.
    pub price_usd_per_gb: f64,
    /// Size_swap_area in bytes.
    pub size_bytes: u64,
}

impl SwapMedium {
    /// The Table 4 row of `profile` for a swap area of `size_bytes`. A missing refresh power is 0
    /// (non-volatile media do not refresh); any other missing value is an error naming it.
    pub fn from_profile(profile: &DeviceProfile, size_bytes: u64) -> Result<Self, CostError> {
        let need = |v: Option<f64>, field: &'static str| {
            v.ok_or_else(|| CostError::MissingParameter {
                profile: profile.name.clone(),
                field,
            })
        };
        Ok(SwapMedium {
            read_j: need(profile.read_energy_nj, "read_energy_nj")? * 1e-9,
            write_j: need(profile.write_energy_nj, "write_energy_nj")? * 1e-9,
            standby_w_per_gb: need(profile.standby_mw_per_gb, "standby_mw_per_gb")? * 1e-3,
            refresh_w_per_gb: profile.refresh_mw_per_gb.unwrap_or(0.0) * 1e-3,
            price_usd_per_gb: need(profile.price_usd_per_gb, "price_usd_per_gb")?,
            size_bytes,
        })
    }
}

/// How the swap area is used over the device's life.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// N_rd, N_wr: swap-ins and swap-outs per second (pages).
    pub reads_per_s: f64,
    pub writes_per_s: f64,
    /// T in seconds.
    pub lifetime_s: f64,
    /// C_E in $ per kWh.
    pub electricity_usd_per_kwh: f64,
}

impl Usage {
    /// Table 4's own usage: 10000 swap-ins and 20000 swap-outs per 15 minutes, 0.12 $/kWh, over
    /// the assumed lifetime.
    pub fn seed001() -> Self {
        Usage {
            reads_per_s: rate_per_s(SEED001_SWAP_INS_PER_15_MIN, 900.0),
            writes_per_s: rate_per_s(SEED001_SWAP_OUTS_PER_15_MIN, 900.0),
            lifetime_s: ASSUMED_DEVICE_LIFETIME_YEARS * SECONDS_PER_YEAR,
            electricity_usd_per_kwh: SEED001_ELECTRICITY_USD_PER_KWH,
        }
    }

    /// Measured swap traffic (pages over seconds) with Table 4's electricity price and the
    /// assumed lifetime.
    pub fn measured(swap_in_pages: u64, swap_out_pages: u64, seconds: f64) -> Self {
        Usage {
            reads_per_s: rate_per_s(swap_in_pages as f64, seconds),
            writes_per_s: rate_per_s(swap_out_pages as f64, seconds),
            ..Usage::seed001()
        }
    }
}

/// Eq. 3 and its parts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// E_rd N_rd + E_wr N_wr: access power, watts.
    pub access_w: f64,
    /// (P_stby + P_ref) Size: idle power of the swap area, watts.
    pub idle_w: f64,
    /// Energy over T, joules, and its price.
    pub energy_j: f64,
    pub energy_usd: f64,
    /// C_price Size.
    pub device_usd: f64,
    /// Eq. 3: energy_usd + device_usd.
    pub total_usd: f64,
}

/// Seed 001 Eq. 3.
pub fn cost(m: &SwapMedium, u: &Usage) -> Result<Cost, CostError> {
    for (field, value) in [
        ("reads_per_s", u.reads_per_s),
        ("writes_per_s", u.writes_per_s),
        ("lifetime_s", u.lifetime_s),
        ("electricity_usd_per_kwh", u.electricity_usd_per_kwh),
    ] {
        if !(value.is_finite() && value >= 0.0) {
            return Err(CostError::Invalid { field, value });
        }
    }
    let gb = m.size_bytes as f64 / BYTES_PER_GB;
    let access_w = m.read_j * u.reads_per_s + m.write_j * u.writes_per_s;
    let idle_w = (m.standby_w_per_gb + m.refresh_w_per_gb) * gb;
    let energy_j = (access_w + idle_w) * u.lifetime_s;
    let energy_usd = energy_j / JOULES_PER_KWH * u.electricity_usd_per_kwh;
    let device_usd = m.price_usd_per_gb * gb;
    Ok(Cost {
        access_w,
        idle_w,
        energy_j,
        energy_usd,
        device_usd,
        total_usd: energy_usd + device_usd,
    })
}

/// Energy of a span of activity on a medium (the access and idle terms of Eq. 3 over `seconds`
/// rather than a lifetime), joules; `read_pages` and `write_pages` are 4 KiB pages moved (not
/// device requests, which may carry several).
pub fn energy_j(m: &SwapMedium, read_pages: u64, write_pages: u64, seconds: f64) -> f64 {
    m.read_j * read_pages as f64
        + m.write_j * write_pages as f64
        + (m.standby_w_per_gb + m.refresh_w_per_gb) * m.size_bytes as f64 / BYTES_PER_GB * seconds
}

/// The swap area of a configuration as Eq. 3 prices it: the swap device's Table 4 row and size.
/// `Ok(None)` for zram, whose swap area is compressed data in the DRAM the device already has
/// (Eq. 3 prices a separate swap medium; seed 001 has no zram scheme).
pub fn swap_medium_of(cfg: &crate::config::SystemConfig) -> Result<Option<SwapMedium>, CostError> {
    use crate::config::Backend;
    match cfg.backend {
        Backend::Zram | Backend::None => Ok(None),
        Backend::Block | Backend::NvmSwap => {
            let profile = DeviceProfile::resolve(&cfg.swap_profile).map_err(|e| {
                CostError::Performance(format!("swap profile '{}': {e}", cfg.swap_profile))
            })?;
            SwapMedium::from_profile(&profile, cfg.swap_bytes).map(Some)
        }
    }
}

/// The 4 KiB pages a run moved to and from its swap device, (read, write), from its results'
/// `extra.device_read_pages` / `device_write_pages` (0 where absent): Eq. 3's N_rd and N_wr count
/// these, not the requests in `extra.device_reads` / `device_writes` (a plugged write request
/// carries several pages).
pub fn device_pages(extra: &serde_json::Map<String, serde_json::Value>) -> (u64, u64) {
    let get = |k: &str| extra.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    (get("device_read_pages"), get("device_write_pages"))
}

/// One run's Eq. 3: the pages the swap device read and wrote over the run's (virtual) time as
/// N_rd and N_wr, and the same medium under Table 4's own usage.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunCost {
    /// N_rd, N_wr: 4 KiB pages read from and written to the swap device per second.
    pub reads_per_s: f64,
    pub writes_per_s: f64,
    pub lifetime_years: f64,
    pub electricity_usd_per_kwh: f64,
    /// Eq. 3 with this run's rates.
    pub measured: Cost,
    /// Eq. 3 with Table 4's rates (11.11 swap-ins, 22.22 swap-outs per second).
    pub seed001_usage: Cost,
}

/// Eq. 3 for a run that read `read_pages` and wrote `write_pages` 4 KiB pages on the swap device
/// in `seconds` (pages, not requests: see `device_pages`).
pub fn run_cost(
    m: &SwapMedium,
    read_pages: u64,
    write_pages: u64,
    seconds: f64,
) -> Result<RunCost, CostError> {
    let u = Usage::measured(read_pages, write_pages, seconds);
    Ok(RunCost {
        reads_per_s: u.reads_per_s,
        writes_per_s: u.writes_per_s,
        lifetime_years: u.lifetime_s / SECONDS_PER_YEAR,
        electricity_usd_per_kwh: u.electricity_usd_per_kwh,
        measured: cost(m, &u)?,
        seed001_usage: cost(m, &Usage::seed001())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-30)
    }

    /// Table 4's rows as the bundled profiles carry them.
    fn medium(profile: &str, mb: u64) -> SwapMedium {
        SwapMedium::from_profile(&DeviceProfile::resolve(profile).unwrap(), mb * 1_000_000).unwrap()
    }

    #[test]
    fn table4_rates_are_its_own_worked_values() {
        // "~20000 per 15 min, thus ~22.22 pages/sec"; "~10000 per 15 min, thus ~11.11 pages/sec".
        let u = Usage::seed001();
        assert!((u.writes_per_s - 22.22).abs() < 0.005, "{}", u.writes_per_s);
        assert!((u.reads_per_s - 11.11).abs() < 0.005, "{}", u.reads_per_s);
        assert_eq!(rate_per_s(5.0, 0.0), 0.0);
    }

    #[test]
    fn profiles_carry_table4_rows() {
        let pcm = medium("pcm", 1000);
        assert!(close(pcm.read_j, 1.7e-8, 1e-12) && close(pcm.write_j, 2.1e-7, 1e-12));
        assert!(close(pcm.standby_w_per_gb, 2.5e-3, 1e-12) && pcm.refresh_w_per_gb == 0.0);
        assert_eq!(pcm.price_usd_per_gb, 8.0);
        let dram = medium("ramdisk", 1000);
        assert!(close(dram.read_j, 4.7e-8, 1e-12) && close(dram.write_j, 4.7e-8, 1e-12));
        assert!(close(dram.refresh_w_per_gb, 12.4e-3, 1e-12));
        let flash = medium("emmc", 1000);
        assert!(close(flash.read_j, 2.6e-5, 1e-12) && close(flash.write_j, 2.9e-5, 1e-12));
        assert_eq!(flash.price_usd_per_gb, 0.6);
        // A profile without a price cannot be costed, and the error names the field.
        let e = SwapMedium::from_profile(&DeviceProfile::resolve("mlc-nand").unwrap(), 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("read_energy_nj") && e.contains("mlc-nand"),
            "{e}"
        );
    }

    #[test]
    fn eq1_is_mean_relaunch_plus_mean_execution_speedup() {
        // The baseline against itself: 1 + 1.
        let same = [(2000.0, 2000.0), (4000.0, 4000.0)];
        assert_eq!(performance(&same, &same).unwrap(), 2.0);
        // Seed 001 §4.5: NVM-Swap relaunches Chrome 44 % and Opera 34 % faster than the NAND
        // baseline; read as time saved, T_NVM = 0.56 and 0.66 of T_NAND. §4.6: execution 14-45 %
        // faster; take the two ends.
        let launch = [(1.0, 0.56), (1.0, 0.66)];
        let exec = [(1.0, 0.86), (1.0, 0.55)];
        let p = performance(&launch, &exec).unwrap();
        let want = (1.0 / 0.56 + 1.0 / 0.66) / 2.0 + (1.0 / 0.86 + 1.0 / 0.55) / 2.0;
        assert!(close(p, want, 1e-12), "{p} vs {want}");
        assert!(p > 2.0);
        assert!(performance(&[], &same).is_err());
        assert!(performance(&same, &[(1.0, 0.0)]).is_err());
    }

    #[test]
    fn eq3_with_table4_parameters() {
        // PCM, 256 MB swap area, Table 4's usage, one year at 0.12 $/kWh, by hand:
        // access = 1.7e-8 * 11.111 + 2.1e-7 * 22.222 = 1.8889e-7 + 4.6667e-6 = 4.8556e-6 W;
        // idle = 2.5e-3 W/GB * 0.256 GB = 6.4e-4 W; energy = 6.448556e-4 W * 31,557,600 s
        // = 20,350 J = 5.6527e-3 kWh -> 6.783e-4 $; device = 8 $/GB * 0.256 GB = 2.048 $.
        let u = Usage {
            lifetime_s: SECONDS_PER_YEAR,
            ..Usage::seed001()
        };
        let c = cost(&medium("pcm", 256), &u).unwrap();
        assert!(close(c.access_w, 4.8556e-6, 1e-4), "{c:?}");
        assert!(close(c.idle_w, 6.4e-4, 1e-9), "{c:?}");
        assert!(close(c.energy_j, 20_350.0, 1e-3), "{c:?}");
        assert!(close(c.energy_usd, 6.783e-4, 1e-3), "{c:?}");
        assert!(close(c.device_usd, 2.048, 1e-12), "{c:?}");
        assert!(close(c.total_usd, 2.048 + 6.783e-4, 1e-6), "{c:?}");
        // DRAM (ramdisk), same area: idle = (5.3 + 12.4) e-3 * 0.256 = 4.5312e-3 W, 7x as much.
        let d = cost(&medium("ramdisk", 256), &u).unwrap();
        assert!(close(d.idle_w, 4.5312e-3, 1e-9), "{d:?}");
        assert!(close(d.device_usd, 7.0 * 0.256, 1e-12));
        // Flash: access dominated by its 2.6e-5 / 2.9e-5 J per page.
        let f = cost(&medium("emmc", 256), &u).unwrap();
        assert!(
            close(f.access_w, 2.6e-5 * 11.111 + 2.9e-5 * 22.222, 1e-3),
            "{f:?}"
        );
        // The energy term is linear in T.
        let u3 = Usage {
            lifetime_s: 3.0 * SECONDS_PER_YEAR,
            ..u
        };
        let c3 = cost(&medium("pcm", 256), &u3).unwrap();
        assert!(close(c3.energy_usd, 3.0 * c.energy_usd, 1e-12));
        let bad = Usage {
            reads_per_s: f64::NAN,
            ..u
        };
        assert!(cost(&medium("pcm", 256), &bad).is_err());
    }

    #[test]
    fn energy_of_a_span_matches_the_lifetime_form() {
        let m = medium("pcm", 256);
        let u = Usage::measured(1000, 3000, 100.0);
        let c = cost(
            &m,
            &Usage {
                lifetime_s: 100.0,
                ..u
            },
        )
        .unwrap();
        assert!(close(energy_j(&m, 1000, 3000, 100.0), c.energy_j, 1e-12));
    }

    #[test]
    fn eq3_counts_pages_not_requests() {
        // One block write request carrying a plugged run of 8 slots, in one second, on the eMMC
        // (2.9e-5 J per 4 KiB page): N_wr is 8 pages/s and the write power 8 x 2.9e-5 W. Counting
        // the request (what `extra.device_writes` holds) would give 2.9e-5 W.
        let mut extra = serde_json::Map::new();
        extra.insert("device_reads".into(), 0.into());
        extra.insert("device_writes".into(), 1.into());
        extra.insert("device_read_pages".into(), 0.into());
        extra.insert("device_write_pages".into(), 8.into());
        let (rd, wr) = device_pages(&extra);
        assert_eq!((rd, wr), (0, 8));
        let m = medium("emmc", 256);
        let c = run_cost(&m, rd, wr, 1.0).unwrap();
        assert_eq!(c.writes_per_s, 8.0);
        assert!(close(c.measured.access_w, 8.0 * 2.9e-5, 1e-12), "{c:?}");
        let idle_j = (m.standby_w_per_gb + m.refresh_w_per_gb) * 0.256;
        assert!(close(
            energy_j(&m, rd, wr, 1.0),
            8.0 * 2.9e-5 + idle_j,
            1e-12
        ));
        // Results without page counts cost no accesses (never the request counts).
        assert_eq!(device_pages(&serde_json::Map::new()), (0, 0));
    }

    #[test]
    fn optane_energy_follows_seed000_relations() {
        // Seed 000 §4.1: an Optane write costs 3.6x a DRAM write, a read 56 % less than a DRAM
        // read, per bit; on seed 001 Table 4's DRAM figure (4.7e-8 J/4KB).
        let o = DeviceProfile::resolve("optane-ssd").unwrap();
        let dram = DeviceProfile::resolve("dram-lpddr3").unwrap();
        let (dr, dw) = (dram.read_energy_nj.unwrap(), dram.write_energy_nj.unwrap());
        assert!(close(o.write_energy_nj.unwrap(), 3.6 * dw, 1e-9));
        assert!(close(o.read_energy_nj.unwrap(), (1.0 - 0.56) * dr, 1e-9));
    }
}
