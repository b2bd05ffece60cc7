//! The CPUs a run's tab processes may use (`tab_cpus` of a linux configuration).
//!
//! Why a run would confine its tabs: reclaim flushes the TLBs of every CPU the owners of the
//! pages it writes have run on and that is not in lazy TLB mode, with an IPI it waits for
//! (docs/experiments/validation.md, "Reclaim's TLB shootdowns"). Tabs that only ever ran on one
//! CPU have only that CPU in their `mm_cpumask`, so their reclaim flushes locally and sends
//! none: the kernel's run without the mechanism, against which its cost can be measured.

use crate::error::LinuxError;

/// A set of CPUs prepared before a fork, so that a child can take it without allocating.
#[derive(Clone, Copy)]
pub struct CpuSet {
    set: libc::cpu_set_t,
}

impl std::fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.cpus()).finish()
    }
}

impl CpuSet {
    /// The set of `cpus`, each of which this process may run on now (online and in its own
    /// affinity); an error naming the first that is not.
    pub fn of(config: &str, cpus: &[u32]) -> Result<CpuSet, LinuxError> {
        let allowed = current_affinity()?;
        // SAFETY: an all-zero cpu_set_t is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in cpus {
            let c = cpu as usize;
            // SAFETY: CPU_ISSET and CPU_SET check `c` against the set's size.
            if c >= libc::CPU_SETSIZE as usize || !unsafe { libc::CPU_ISSET(c, &allowed) } {
                return Err(LinuxError::Config {
                    name: config.to_string(),
                    detail: format!(
                        "tab_cpus: CPU {cpu} is not one this process may run on ({})",
                        list(&allowed)
                    ),
                });
            }
            // SAFETY: as above.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        Ok(CpuSet { set })
    }

    /// The set a configuration's `tab_cpus` names, or None when it names none (every CPU).
    pub fn of_config(config: &crate::config::LinuxConfig) -> Result<Option<CpuSet>, LinuxError> {
        config
            .tab_cpus
            .as_deref()
            .map(|cpus| CpuSet::of(&config.name, cpus))
            .transpose()
    }

    /// The CPUs in the set, in order.
    pub fn cpus(&self) -> Vec<u32> {
        cpus_of(&self.set)
    }

    /// Confines the calling thread (a freshly forked child: its only thread) to the set. Makes
    /// one system call and does not allocate, so a child of a multi-threaded parent may call
    /// it between fork and exec.
    pub fn apply_no_alloc(&self) -> bool {
        // SAFETY: sched_setaffinity only reads the set, which lives in this struct.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.set) == 0
        }
    }
}

/// Runs `f` (a fork, or any work that must stay on those CPUs) with the calling thread confined to `cpus`, then puts the thread's own
/// affinity back. A child forked inside inherits the set and so never runs elsewhere, not even
/// before it could confine itself: its memory's `mm_cpumask` holds only those CPUs.
pub fn forking_on<R>(cpus: Option<&CpuSet>, f: impl FnOnce() -> R) -> Result<R, LinuxError> {
    let Some(cpus) = cpus else {
        return Ok(f());
    };
    let saved = CpuSet {
        set: current_affinity()?,
    };
    if !cpus.apply_no_alloc() {
        return Err(LinuxError::io(
            "sched_setaffinity",
            format!("{:?}", cpus.cpus()),
            std::io::Error::last_os_error(),
        ));
    }
    let r = f();
    // Back to where the driver may run; a failure here would only confine the driver.
    let _ = saved.apply_no_alloc();
    Ok(r)
}

/// The CPUs this process may run on now, in order.
pub fn allowed_cpus() -> Result<Vec<u32>, LinuxError> {
    Ok(cpus_of(&current_affinity()?))
}

fn current_affinity() -> Result<libc::cpu_set_t, LinuxError> {
    // SAFETY: an all-zero cpu_set_t is valid; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer and size are those of `set`.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(LinuxError::io(
            "sched_getaffinity",
            "this process",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(set)
}

fn cpus_of(set: &libc::cpu_set_t) -> Vec<u32> {
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` is below the set's size.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
        .map(|c| c as u32)
        .collect()
}

fn list(set: &libc::cpu_set_t) -> String {
    let cpus: Vec<String> = cpus_of(set).iter().map(|c| c.to_string()).collect();
    cpus.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_set_holds_the_cpus_this_process_may_use_and_names_one_it_may_not() {
        let allowed = cpus_of(&current_affinity().unwrap());
        let first = allowed[0];
        let set = CpuSet::of("t", &[first]).unwrap();
        assert_eq!(set.cpus(), vec![first]);
        let err = CpuSet::of("t", &[first, 1023]).unwrap_err().to_string();
        assert!(err.contains("tab_cpus: CPU 1023 is not one"), "{err}");
    }

    #[test]
    fn a_fork_on_a_cpu_set_confines_the_child_and_gives_the_parent_its_cpus_back() {
        let before = cpus_of(&current_affinity().unwrap());
        let first = before[0];
        let set = CpuSet::of("t", &[first]).unwrap();
        let result = crate::worker::Mapping::new(8, true).unwrap();
        let words = result.words();
        let child = || {
            // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
            let mut mine: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            // SAFETY: the pointer and size are those of `mine`.
            unsafe {
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut mine)
            };
            // SAFETY: CPU_COUNT reads the set.
            let n = unsafe { libc::CPU_COUNT(&mine) };
            words[0].store(n as u64, std::sync::atomic::Ordering::SeqCst);
            0
        };
        // SAFETY: the child makes system calls and writes to memory mapped before the fork.
        let pid = forking_on(Some(&set), || unsafe { crate::worker::fork_child(child) })
            .unwrap()
            .unwrap();
        assert_eq!(crate::worker::wait_child(pid, || {}).unwrap(), 0);
        assert_eq!(words[0].load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(cpus_of(&current_affinity().unwrap()), before);
    }

    #[test]
    fn a_child_confined_to_one_cpu_runs_only_there() {
        let first = cpus_of(&current_affinity().unwrap())[0];
        let set = CpuSet::of("t", &[first]).unwrap();
        let result = crate::worker::Mapping::new(8, true).unwrap();
        let words = result.words();
        let child = || {
            if !set.apply_no_alloc() {
                return 2;
            }
            // SAFETY: sched_getcpu has no preconditions.
            let cpu = unsafe { libc::sched_getcpu() };
            words[0].store(cpu as u64, std::sync::atomic::Ordering::SeqCst);
            0
        };
        // SAFETY: the child makes system calls and writes to memory mapped before the fork.
        let pid = unsafe { crate::worker::fork_child(child) }.unwrap();
        assert_eq!(crate::worker::wait_child(pid, || {}).unwrap(), 0);
        assert_eq!(
            words[0].load(std::sync::atomic::Ordering::SeqCst),
            first as u64
        );
    }
}
