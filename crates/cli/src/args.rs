//! Value parsers shared by the subcommands' flags: ranges are checked when the command line is
//! parsed, so a bad value is refused before anything runs, with a message naming the flag.

/// A factor in (0, 1] (`--scale`). Negative input is parsed as a number and refused.
pub fn unit_fraction(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(format!("must be within (0, 1], got {v}"))
    }
}

/// A share in [0, 1].
pub fn share(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("must be within [0, 1], got {v}"))
    }
}

/// A positive, finite number (rates, durations).
pub fn positive(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("must be a positive number, got {v}"))
    }
}

/// Refuses a comma-separated list that names something twice (`--config a,a` would write its
/// results over themselves).
pub fn refuse_duplicates(flag: &str, names: &[String]) -> anyhow::Result<()> {
    nvmswap_core::config::refuse_duplicates(names).map_err(|e| anyhow::anyhow!("{flag}: {e}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranges() {
        assert!(super::unit_fraction("-0.5").unwrap_err().contains("(0, 1]"));
        assert_eq!(super::unit_fraction("0.1").unwrap(), 0.1);
        assert!(super::share("1.5").is_err());
        assert!(super::positive("0").is_err());
    }
}
