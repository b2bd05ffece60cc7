//! Reading and writing the kernel's text files (/proc, /sys) with the path in every error.

use std::path::Path;

use crate::error::LinuxError;

/// The file's contents with surrounding white space removed.
pub fn read_trimmed(path: impl AsRef<Path>) -> Result<String, LinuxError> {
    let path = path.as_ref();
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| LinuxError::io("read", path, e))
}

/// Write `value` to a kernel attribute (one write, as the kernel expects).
pub fn write_value(path: impl AsRef<Path>, value: &str) -> Result<(), LinuxError> {
    let path = path.as_ref();
    std::fs::write(path, value).map_err(|e| LinuxError::io("write", path, e))
}

/// The selected entry of a sysfs choice list such as `none [mq-deadline] kyber` or
/// `lzo [lz4] zstd`; the whole text when nothing is bracketed.
pub fn selected_choice(list: &str) -> String {
    list.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(list.trim())
        .to_string()
}

/// Active swap areas from /proc/swaps (their file names, in kernel order).
pub fn active_swaps() -> Result<Vec<String>, LinuxError> {
    let text = std::fs::read_to_string("/proc/swaps")
        .map_err(|e| LinuxError::io("read", "/proc/swaps", e))?;
    Ok(text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect())
}

/// Counters of /proc/vmstat by name.
pub fn vmstat() -> Result<std::collections::BTreeMap<String, u64>, LinuxError> {
    let text = std::fs::read_to_string("/proc/vmstat")
        .map_err(|e| LinuxError::io("read", "/proc/vmstat", e))?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect())
}

/// A field of /proc/meminfo in KiB (`Writeback`, `Zswap`, ...), or None where the kernel has no
/// such line.
pub fn meminfo_kib(field: &str) -> Option<u64> {
    meminfo_field(&std::fs::read_to_string("/proc/meminfo").ok()?, field)
}

fn meminfo_field(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (name, rest) = l.split_once(':')?;
        (name == field)
            .then(|| rest.split_whitespace().next()?.parse().ok())
            .flatten()
    })
}

/// Writes every filesystem's dirty page cache back and waits for it (`sync(2)`), so that the
/// flusher does not write back, during a run, what was written before it (a build, an earlier
/// run's output): on this machine such 4 MiB writes held the swap file's writes back by 20-40 ms
/// (docs/experiments/validation.md, "The write tail").
pub fn write_back_dirty_pages() {
    // SAFETY: sync(2) takes no arguments, touches no memory of ours and cannot fail.
    unsafe { libc::sync() }
}

/// KiB the guest has reported free to its hypervisor so far (virtio-balloon free page reporting,
/// /sys/module/page_reporting/parameters/reported_kib, which this machine's kernel exposes; the
/// host discards what is reported), or None where the kernel has no such counter.
pub fn free_page_reported_kib() -> Option<u64> {
    read_trimmed("/sys/module/page_reporting/parameters/reported_kib")
        .ok()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meminfo_field_is_found_by_its_whole_name() {
        let text = "MemTotal:       24576000 kB\nZswap:              1536 kB\n\
                    Zswapped:           6144 kB\nWriteback:             0 kB\n";
        assert_eq!(meminfo_field(text, "Zswap"), Some(1536));
        assert_eq!(meminfo_field(text, "Zswapped"), Some(6144));
        assert_eq!(meminfo_field(text, "Writeback"), Some(0));
        assert_eq!(meminfo_field(text, "Zswa"), None);
    }

    #[test]
    fn selected_choice_finds_the_bracketed_entry() {
        assert_eq!(
            selected_choice("none [mq-deadline] kyber bfq"),
            "mq-deadline"
        );
        assert_eq!(selected_choice("[lzo-rle] lzo lz4"), "lzo-rle");
        assert_eq!(selected_choice("lz4"), "lz4");
    }
}
