//! A linux configuration: the memory cgroup's limit, the swap set-up (none, zram, swap file, or
//! zswap in front of a swap file), the swap device's I/O scheduler and the vm sysctls.

use serde::{Deserialize, Serialize};

use nvmswap_core::discard::DiscardRule;
use nvmswap_core::kinds::{Compressor, Scheduler};

use crate::error::LinuxError;

/// Where swapped pages go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SwapSetup {
    /// No swap of our own (pages of the cgroup can only go to swap areas already active).
    None,
    /// A hot-added zram device used as swap.
    Zram {
        /// Uncompressed capacity of the device (bytes, or with a unit: "1GiB").
        #[serde(deserialize_with = "nvmswap_core::size::bytes")]
        size_bytes: u64,
        /// zram `comp_algorithm`: one of core's compressors the running kernel offers
        /// (/proc/crypto; checked before any change).
        algorithm: Compressor,
        /// zram `mem_limit`: the most memory its pool may take (bytes, or with a unit); at it,
        /// a write is refused after its compression and the page stays in the swap cache with
        /// its slot (`scripts/zram-limit-probe`). 0 (the default): no limit.
        #[serde(
            default,
            deserialize_with = "nvmswap_core::size::bytes",
            skip_serializing_if = "is_zero"
        )]
        mem_limit_bytes: u64,
    },
    /// A swap file on disk.
    Swapfile {
        path: String,
        #[serde(deserialize_with = "nvmswap_core::size::bytes")]
        size_bytes: u64,
    },
    /// zswap in front of a swap file.
    Zswap {
        path: String,
        #[serde(deserialize_with = "nvmswap_core::size::bytes")]
        size_bytes: u64,
        /// zswap `compressor` (checked against /proc/crypto before any change).
        compressor: Compressor,
        /// zswap `max_pool_percent` (share of RAM the compressed pool may take).
        max_pool_percent: u32,
    },
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl SwapSetup {
    /// The swap file's path, for the set-ups that swap to a file on disk.
    pub fn file_path(&self) -> Option<&str> {
        match self {
            SwapSetup::Swapfile { path, .. } | SwapSetup::Zswap { path, .. } => Some(path),
            SwapSetup::None | SwapSetup::Zram { .. } => None,
        }
    }
}

/// One linux configuration (profiles/linux/*.toml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinuxConfig {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The memory cgroup's limit: the DRAM the workload may keep resident.
    #[serde(deserialize_with = "nvmswap_core::size::bytes")]
    pub cgroup_limit_bytes: u64,
    pub swap: SwapSetup,
    /// I/O scheduler of the swap file's disk (none, mq-deadline, kyber, bfq; checked against
    /// the disk's sysfs list before any change); unchanged if absent.
    #[serde(default)]
    pub scheduler: Option<Scheduler>,
    /// vm.page-cluster (log2 of pages read ahead on swap-in); unchanged if absent.
    #[serde(default)]
    pub page_cluster: Option<u32>,
    /// Swappiness of the cgroup (v1) and vm.swappiness; unchanged if absent.
    #[serde(default)]
    pub swappiness: Option<u32>,
    /// Chrome's discard rule with this configuration's RAM-vs-swap weight.
    #[serde(default)]
    pub discard: DiscardRule,
    /// How a swap file's blocks are prepared before `mkswap` (swap file and zswap set-ups).
    #[serde(default)]
    pub swap_file_blocks: SwapFileBlocks,
    /// The CPUs the tab processes (or Chromium) may run on, e.g. `[0]`; every CPU this process
    /// may use if absent. With one CPU the tabs' memory has only that CPU in its `mm_cpumask`,
    /// so reclaim flushes TLBs locally and sends no remote shootdown (crate::affinity). The
    /// driver and the kernel's workers stay unconfined; sim's equivalent is unchanged (it has
    /// no remote flushes to take away).
    #[serde(default)]
    pub tab_cpus: Option<Vec<u32>>,
}

/// How a swap file's blocks are prepared before `mkswap`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwapFileBlocks {
    /// Allocated (`posix_fallocate`), then every block written once with O_DIRECT, as the
    /// blocks of a swap file that has been in use have been. On a virtual disk the host may
    /// have freed blocks the guest discarded (this machine's root file system is mounted with
    /// `discard`, so deleting the previous run's swap file discards its blocks), and some first
    /// writes cost it more: measured here, write D2C p99 a quarter lower on a written file, the
    /// median unchanged (docs/experiments/validation.md, "The virtual disk's first writes").
    #[default]
    Written,
    /// Allocated only: unwritten extents, as `fallocate -l SIZE` before `mkswap` leaves them.
    /// Swap writes then land on blocks the disk has not seen written since they were discarded.
    Allocated,
}

const BUNDLED: [(&str, &str); 3] = [
    (
        "linux-zram",
        include_str!("../../../profiles/linux/linux-zram.toml"),
    ),
    (
        "linux-swapfile",
        include_str!("../../../profiles/linux/linux-swapfile.toml"),
    ),
    (
        "linux-zswap",
        include_str!("../../../profiles/linux/linux-zswap.toml"),
    ),
];

/// Names of the bundled configurations.
pub fn bundled_configs() -> Vec<&'static str> {
    BUNDLED.iter().map(|b| b.0).collect()
}

impl LinuxConfig {
    /// A probe's set-up: a memory cgroup of `limit_bytes` and nothing else of the machine
    /// changed (no swap of its own, no scheduler, page-cluster or swappiness change).
    pub fn cgroup_only(name: &str, limit_bytes: u64) -> Self {
        LinuxConfig {
            name: name.into(),
            description: String::new(),
            cgroup_limit_bytes: limit_bytes,
            swap: SwapSetup::None,
            scheduler: None,
            page_cluster: None,
            swappiness: None,
            discard: Default::default(),
            swap_file_blocks: Default::default(),
            tab_cpus: None,
        }
    }

    pub fn parse(name: &str, text: &str) -> Result<Self, LinuxError> {
        let cfg: LinuxConfig = toml::from_str(text).map_err(|e| LinuxError::Config {
            name: name.to_string(),
            detail: e.to_string(),
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// A bundled name, or a path to a TOML file.
    pub fn load(name_or_path: &str) -> Result<Self, LinuxError> {
        if let Some((name, text)) = BUNDLED.iter().find(|b| b.0 == name_or_path) {
            return Self::parse(name, text);
        }
        let text = std::fs::read_to_string(name_or_path).map_err(|e| LinuxError::Config {
            name: name_or_path.to_string(),
            detail: format!(
                "neither a bundled configuration ({}) nor a readable file: {e}",
                bundled_configs().join(", ")
            ),
        })?;
        Self::parse(name_or_path, &text)
    }

    fn validate(&self) -> Result<(), LinuxError> {
        let bad = |detail: String| {
            Err(LinuxError::Config {
                name: self.name.clone(),
                detail,
            })
        };
        if self.cgroup_limit_bytes < 16 * nvmswap_core::MIB {
            return bad(format!(
                "cgroup_limit_bytes {} is below 16 MiB",
                self.cgroup_limit_bytes
            ));
        }
        if let Some(cpus) = &self.tab_cpus {
            let mut sorted = cpus.clone();
            sorted.sort_unstable();
            sorted.dedup();
            if cpus.is_empty() || sorted.len() != cpus.len() {
                return bad(format!(
                    "tab_cpus {cpus:?} must name at least one CPU, each once"
                ));
            }
        }
        match &self.swap {
            SwapSetup::Zram { size_bytes, .. }
            | SwapSetup::Swapfile { size_bytes, .. }
            | SwapSetup::Zswap { size_bytes, .. }
                if *size_bytes < nvmswap_core::MIB =>
            {
                bad(format!("swap size_bytes {size_bytes} is below 1 MiB"))
            }
            SwapSetup::Zram {
                mem_limit_bytes, ..
            } if *mem_limit_bytes > 0 && *mem_limit_bytes < nvmswap_core::MIB => bad(format!(
                "zram mem_limit_bytes {mem_limit_bytes} is below 1 MiB (0: no limit)"
            )),
            SwapSetup::Zswap {
                max_pool_percent, ..
            } if *max_pool_percent == 0 || *max_pool_percent > 100 => bad(format!(
                "max_pool_percent {max_pool_percent} is not within 1..=100"
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_configs_parse_and_bad_ones_are_rejected() {
        for name in bundled_configs() {
            let cfg = LinuxConfig::load(name).unwrap();
            assert_eq!(cfg.name, name);
        }
        let err = LinuxConfig::parse(
            "x",
            "name='x'\ncgroup_limit_bytes=1024\n[swap]\nkind='none'\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("below 16 MiB"), "{err}");
        assert!(LinuxConfig::load("no-such-config").is_err());
        let with_cpus = |cpus: &str| {
            LinuxConfig::parse(
                "x",
                &format!(
                    "name='x'\ncgroup_limit_bytes=33554432\ntab_cpus={cpus}\n[swap]\nkind='none'\n"
                ),
            )
        };
        assert_eq!(with_cpus("[0]").unwrap().tab_cpus, Some(vec![0]));
        for bad in ["[]", "[0, 0]"] {
            let err = with_cpus(bad).unwrap_err().to_string();
            assert!(err.contains("at least one CPU, each once"), "{bad}: {err}");
        }
        let with_limit = |limit: &str| {
            LinuxConfig::parse(
                "x",
                &format!(
                    "name='x'\ncgroup_limit_bytes=33554432\n[swap]\nkind='zram'\n\
                     size_bytes='64MiB'\nalgorithm='lzo-rle'\n{limit}"
                ),
            )
        };
        let limit_of = |cfg: LinuxConfig| match cfg.swap {
            SwapSetup::Zram {
                mem_limit_bytes, ..
            } => mem_limit_bytes,
            _ => unreachable!(),
        };
        assert_eq!(limit_of(with_limit("").unwrap()), 0, "none by default");
        assert_eq!(
            limit_of(with_limit("mem_limit_bytes='8MiB'").unwrap()),
            8 << 20
        );
        let err = with_limit("mem_limit_bytes=4096").unwrap_err().to_string();
        assert!(err.contains("below 1 MiB"), "{err}");
    }
}
