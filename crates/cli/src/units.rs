//! Sizes on the command line: `64MiB`, `128GiB`, `4096`, `1.5GB`.

/// Parses a byte size with an optional binary (KiB, MiB, GiB, TiB) or decimal (KB, MB, GB, TB)
/// suffix; a bare number is bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a size (examples: 4096, 64MiB, 128GiB)"))?;
    let factor: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tib" => 1024f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        other => {
            return Err(format!(
                "unknown size unit '{other}' in '{text}' (use KiB, MiB, GiB, TiB)"
            ))
        }
    };
    let bytes = value * factor;
    if !bytes.is_finite() || bytes > u64::MAX as f64 {
        return Err(format!("size '{text}' is too large"));
    }
    Ok(bytes.round() as u64)
}

/// Formats bytes with a binary suffix, e.g. `64MiB`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0}{}", UNITS[u])
    } else {
        format!("{v:.1}{}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("128GiB"), Ok(128 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("1.5GB"), Ok(1_500_000_000));
        assert!(parse_size("lots").unwrap_err().contains("not a size"));
        assert!(parse_size("3furlongs").unwrap_err().contains("furlongs"));
        assert_eq!(format_size(64 << 20), "64MiB");
    }
}
