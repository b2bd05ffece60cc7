//! What a device's completion interrupt takes from the task it interrupts.
//!
//! A disk with one hardware queue raises its completion interrupt on one CPU (this project's
//! machine: vda's `virtio1-req.0` on CPU 1 of 2). The handler (virtio's `vring_interrupt`,
//! `blk_mq_complete_request`, run in place where the submitter's CPU shares its cache, as both
//! CPUs here do with `rq_affinity` 1) completes the request and its bio: `end_swap_bio_read`
//! unlocks the page and wakes its reader, `end_swap_bio_write` ends its writeback. On a kernel
//! built without `CONFIG_IRQ_TIME_ACCOUNTING` (this machine's) that time is charged to whatever
//! task ran on the CPU when the interrupt came: a tab faulting through its own second pays for
//! another tab's read or for reclaim's writes. A CPU that idles when the interrupt comes charges
//! it to no task (its idle loop).
//!
//! [`CompletionInterrupts`] keeps the interrupt CPU's task spans as a substrate's schedule tells
//! them and, for each completion there while a task runs, what the completion takes from it
//! (`costs.completion_irq_target_read_ns` and `_write_ns`, measured by `nvmswap linux
//! calibrate`'s completion probe: a thread spinning on the interrupt's CPU times its pauses in
//! each lone read's window, the read waited for on another CPU or not at all,
//! nvmswap_linux::completion_cpu_probe). The substrate adds what is
//! owed to the task's clock at its next step, as it does for a flush IPI's
//! (crate::tlb `Tlbs::take_interrupted`).

use crate::block::Op;
use crate::Nanos;

/// A CPU's task spans as a schedule tells them, one after another: whether a task runs there at
/// a time, the last span's predecessor judging a time before it began.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskSpans {
    /// The last span told, `[busy_from, busy_until)` (`u64::MAX`: until told it idles), and the
    /// end of the span before it.
    busy_from: Nanos,
    busy_until: Nanos,
    before_until: Nanos,
}

impl TaskSpans {
    /// A task runs on the CPU from `from` until `until` (`u64::MAX`: until [`Self::idles_from`]).
    /// A span told before the last one's start is not kept.
    pub fn runs(&mut self, from: Nanos, until: Nanos) {
        if from >= self.busy_from {
            self.before_until = self.busy_until.min(from);
            self.busy_from = from;
            self.busy_until = until.max(from);
        }
    }

    /// The CPU's task left it at `t`, nothing runs there after.
    pub fn idles_from(&mut self, t: Nanos) {
        if self.busy_from <= t && t < self.busy_until {
            self.busy_until = t;
        }
    }

    /// None while a task runs at `t`, as far as the spans told say (a time before the last
    /// span's start is judged by the span before it); else when the CPU's last task left it.
    pub fn idle_since(&self, t: Nanos) -> Option<Nanos> {
        if t >= self.busy_from {
            (t >= self.busy_until).then_some(self.busy_until)
        } else {
            (t >= self.before_until).then_some(self.before_until)
        }
    }
}

/// The completion interrupts' charges to the tasks running on their CPU.
#[derive(Debug, Clone)]
pub struct CompletionInterrupts {
    /// What one completion takes from the running task, by direction (ns).
    read_ns: Nanos,
    write_ns: Nanos,
    spans: TaskSpans,
    /// Taken from the CPU's tasks and not yet added to a task's clock.
    owed_ns: Nanos,
    /// Completions that found a task running, and those that found the CPU idle.
    found_task: u64,
    found_idle: u64,
    /// Everything charged so far (ns).
    charged_ns: Nanos,
}

/// [`CompletionInterrupts`]' counts for a run's `extra`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterruptCharges {
    pub found_task: u64,
    pub found_idle: u64,
    pub charged_ns: Nanos,
}

impl CompletionInterrupts {
    pub fn new(read_ns: Nanos, write_ns: Nanos) -> Self {
        CompletionInterrupts {
            read_ns,
            write_ns,
            spans: TaskSpans::default(),
            owed_ns: 0,
            found_task: 0,
            found_idle: 0,
            charged_ns: 0,
        }
    }

    /// A task runs on the interrupt's CPU from `from` until `until` ([`TaskSpans::runs`]).
    pub fn runs(&mut self, from: Nanos, until: Nanos) {
        self.spans.runs(from, until);
    }

    /// The interrupt's CPU idles from `t`.
    pub fn idles_from(&mut self, t: Nanos) {
        self.spans.idles_from(t);
    }

    /// A request in direction `op` completed with its interrupt handled at `t`: the task
    /// running there then, if any, owes the completion's time. Returns whether one did.
    pub fn completed(&mut self, op: Op, t: Nanos) -> bool {
        if self.spans.idle_since(t).is_some() {
            self.found_idle += 1;
            return false;
        }
        let ns = match op {
            Op::Read => self.read_ns,
            Op::Write => self.write_ns,
        };
        self.found_task += 1;
        self.owed_ns += ns;
        self.charged_ns += ns;
        true
    }

    /// What the completions took from the CPU's tasks since the last call: the task that steps
    /// there next pays it.
    pub fn take_owed(&mut self) -> Nanos {
        std::mem::take(&mut self.owed_ns)
    }

    /// Forgets what no task was charged with yet (a second's start: the time was the
    /// foreground's, whose work the substrate does not lengthen by it); returns it.
    pub fn clear_owed(&mut self) -> Nanos {
        std::mem::take(&mut self.owed_ns)
    }

    pub fn charges(&self) -> InterruptCharges {
        InterruptCharges {
            found_task: self.found_task,
            found_idle: self.found_idle,
            charged_ns: self.charged_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_tell_whether_a_task_runs_at_a_time_the_last_ones_predecessor_before_it() {
        let mut s = TaskSpans::default();
        s.runs(100, 200);
        s.runs(300, u64::MAX);
        assert_eq!(s.idle_since(150), None, "inside the span before");
        assert_eq!(s.idle_since(250), Some(200));
        assert_eq!(s.idle_since(1_000), None, "open span");
        s.idles_from(400);
        assert_eq!(s.idle_since(1_000), Some(400));
        assert_eq!(s.idle_since(350), None);
        // A span told out of order (before the last's start) is not kept.
        s.runs(500, 600);
        s.runs(50, 60);
        assert_eq!(s.idle_since(1_000), Some(600));
    }

    #[test]
    fn a_completion_charges_the_task_running_on_its_cpu_and_nothing_to_an_idle_one() {
        let mut irq = CompletionInterrupts::new(3_000, 5_000);
        irq.runs(1_000, 10_000);
        assert!(irq.completed(Op::Read, 2_000));
        assert!(irq.completed(Op::Write, 9_999));
        assert!(!irq.completed(Op::Read, 10_000), "the span has ended");
        assert_eq!(irq.take_owed(), 8_000);
        assert_eq!(irq.take_owed(), 0, "taken once");
        irq.runs(20_000, u64::MAX);
        assert!(irq.completed(Op::Write, 25_000));
        assert_eq!(irq.clear_owed(), 5_000);
        assert_eq!(irq.take_owed(), 0, "a second's start forgets it");
        irq.idles_from(30_000);
        assert!(!irq.completed(Op::Read, 31_000));
        assert_eq!(
            irq.charges(),
            InterruptCharges {
                found_task: 3,
                found_idle: 2,
                charged_ns: 13_000
            }
        );
    }
}
