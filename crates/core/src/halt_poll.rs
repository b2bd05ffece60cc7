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

use crate::interrupted::TaskSpans;

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

/// The CPU that takes a block device's completion interrupts, for a substrate that charges the
/// interrupt's delivery to it: whether a task runs there (the spans the substrate tells it),
/// when its last interrupt ran, and the host's polling for its halts.
///
/// On a virtual machine a completion that finds its interrupt's vCPU halted waits for the host
/// to run that vCPU again, as a task woken onto a halted CPU does: soon if the host is still
/// polling for it, else after the unpolled wake-up of a halt that long
/// ([`HaltPollCosts::wake_ns`]). The device's own times were measured with requests back to
/// back from a thread on that CPU, which halts through each request and is polled for (the
/// calibration's service probe): they hold a polled wake-up already, so a completion is charged
/// what its wake-up costs beyond a polled one (nothing when polled for), and the device wakes
/// by the curves measured with the CPU running against that same back-to-back baseline
/// (crates/linux/src/wake_probe.rs). Calibrate's wake-up probe shows the part: a lone 4 KiB read
/// after 1 ms of quiet took 16 µs longer at the median with the interrupt's CPU halting in the
/// gap than with a low-priority thread keeping it running, 5 of them also back to back, and
/// after 100 µs 8 (docs/experiments/validation.md, "The interrupt's CPU, halted or running");
/// KVM's polling gives that edge: the requests back to back grow the vCPU's interval past their
/// 30-40 µs halts, a gap under the most polling (200 µs) grows it further, one beyond it halves
/// it below them, and the next request's halt is then not polled for.
///
/// Every interrupt ends a halt, so a run of completions close together keeps the vCPU polled
/// for. A completion that comes while the vCPU handles the one before (a batch signalled in one
/// interrupt) is delivered with it. A task woken onto or started on this CPU ends its halt too
/// ([`InterruptCpu::halt_ends`]): one record of the vCPU's halts for both.
#[derive(Debug, Clone)]
pub struct InterruptCpu {
    costs: HaltPollCosts,
    spans: TaskSpans,
    /// When the last interrupt was delivered (the vCPU ran its handler).
    last_interrupt: u64,
    halts: VcpuHalts,
    /// Each completion that found the vCPU halted: its halt, whether polled, its wait (ns).
    delivered: Vec<(u64, bool, u64)>,
    /// Completions that found it running (a task, or an interrupt's handler).
    found_running: u64,
}

impl InterruptCpu {
    pub fn new(costs: HaltPollCosts) -> Self {
        InterruptCpu {
            costs,
            spans: TaskSpans::default(),
            last_interrupt: 0,
            halts: VcpuHalts::default(),
            delivered: Vec::new(),
            found_running: 0,
        }
    }

    /// A task runs on the CPU from `from` until `until` (`u64::MAX`: until [`Self::idles_from`]).
    pub fn runs(&mut self, from: u64, until: u64) {
        self.spans.runs(from, until);
    }

    /// The CPU's task left it at `t`, nothing runs there after.
    pub fn idles_from(&mut self, t: u64) {
        self.spans.idles_from(t);
    }

    /// Since when the CPU has halted at `t`: None while a task runs there, as far as the spans
    /// told say (a time before the last span's start is judged by the span before it), or while
    /// an interrupt delivered after `t` is handled.
    pub fn idle_since(&self, t: u64) -> Option<u64> {
        if t < self.last_interrupt {
            return None;
        }
        Some(self.spans.idle_since(t)?.max(self.last_interrupt))
    }

    /// A device completion at `c` raises the interrupt: when the CPU runs it, `c` itself if
    /// it is running or polled for, else after its unpolled wake-up less a polled one (which
    /// the device's times hold). Completions must come in time order.
    pub fn deliver(&mut self, c: u64) -> u64 {
        if c < self.last_interrupt {
            // The vCPU is awake for the interrupt before: this one is handled with it.
            self.found_running += 1;
            return self.last_interrupt;
        }
        let Some(since) = self.idle_since(c) else {
            self.found_running += 1;
            self.last_interrupt = c;
            return c;
        };
        let halt_ns = c - since;
        let polled = self.halts.halt_ends(&self.costs.host, since, c);
        let wait = if halt_ns == 0 {
            0
        } else {
            let polled_ns = self.costs.wake_ns(true, halt_ns);
            self.costs
                .wake_ns(polled, halt_ns)
                .saturating_sub(polled_ns)
        };
        self.delivered.push((halt_ns, polled, wait));
        self.last_interrupt = c + wait;
        c + wait
    }

    /// A task is woken onto the CPU, or starts there, at `t`, its halt begun at `since` as the
    /// substrate's schedule knows it: whether the host was polling for it then, and when the
    /// halt really began (a later interrupt, or a task this record knows of, ended the one
    /// before). None while the CPU runs at `t` (an interrupt's handler, a task told here).
    pub fn halt_ends(&mut self, since: u64, t: u64) -> Option<(bool, u64)> {
        let since = since.max(self.idle_since(t)?).min(t);
        Some((self.halts.halt_ends(&self.costs.host, since, t), since))
    }

    /// The completions' deliveries so far: those that found the CPU halted (halt ns, polled,
    /// wait ns), and how many found it running.
    pub fn deliveries(&self) -> (&[(u64, bool, u64)], u64) {
        (&self.delivered, self.found_running)
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
    fn interrupt_cpu() -> InterruptCpu {
        // Polled: 5 µs; unpolled: 15 µs after a 50 µs halt, 115 µs after 20 ms (linear between,
        // from 0 at 0).
        InterruptCpu::new(HaltPollCosts {
            polled_wake_ns: 5_000.0,
            unpolled_wake_curve: vec![
                crate::device::WakePoint {
                    idle_ns: 50_000.0,
                    extra_ns: 15_000.0,
                    extra_p90_ns: None,
                },
                crate::device::WakePoint {
                    idle_ns: 20_050_000.0,
                    extra_ns: 115_000.0,
                    extra_p90_ns: None,
                },
            ],
            host: HaltPolling::default(),
        })
    }

    #[test]
    fn a_completion_waits_for_a_halted_interrupt_cpu_as_the_hosts_polling_prices_it() {
        let mut irq = interrupt_cpu();
        // Halted from the start: 50 µs halts between completions are not polled for until the
        // interval has grown past them (10, 20, 40, 80 µs): 15 µs less the polled 5 µs, which
        // the device's times hold, then nothing.
        let mut t = 0;
        let mut waits = Vec::new();
        for _ in 0..6 {
            t += 50_000;
            let at = irq.deliver(t);
            waits.push(at - t);
            t = at;
        }
        assert_eq!(waits, [10_000, 10_000, 10_000, 10_000, 0, 0]);
        // A halt beyond the most polling (1 ms) is not polled for and halves the interval (40
        // µs): the next 50 µs halt is not polled for either, as calibrate's probe found after
        // gaps of 0.5 ms and more.
        t += 1_000_000;
        assert_eq!(irq.deliver(t) - t, 14_750);
        t += 14_750 + 50_000;
        assert_eq!(irq.deliver(t) - t, 10_000);
        // A task running on the CPU takes the interrupt at once; a completion signalled in the
        // same interrupt as one being delivered is handled with it.
        t += 100_000;
        irq.runs(t, u64::MAX);
        assert_eq!(irq.deliver(t + 30_000), t + 30_000);
        irq.idles_from(t + 40_000);
        let c = t + 1_040_000;
        assert_eq!(
            irq.deliver(c),
            c + 14_750,
            "1 ms halted since the task left"
        );
        assert_eq!(
            irq.deliver(c + 5_000),
            c + 14_750,
            "with the interrupt before"
        );
        let (delivered, found_running) = irq.deliveries();
        assert_eq!((delivered.len(), found_running), (9, 2));
        assert_eq!(delivered[6], (1_000_000, false, 14_750));
        assert_eq!(delivered[7], (50_000, false, 10_000));
        // A completion behind the schedule told (the span after it already began) is judged by
        // the span before: halted from that span's end, running inside it.
        let mut irq = interrupt_cpu();
        irq.runs(100_000, 200_000);
        irq.runs(1_300_000, u64::MAX);
        assert_eq!(irq.idle_since(150_000), None);
        assert_eq!(irq.idle_since(1_250_000), Some(200_000));
        assert_eq!(irq.deliver(1_250_000), 1_250_000 + 15_000);
        // A task woken onto the CPU ends its halt at the later of the schedule's idle start and
        // the last interrupt; none while an interrupt is being handled or a task runs there.
        assert_eq!(irq.halt_ends(200_000, 1_260_000), None);
        assert_eq!(irq.halt_ends(200_000, 1_290_000), Some((false, 1_265_000)));
        assert_eq!(irq.halt_ends(200_000, 1_400_000), None);
    }
}
