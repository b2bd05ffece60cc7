//! A virtual CPU's wake-up from halt as the host's adaptive halt polling prices it.
//!
//! An idle vCPU halts; the host (KVM, virt/kvm/kvm_main.c `kvm_vcpu_halt`) first polls for a
//! wake-up event for up to that vCPU's own interval `halt_poll_ns` and only then schedules its
//! thread out. A wake-up that arrives while the host still polls runs the vCPU again almost at
//! once; one that arrives later waits for the host to run the vCPU's thread again, longer the
//! longer it has slept. After each halt the host adapts the interval to the halt's length
//! (`halt_ns`, polling included):
//!
//! - a halt within the interval leaves it as it is;
//! - a halt longer than the host's most polling (`max_halt_poll_ns`) shrinks it
//!   (`shrink_halt_poll_ns`: divided by `halt_poll_ns_shrink`, or to 0 where that is 0);
//! - any other halt (longer than the interval, shorter than the most) grows it
//!   (`grow_halt_poll_ns`: times `halt_poll_ns_grow`, at least `halt_poll_ns_grow_start`, at
//!   most the most).
//!
//! So a vCPU that a run wakes at a steady pace of short halts ends up polled for, and one that
//! halted long before is not: the wait of a wake-up depends on the halts before it, not only on
//! its own. `nvmswap linux cpu-wake` shows the two apart on this project's machine (2026-12-04,
//! docs/experiments/validation.md, "A CPU's wake-up by its idle time"): back to back at 10-100 µs
//! gaps 6.5-19 µs at p50, after long idles 16-31 µs, with the edge at the 200 µs gap.
//!
//! The host's parameters are not visible from the guest. [`HaltPolling::default`] holds KVM's
//! defaults; the shrink, whose default changed between kernels, is measured by calibrate's probe
//! (`--order after-one-long`: does a short halt just after one long halt find the host still
//! polling?).

use serde::{Deserialize, Serialize};

/// KVM's default most polling of a vCPU on x86: `KVM_HALT_POLL_NS_DEFAULT`, 200 µs
/// (arch/x86/include/asm/kvm_host.h), the module parameter `halt_poll_ns`. `nvmswap linux
/// cpu-wake --order blocks` finds the edge between polled and unpolled wake-ups at the 200 µs
/// gap on this project's machine (2026-12-04).
pub const KVM_MAX_HALT_POLL_NS: u64 = 200_000;
/// KVM's `halt_poll_ns_grow` default (virt/kvm/kvm_main.c): the interval doubles.
pub const KVM_HALT_POLL_GROW: u64 = 2;
/// KVM's `halt_poll_ns_grow_start` default (virt/kvm/kvm_main.c): 10 µs.
pub const KVM_HALT_POLL_GROW_START_NS: u64 = 10_000;
/// KVM's `halt_poll_ns_shrink` default since the kernels that halve the interval
/// (virt/kvm/kvm_main.c, "Default halves per-vcpu halt_poll_ns"); older kernels had 0 (reset).
pub const KVM_HALT_POLL_SHRINK: u64 = 2;

/// The host's halt-polling parameters (KVM's module parameters of the same names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HaltPolling {
    /// The most the host polls for a vCPU (`halt_poll_ns`), ns; 0: it never polls.
    #[serde(default = "default_max")]
    pub max_ns: u64,
    /// The factor an interval grows by (`halt_poll_ns_grow`); 0: it never grows.
    #[serde(default = "default_grow")]
    pub grow: u64,
    /// The least an interval grows to (`halt_poll_ns_grow_start`), ns.
    #[serde(default = "default_grow_start")]
    pub grow_start_ns: u64,
    /// The divisor an interval shrinks by (`halt_poll_ns_shrink`); 0: it drops to 0.
    #[serde(default = "default_shrink")]
    pub shrink: u64,
}

fn default_max() -> u64 {
    KVM_MAX_HALT_POLL_NS
}
fn default_grow() -> u64 {
    KVM_HALT_POLL_GROW
}
fn default_grow_start() -> u64 {
    KVM_HALT_POLL_GROW_START_NS
}
fn default_shrink() -> u64 {
    KVM_HALT_POLL_SHRINK
}

impl Default for HaltPolling {
    fn default() -> Self {
        HaltPolling {
            max_ns: KVM_MAX_HALT_POLL_NS,
            grow: KVM_HALT_POLL_GROW,
            grow_start_ns: KVM_HALT_POLL_GROW_START_NS,
            shrink: KVM_HALT_POLL_SHRINK,
        }
    }
}

impl HaltPolling {
    /// The interval after a halt of `halt_ns` that began with interval `poll_ns`
    /// (`kvm_vcpu_halt`'s adjustment, a valid wake-up).
    pub fn next_interval(&self, poll_ns: u64, halt_ns: u64) -> u64 {
        if self.max_ns == 0 {
            return 0;
        }
        if halt_ns <= poll_ns {
            poll_ns
        } else if poll_ns > 0 && halt_ns > self.max_ns {
            match self.shrink {
                0 => 0,
                s => poll_ns / s,
            }
        } else if poll_ns < self.max_ns && halt_ns < self.max_ns && self.grow > 0 {
            // Saturating: a costs file may give any `max_ns` and `grow`.
            poll_ns
                .saturating_mul(self.grow)
                .max(self.grow_start_ns)
                .min(self.max_ns)
        } else {
            poll_ns
        }
    }
}

/// The costs file's `cpu_halt_poll`: what a woken vCPU waits for, polled and not, and the
/// host's polling. Measured by `nvmswap linux calibrate` (the CPU wake-up probe in three
/// orders, crates/linux/src/cpu_wake_probe.rs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HaltPollCosts {
    /// A wake-up the host was polling for: from the waker's IPI to the task running, ns (the
    /// probe's back-to-back wake-ups after gaps shorter than the most polling, median).
    pub polled_wake_ns: f64,
    /// A wake-up the host was not polling for, by how long the vCPU had halted (the probe's
    /// wake-ups after long idles): as `cpu_wake_curve`, linear between points.
    pub unpolled_wake_curve: Vec<crate::device::WakePoint>,
    /// The host's parameters; KVM's defaults where not given.
    #[serde(default)]
    pub host: HaltPolling,
}

impl HaltPollCosts {
    /// Whether a run can use these costs; the message names the part that is wrong.
    pub fn check(&self, field: &str) -> Result<(), String> {
        if !(self.polled_wake_ns.is_finite() && self.polled_wake_ns >= 0.0) {
            return Err(format!(
                "{field}.polled_wake_ns must be a time in ns of 0 or more, got {}",
                self.polled_wake_ns
            ));
        }
        if self.unpolled_wake_curve.is_empty() {
            return Err(format!(
                "{field}.unpolled_wake_curve needs at least one point"
            ));
        }
        crate::device::check_wake_curve(
            &format!("{field}.unpolled_wake_curve"),
            &self.unpolled_wake_curve,
        )?;
        if self.host.max_ns > 0 && self.host.grow_start_ns == 0 && self.host.grow > 0 {
            return Err(format!(
                "{field}.host.grow_start_ns must be above 0 where the host polls and grows \
                 (an interval of 0 times `grow` stays 0)"
            ));
        }
        Ok(())
    }

    /// What a woken vCPU waits, ns: `polled_wake_ns` if the host was polling for it, else the
    /// unpolled curve's median at its halt's length.
    pub fn wake_ns(&self, polled: bool, halt_ns: u64) -> u64 {
        let ns = if polled {
            self.polled_wake_ns
        } else {
            crate::device::wake_wait_ns(&self.unpolled_wake_curve, halt_ns as f64)
        };
        ns.max(0.0).round() as u64
    }
}

/// One vCPU's polling interval, carried from halt to halt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VcpuHalts {
    poll_ns: u64,
    /// The last halt counted: when it began, and whether its wake-up was polled for.
    last: Option<(u64, bool)>,
}

impl VcpuHalts {
    /// The interval the host polls for at this vCPU's next halt.
    pub fn poll_ns(&self) -> u64 {
        self.poll_ns
    }

    /// The halt that began at `from` ends at `to` with a wake-up: true if the host was still
    /// polling for it then. The interval adapts. A halt already counted (the same `from`: one
    /// asked about at its wake-up and again when its task begins to run) is not counted again
    /// and gives the answer it gave. A halt of no length (one task following another) is none.
    pub fn halt_ends(&mut self, p: &HaltPolling, from: u64, to: u64) -> bool {
        if let Some((at, polled)) = self.last {
            if at == from {
                return polled;
            }
        }
        let halt_ns = to.saturating_sub(from);
        if halt_ns == 0 {
            return true;
        }
        let polled = halt_ns <= self.poll_ns;
        self.poll_ns = p.next_interval(self.poll_ns, halt_ns);
        debug_assert!(
            self.poll_ns <= p.max_ns,
            "an interval beyond the most polling"
        );
        self.last = Some((from, polled));
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_halts_grow_the_interval_to_the_most_and_long_ones_shrink_it() {
        let p = HaltPolling::default();
        let mut v = VcpuHalts::default();
        // 150 µs halts from no polling: unpolled until the interval has doubled past them
        // (10, 20, 40, 80, 160 µs), then polled and the interval stays.
        let mut t = 0;
        let mut answers = Vec::new();
        for _ in 0..7 {
            answers.push(v.halt_ends(&p, t, t + 150_000));
            t += 1_000_000;
        }
        assert_eq!(answers, [false, false, false, false, false, true, true]);
        assert_eq!(v.poll_ns(), 160_000);
        // One halt past the most (2 ms) halves it; the next 50 µs halt is polled for.
        assert!(!v.halt_ends(&p, t, t + 2_000_000));
        assert_eq!(v.poll_ns(), 80_000);
        t += 3_000_000;
        assert!(v.halt_ends(&p, t, t + 50_000));
        // A host that resets instead (shrink 0) polls for nothing after one long halt.
        let reset = HaltPolling { shrink: 0, ..p };
        let mut w = VcpuHalts::default();
        for k in 0..8 {
            w.halt_ends(&reset, k * 1_000_000, k * 1_000_000 + 190_000);
        }
        assert_eq!(w.poll_ns(), 200_000);
        w.halt_ends(&reset, 10_000_000, 12_000_000);
        assert_eq!(w.poll_ns(), 0);
        assert!(!w.halt_ends(&reset, 13_000_000, 13_010_000));
        // Parameters as large as a costs file may give: the interval grows to the most
        // without overflowing.
        let huge = HaltPolling {
            max_ns: u64::MAX,
            grow: u64::MAX,
            ..p
        };
        assert_eq!(huge.next_interval(10_000, 20_000), u64::MAX);
    }

    #[test]
    fn a_halt_is_counted_once_and_one_of_no_length_is_none() {
        let p = HaltPolling::default();
        let mut v = VcpuHalts::default();
        assert!(!v.halt_ends(&p, 0, 50_000));
        assert_eq!(v.poll_ns(), 10_000);
        // Asked again when its task runs (a little later): the same answer, no second growth.
        assert!(!v.halt_ends(&p, 0, 70_000));
        assert_eq!(v.poll_ns(), 10_000);
        assert!(v.halt_ends(&p, 100_000, 100_000));
        assert_eq!(v.poll_ns(), 10_000);
        // No polling at all: never polled, the interval stays 0.
        let off = HaltPolling { max_ns: 0, ..p };
        let mut w = VcpuHalts::default();
        assert!(!w.halt_ends(&off, 0, 5_000));
        assert_eq!(w.poll_ns(), 0);
    }
}
