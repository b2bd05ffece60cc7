//! The closed sets a configuration or a command line chooses from, one registry per kind: the
//! list of names drives parsing (TOML, `--set`, flags), the possible values `--help` shows and
//! the error text, which names every choice and the closest one to what was typed.

use std::fmt;

/// A name that is not in its kind's registry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} '{given}' (expected one of: {}){}", known.join(", "), did_you_mean(suggestion))]
pub struct UnknownName {
    pub kind: &'static str,
    pub given: String,
    pub known: Vec<&'static str>,
    pub suggestion: Option<String>,
}

fn did_you_mean(s: &Option<String>) -> String {
    s.as_ref()
        .map_or(String::new(), |s| format!("; did you mean '{s}'?"))
}

/// The candidate closest to `given` by edit distance, if it is close enough to be a typo (at most
/// a third of the candidate's length, and at most 3 edits).
pub fn closest<'a, I, S>(given: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str> + 'a,
{
    candidates
        .into_iter()
        .map(|c| {
            let c = c.as_ref().to_string();
            (strsim::damerau_levenshtein(given, &c), c)
        })
        .filter(|(d, c)| *d > 0 && *d <= 3 && *d * 3 <= c.len().max(3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Builds an [`UnknownName`] error for `given` against `known`.
pub fn unknown(kind: &'static str, given: &str, known: &[&'static str]) -> UnknownName {
    UnknownName {
        kind,
        given: given.to_string(),
        known: known.to_vec(),
        suggestion: closest(given, known.iter()),
    }
}

macro_rules! closed_set {
    ($(#[$meta:meta])* $name:ident, $kind:literal, { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every choice, in the registry's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Every choice's name, in the registry's order.
            pub const NAMES: &'static [&'static str] = &[$($text),+];
            /// What the error text calls this kind.
            pub const KIND: &'static str = $kind;

            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownName;
            fn from_str(s: &str) -> Result<Self, UnknownName> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(unknown($kind, other, Self::NAMES)),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

closed_set!(
    /// The block layer's I/O scheduler, by its sysfs name (`/sys/block/*/queue/scheduler`).
    Scheduler, "I/O scheduler", {
        None = "none",
        Kyber = "kyber",
        MqDeadline = "mq-deadline",
        Bfq = "bfq",
    }
);

closed_set!(
    /// How a task waiting for a block request learns it completed (seed 000 §6).
    Completion, "completion mode", {
        Interrupt = "interrupt",
        Poll = "poll",
        /// Hybrid polling with the kernel's adaptive sleep (io_poll_delay = 0).
        Hybrid0 = "hybrid-0",
        Hybrid2 = "hybrid-2",
        Hybrid4 = "hybrid-4",
    }
);

closed_set!(
    /// Page compressors, one vocabulary for every substrate; each substrate says which it
    /// implements (`sim`: lzo and lz4, whose costs it knows; `live`: lz4 and zstd; `linux`: what
    /// the running kernel lists in /proc/crypto).
    Compressor, "compressor", {
        Lzo = "lzo",
        LzoRle = "lzo-rle",
        Lz4 = "lz4",
        Zstd = "zstd",
    }
);

closed_set!(
    /// NVM swap-slot allocators (`core::alloc`).
    NvmAllocator, "NVM allocator", {
        LinuxCluster = "linux-cluster",
        HeapWear = "heap-wear",
        StartGap = "start-gap",
    }
);

closed_set!(
    /// Swap-slot allocators of a block swap device (`core::alloc`): `linux-cluster`, the kernel
    /// seed 002 describes (256-slot clusters per CPU, next-fit on a rotational device), or
    /// `linux-6.18`, the running kernel's (512-slot clusters, non-full ones refilled first).
    BlockAllocator, "block slot allocator", {
        LinuxCluster = "linux-cluster",
        Linux618 = "linux-6.18",
    }
);

/// Where an NVM tier's bytes live: an emulated device (DRAM with a device profile's latencies)
/// or a file (`file:<path>`, e.g. on a DAX or tmpfs mount).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NvmBackend {
    Emulated(String),
    File(String),
}

impl NvmBackend {
    pub const FORMS: &'static [&'static str] = &["emulated:<device profile>", "file:<path>"];
}

impl std::str::FromStr for NvmBackend {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        match s.split_once(':') {
            Some(("emulated", p)) if !p.is_empty() => Ok(NvmBackend::Emulated(p.to_string())),
            Some(("file", p)) if !p.is_empty() => Ok(NvmBackend::File(p.to_string())),
            _ => Err(unknown("NVM back-end", s, Self::FORMS)),
        }
    }
}

impl fmt::Display for NvmBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NvmBackend::Emulated(p) => write!(f, "emulated:{p}"),
            NvmBackend::File(p) => write!(f, "file:{p}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_errors_list_the_choices() {
        for s in Scheduler::ALL {
            assert_eq!(s.name().parse::<Scheduler>().unwrap(), *s);
        }
        for c in Completion::ALL {
            assert_eq!(c.name().parse::<Completion>().unwrap(), *c);
        }
        let e = "mq-dedline".parse::<Scheduler>().unwrap_err().to_string();
        assert!(
            e.contains("bfq") && e.contains("did you mean 'mq-deadline'"),
            "{e}"
        );
        let e = "cfq".parse::<Scheduler>().unwrap_err().to_string();
        assert!(e.contains("unknown I/O scheduler 'cfq'"), "{e}");
        let e = "xyzzy".parse::<Compressor>().unwrap_err().to_string();
        assert!(!e.contains("did you mean"), "{e}");
    }

    #[test]
    fn nvm_backend_forms() {
        assert_eq!(
            "emulated:pcm".parse::<NvmBackend>().unwrap(),
            NvmBackend::Emulated("pcm".into())
        );
        assert_eq!(
            "file:/tmp/x".parse::<NvmBackend>().unwrap().to_string(),
            "file:/tmp/x"
        );
        assert!("pcm".parse::<NvmBackend>().is_err());
    }

    #[test]
    fn closest_is_only_a_typo() {
        assert_eq!(
            closest("nvm-swpa", ["nvm-swap", "optane"]).as_deref(),
            Some("nvm-swap")
        );
        assert_eq!(closest("banana", ["nvm-swap", "optane"]), None);
    }
}
