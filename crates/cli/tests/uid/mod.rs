//! The test process's effective uid, for the tests that need root (shared by the test binaries
//! that include it).

/// The effective uid from /proc, without libc (`u32::MAX` when it cannot be read).
pub fn effective_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(str::to_string))
        })
        .and_then(|u| u.parse().ok())
        .unwrap_or(u32::MAX)
}
