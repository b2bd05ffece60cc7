//! A real headless Chromium started by us inside the run's memory cgroup and driven over the
//! DevTools protocol (the `headless_chrome` crate, connected to the browser we launched).
//!
//! The browser runs in its own session (so a Ctrl-C at the terminal reaches only us, and we decide
//! when it stops) and in the cgroup (joined between fork and exec, so every process it forks —
//! zygote, renderers, GPU, network — is charged to the cgroup). [`Chromium`] kills every one of
//! them when dropped: the process group first, then whatever is left in the cgroup; the set-up's
//! restore removes the cgroup after killing its tasks once more.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use headless_chrome::{Browser, Tab};

use crate::affinity::CpuSet;
use crate::error::LinuxError;

/// Candidates for the Chromium binary (Debian's `chromium` package first).
const BINARIES: [&str; 3] = [
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
];

/// The Chromium binary, or why there is none.
pub fn find_binary() -> Result<PathBuf, LinuxError> {
    if let Some(p) = std::env::var_os("NVMSWAP_CHROMIUM") {
        return Ok(PathBuf::from(p));
    }
    BINARIES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or_else(|| LinuxError::Kernel {
            what: "chromium".into(),
            detail: format!(
                "no Chromium binary ({}); scripts/install-deps installs Debian's chromium, \
                 or set NVMSWAP_CHROMIUM",
                BINARIES.join(", ")
            ),
        })
}

fn cdp(what: &str, e: impl std::fmt::Display) -> LinuxError {
    LinuxError::Worker(format!("chromium: {what}: {e}"))
}

/// The browser we started. Dropping it kills every process it started.
pub struct Chromium {
    child: Child,
    /// Stops the watchdog thread.
    watchdog_stop: Arc<std::sync::atomic::AtomicBool>,
    pub browser: Browser,
    /// The cgroup the browser runs in (its tasks are killed on drop too).
    cgroup: PathBuf,
    pub user_data_dir: PathBuf,
}

impl Chromium {
    /// Start Chromium in cgroup `cg`, on `cpus` (every CPU if None; its processes inherit it),
    /// with a fresh profile in `work_dir`, and connect to it.
    pub fn launch(
        cg: &Path,
        cpus: Option<CpuSet>,
        work_dir: &Path,
    ) -> Result<Chromium, LinuxError> {
        let bin = find_binary()?;
        let user_data_dir = work_dir.join("profile");
        std::fs::create_dir_all(&user_data_dir)
            .map_err(|e| LinuxError::io("mkdir", &user_data_dir, e))?;
        let log = work_dir.join("chromium.log");
        let log_file =
            std::fs::File::create(&log).map_err(|e| LinuxError::io("create", &log, e))?;
        let procs = CString::new(cg.join("cgroup.procs").display().to_string())
            .map_err(|_| LinuxError::Worker("cgroup path has a NUL byte".into()))?;
        let mut cmd = Command::new(&bin);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--remote-debugging-port=0",
            "--remote-allow-origins=*",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-gpu",
            "--allow-file-access-from-files",
            // A Chromebook-sized window (1366x768 is the common Chromebook panel).
            "--window-size=1366,768",
            // One renderer per tab, as on a device with plenty of RAM: same-site main frames are
            // not folded into one process, and Chrome discards nothing by itself (our rule does).
            "--disable-features=ProcessPerSiteUpToMainFrameThreshold,SpareRendererForSitePerProcess,\
             Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
        ])
        .arg(format!("--user-data-dir={}", user_data_dir.display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log_file));
        // SAFETY: the closure runs between fork and exec and only makes system calls on memory
        // prepared before the fork (the C string, the CPU set): setsid, the affinity, then
        // joining the cgroup without allocating.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || {
                libc::setsid();
                if cpus.is_some_and(|c| !c.apply_no_alloc()) {
                    return Err(std::io::Error::other("setting the CPU affinity"));
                }
                if crate::worker::join_cgroup_no_alloc(&procs) {
                    Ok(())
                } else {
                    Err(std::io::Error::other("joining the memory cgroup"))
                }
            });
        }
        let child = cmd.spawn().map_err(|e| LinuxError::io("start", &bin, e))?;
        let pid = child.id();
        // From here on a failure must still kill the browser: build the guard's parts first.
        let port_file = user_data_dir.join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(60);
        let ws = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break Ok(format!("ws://127.0.0.1:{port}{path}"));
                }
            }
            if Instant::now() > deadline || crate::signals::interrupted() {
                break Err(LinuxError::Worker(format!(
                    "chromium (pid {pid}) did not open its DevTools port within 60 s; see {}",
                    log.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let ws = match ws {
            Ok(ws) => ws,
            Err(e) => {
                kill_tree(pid as i32, cg);
                return Err(e);
            }
        };
        // The idle timeout is also how long one DevTools call may wait for its answer: long
        // enough for a switch under heavy swap and for phase 3's 10 s sleep without events.
        match Browser::connect_with_timeout(ws, Duration::from_secs(120)) {
            Ok(browser) => {
                browser.set_default_timeout(Duration::from_secs(120));
                // A DevTools call blocks until the browser answers, which under thrashing can take
                // long; on SIGINT/SIGTERM the watchdog kills the browser so the call fails at once
                // and the run stops.
                let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let (stop2, cg2) = (stop.clone(), cg.to_path_buf());
                std::thread::spawn(move || {
                    use std::sync::atomic::Ordering;
                    while !stop2.load(Ordering::SeqCst) {
                        if crate::signals::interrupted() {
                            kill_tree_no_reap(pid as i32, &cg2);
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                });
                Ok(Chromium {
                    child,
                    watchdog_stop: stop,
                    browser,
                    cgroup: cg.to_path_buf(),
                    user_data_dir,
                })
            }
            Err(e) => {
                kill_tree(pid as i32, cg);
                Err(cdp("connect", e))
            }
        }
    }

    /// The browser process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Open `url` in a new tab and wait until the page says it is built (`__nvmswapReady`),
    /// `timeout` at most. Returns the tab.
    pub fn open(&self, url: &str, timeout: Duration) -> Result<Arc<Tab>, LinuxError> {
        let tab = self.browser.new_tab().map_err(|e| cdp("new tab", e))?;
        tab.navigate_to(url).map_err(|e| cdp("navigate", e))?;
        let deadline = Instant::now() + timeout;
        loop {
            if crate::signals::interrupted() {
                return Err(LinuxError::Interrupted);
            }
            let ready = tab
                .evaluate("window.__nvmswapReady === true", false)
                .map_err(|e| cdp("ready check", e))?;
            if ready.value == Some(serde_json::Value::Bool(true)) {
                return Ok(tab);
            }
            if Instant::now() > deadline {
                return Err(cdp("load", format!("{url} not ready within {timeout:?}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Renderer processes of this browser (by their command line), with their pids.
    pub fn renderers(&self) -> Vec<u32> {
        processes_in(&self.cgroup)
            .into_iter()
            .filter(|&pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .map(|c| {
                        let c = String::from_utf8_lossy(&c);
                        c.contains("--type=renderer") && !c.contains("--extension-process")
                    })
                    .unwrap_or(false)
            })
            .collect()
    }
}

/// Activate `tab` and wait until two animation frames have been presented (the Tast test's
/// `WaitForRender` after `chrome.tabs.update(active)`); returns the time it took.
pub fn switch_to(tab: &Tab) -> Result<Duration, LinuxError> {
    let t0 = Instant::now();
    tab.activate().map_err(|e| cdp("activate", e))?;
    tab.evaluate(
        "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(1))))",
        true,
    )
    .map_err(|e| cdp("two animation frames", e))?;
    Ok(t0.elapsed())
}

/// The Tast test's `wiggle`: scroll down 50 times by 100 px, 50 ms apart, then jump back up.
/// `pause` scales the 50 ms (the run's --scale does not change it; tests pass less).
pub fn wiggle(tab: &Tab, steps: u32, pause: Duration) -> Result<(), LinuxError> {
    for _ in 0..steps {
        if crate::signals::interrupted() {
            return Err(LinuxError::Interrupted);
        }
        tab.evaluate("window.scrollBy(0, 100)", false)
            .map_err(|e| cdp("scroll", e))?;
        std::thread::sleep(pause);
    }
    tab.evaluate(&format!("window.scrollBy(0, -{})", 100 * steps), false)
        .map_err(|e| cdp("scroll back", e))?;
    std::thread::sleep(pause);
    Ok(())
}

/// Pids of the processes in cgroup `cg`.
pub fn processes_in(cg: &Path) -> Vec<u32> {
    std::fs::read_to_string(cg.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// SIGKILL the browser's process group, reap the browser, then kill whatever of it is still in
/// the cgroup (renderers re-parented elsewhere, a zygote in another group).
fn kill_tree(pid: i32, cg: &Path) {
    // SAFETY: signalling our own child's process group (it called setsid, so its pgid is its pid)
    // and reaping our child.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        libc::kill(pid, libc::SIGKILL);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
    }
    for _ in 0..50 {
        let left = processes_in(cg);
        if left.is_empty() {
            return;
        }
        for p in left {
            if p as i32 == std::process::id() as i32 {
                continue;
            }
            // SAFETY: kill(2) on a pid in the cgroup we created for this run.
            unsafe { libc::kill(p as i32, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGKILL the browser's process group and the cgroup's tasks without reaping (the watchdog;
/// the owner reaps on drop).
fn kill_tree_no_reap(pid: i32, cg: &Path) {
    // SAFETY: signalling our own child's process group and the tasks of our cgroup.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    for p in processes_in(cg) {
        if p != std::process::id() {
            // SAFETY: as above.
            unsafe { libc::kill(p as i32, libc::SIGKILL) };
        }
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        self.watchdog_stop
            .store(true, std::sync::atomic::Ordering::SeqCst);
        kill_tree(self.child.id() as i32, &self.cgroup);
    }
}

/// Pids of live processes whose command line names `user_data_dir` (for tests and for a check
/// after a run that nothing of the browser survived).
pub fn processes_with_profile(user_data_dir: &Path) -> Vec<u32> {
    let needle = user_data_dir.display().to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(&needle))
                .unwrap_or(false)
        })
        .collect()
}
