//! The tab model measured on real Chromium: `profiles/workloads/chromium-measured.toml`, written
//! by `nvmswap workload measure` (crates/linux/src/chromium/measure.rs says how each figure is
//! taken), read here into the [`SiteType`]s every substrate runs. This is the default tab model
//! ([`super::tabs::default_sites`]): no parameter of it is chosen by us except the amount of data
//! each generated page builds (crates/linux/src/chromium/pages.rs), which the renderer's
//! footprint is then measured from.
//!
//! How a measured figure becomes a model parameter (one rule each, no fitting):
//!
//! | model field | measured figure |
//! |---|---|
//! | `footprint_bytes` | `anon_mib`: the renderer's anonymous memory after load |
//! | `working_set_share` | `switch_touch_share`: mean share of anon pages a switch touched |
//! | `working_set_shift` | `switch_new_share`: share of a visit's set the previous visit did not touch |
//! | `switch_run_log2`, `switch_gap_log2` | the same: lengths of the runs of touched neighbours and of the gaps between them ([`super::layout`]) |
//! | `switch_places` | derived from `switch_unseen_shares` by [`places_for`]: how many places a run moves between |
//! | `background_run_log2`, `background_gap_log2` | the same, of the background intervals' sets |
//! | `write_share` | `write_share`: share of the switch's touched pages that were also written |
//! | `compress_ratio` | `lzo_rle_ratio`: the kernel's lzo-rle over the non-same-filled sampled pages |
//! | `same_filled_share` | `same_filled_share` |
//! | `render_cpu_ns`, `load_cpu_ns` | `render_cpu_ms`, `load_cpu_ms`: renderer CPU time |
//! | `background_touch_share_per_s` | `background_touch_share_per_s` |
//! | `background_overlap` | `background_overlap` |
//! | `growth_bytes_per_s` | `anon_growth_mib_per_min`, where positive (see below) |
//! | `scroll_touch_share` | `wiggle_extra_share`: share of anon pages the Tast wiggle after a switch touched beyond the switch's set |
//!
//! What the model cannot take: a negative growth (the renderer's garbage collector returned
//! memory after load: six of seven kinds in the bundled measurement) becomes 0, because a tab in
//! the model never shrinks. What the model assumes where the measurement is silent: the order
//! of a switch's touches, which runs move together, that background sets keep wandering
//! ([`super::layout`] says why), and that a scroll's pages lie and move as a switch's do (one
//! scroll per kind was measured, the last visit's; [`super::life::TabLife::scroll_touches`]). All are listed
//! in docs/experiments/chromium.md.

use serde::Deserialize;

use super::layout::places_for;
use super::tabs::SiteType;
use crate::{MIB, NS_PER_MS};

/// The bundled measurement (see the module text for how it was made).
pub const BUNDLED: &str = include_str!("../../../../profiles/workloads/chromium-measured.toml");

/// One page kind as `nvmswap workload measure` writes it. Only the figures the model takes are
/// read; the others (footprint series, PSS, cold and warm switch times) stay in the file for
/// people and are ignored here.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MeasuredKind {
    pub name: String,
    pub anon_mib: f64,
    pub anon_growth_mib_per_min: f64,
    pub background_touch_share_per_s: f64,
    pub background_overlap: f64,
    pub switch_touch_share: f64,
    pub switch_new_share: f64,
    pub write_share: f64,
    pub lzo_rle_ratio: f64,
    pub same_filled_share: f64,
    pub render_cpu_ms: f64,
    pub load_cpu_ms: f64,
    pub switch_unseen_shares: Vec<f64>,
    pub switch_run_log2: Vec<f64>,
    pub switch_gap_log2: Vec<f64>,
    pub background_run_log2: Vec<f64>,
    pub background_gap_log2: Vec<f64>,
    /// Absent in profiles measured before the scroll was modelled: then a scroll touches
    /// nothing of its own.
    #[serde(default)]
    pub wiggle_extra_share: f64,
}

#[derive(Debug, Deserialize)]
struct MeasuredFile {
    kind: Vec<MeasuredKind>,
}

/// Why a measured profile cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MeasuredError {
    #[error("the measured tab profile is not valid TOML of `nvmswap workload measure`: {0}")]
    Parse(#[from] toml::de::Error),
    #[error("the measured tab profile has no [[kind]]")]
    Empty,
    #[error("page kind {kind:?}: {field} = {value} is outside {range}")]
    OutOfRange {
        kind: String,
        field: &'static str,
        value: f64,
        range: &'static str,
    },
}

impl MeasuredKind {
    fn check(&self) -> Result<(), MeasuredError> {
        let within = |field: &'static str, value: f64, ok: bool, range: &'static str| {
            if ok {
                Ok(())
            } else {
                Err(MeasuredError::OutOfRange {
                    kind: self.name.clone(),
                    field,
                    value,
                    range,
                })
            }
        };
        let share =
            |field, value: f64| within(field, value, (0.0..=1.0).contains(&value), "[0, 1]");
        share("switch_touch_share", self.switch_touch_share)?;
        share("switch_new_share", self.switch_new_share)?;
        share("write_share", self.write_share)?;
        share("same_filled_share", self.same_filled_share)?;
        share(
            "background_touch_share_per_s",
            self.background_touch_share_per_s,
        )?;
        share("background_overlap", self.background_overlap)?;
        share("wiggle_extra_share", self.wiggle_extra_share)?;
        let a = self.anon_mib;
        within("anon_mib", a, a > 0.0 && a.is_finite(), "(0, inf)")?;
        let r = self.lzo_rle_ratio;
        within("lzo_rle_ratio", r, r > 0.0 && r <= 1.1, "(0, 1.1]")?;
        within(
            "render_cpu_ms",
            self.render_cpu_ms,
            self.render_cpu_ms >= 0.0,
            "[0, inf)",
        )?;
        within(
            "load_cpu_ms",
            self.load_cpu_ms,
            self.load_cpu_ms >= 0.0,
            "[0, inf)",
        )?;
        for &x in &self.switch_unseen_shares {
            share("switch_unseen_shares", x)?;
        }
        for (field, shares) in [
            ("switch_run_log2", &self.switch_run_log2),
            ("switch_gap_log2", &self.switch_gap_log2),
            ("background_run_log2", &self.background_run_log2),
            ("background_gap_log2", &self.background_gap_log2),
        ] {
            for &x in shares.iter() {
                share(field, x)?;
            }
            // Empty is allowed: no layout, the pages lie in one window ([`super::life`]).
            let total: f64 = shares.iter().sum();
            let ok = shares.is_empty() || (total - 1.0).abs() < 1e-6;
            within(field, total, ok, "shares summing to 1, or none")?;
        }
        Ok(())
    }

    /// The model's site type for this kind (the table in the module text).
    pub fn site(&self) -> SiteType {
        SiteType {
            name: self.name.clone(),
            footprint_bytes: (self.anon_mib * MIB as f64) as u64,
            working_set_share: self.switch_touch_share,
            write_share: self.write_share,
            // The compressed pool stores at most a page per page: a ratio above 1 (incompressible
            // data plus the compressor's framing) is kept as 1.
            compress_ratio: self.lzo_rle_ratio.min(1.0),
            same_filled_share: self.same_filled_share,
            render_cpu_ns: (self.render_cpu_ms * NS_PER_MS as f64) as u64,
            load_cpu_ns: (self.load_cpu_ms * NS_PER_MS as f64) as u64,
            background_touch_share_per_s: self.background_touch_share_per_s,
            background_overlap: self.background_overlap,
            working_set_shift: self.switch_new_share,
            growth_bytes_per_s: self.anon_growth_mib_per_min.max(0.0) * MIB as f64 / 60.0,
            switch_run_log2: self.switch_run_log2.clone(),
            switch_gap_log2: self.switch_gap_log2.clone(),
            switch_places: places_for(self.switch_new_share, &self.switch_unseen_shares),
            background_run_log2: self.background_run_log2.clone(),
            background_gap_log2: self.background_gap_log2.clone(),
            scroll_touch_share: self.wiggle_extra_share,
        }
    }
}

/// The page kinds of a measured profile (TOML text), checked.
pub fn parse(text: &str) -> Result<Vec<MeasuredKind>, MeasuredError> {
    let file: MeasuredFile = toml::from_str(text)?;
    if file.kind.is_empty() {
        return Err(MeasuredError::Empty);
    }
    for k in &file.kind {
        k.check()?;
    }
    Ok(file.kind)
}

/// The site types of a measured profile (TOML text).
pub fn sites(text: &str) -> Result<Vec<SiteType>, MeasuredError> {
    Ok(parse(text)?.iter().map(MeasuredKind::site).collect())
}

/// The bundled measured site types. The bundled file is checked by this crate's tests, so a
/// failure here is a build that shipped a broken profile.
pub fn bundled_sites() -> Vec<SiteType> {
    sites(BUNDLED).expect("the bundled measured tab profile parses (checked by its unit test)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_profile_has_seven_kinds_within_their_ranges() {
        let kinds = parse(BUNDLED).unwrap();
        let names: Vec<&str> = kinds.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(
            names,
            ["docs", "sheets", "maps", "video", "news", "social", "mail"]
        );
    }

    #[test]
    fn each_model_field_is_the_measured_figure() {
        let text = r#"
            [[kind]]
            name = "k"
            anon_mib = 10.0
            anon_growth_mib_per_min = 6.0
            background_touch_share_per_s = 0.02
            background_overlap = 0.5
            switch_touch_share = 0.25
            switch_new_share = 0.4
            write_share = 0.75
            lzo_rle_ratio = 0.45
            same_filled_share = 0.05
            render_cpu_ms = 20.0
            load_cpu_ms = 300.0
            switch_unseen_shares = [0.4, 0.4]
            switch_run_log2 = [0.5, 0.5]
            switch_gap_log2 = [0.25, 0.25, 0.5]
            background_run_log2 = [1.0]
            background_gap_log2 = [0.0, 1.0]
            footprint_series = [[0.1, 1.0, 2.0, 3.0]]
        "#;
        let s = &sites(text).unwrap()[0];
        assert_eq!(s.footprint_bytes, 10 * MIB);
        assert_eq!(s.working_set_share, 0.25);
        assert_eq!(s.working_set_shift, 0.4);
        assert_eq!(s.write_share, 0.75);
        assert_eq!(s.compress_ratio, 0.45);
        assert_eq!(s.same_filled_share, 0.05);
        assert_eq!(s.render_cpu_ns, 20 * NS_PER_MS);
        assert_eq!(s.load_cpu_ns, 300 * NS_PER_MS);
        assert_eq!(s.background_touch_share_per_s, 0.02);
        assert_eq!(s.background_overlap, 0.5);
        assert_eq!(s.switch_run_log2, [0.5, 0.5]);
        assert_eq!(s.switch_gap_log2, [0.25, 0.25, 0.5]);
        assert_eq!(s.background_run_log2, [1.0]);
        assert_eq!(s.background_gap_log2, [0.0, 1.0]);
        // Visits that keep moving to new pages: every move to a new place, and 2 visits after
        // the first move each run at most once at a shift of 0.4 (union 1.8 for any places >= 2).
        assert_eq!(s.switch_places, places_for(0.4, &[0.4, 0.4]));
        assert_eq!(s.switch_places, 2);
        // 6 MiB per minute is 0.1 MiB per second.
        assert!((s.growth_bytes_per_s - 0.1 * MIB as f64).abs() < 1e-6);
    }

    #[test]
    fn a_shrinking_tab_does_not_grow_and_an_incompressible_one_is_stored_whole() {
        let mut k = parse(BUNDLED).unwrap().remove(0);
        k.anon_growth_mib_per_min = -7.8;
        k.lzo_rle_ratio = 1.04;
        let s = k.site();
        assert_eq!(s.growth_bytes_per_s, 0.0);
        assert_eq!(s.compress_ratio, 1.0);
    }

    #[test]
    fn bad_profiles_are_refused_with_the_field_named() {
        assert!(matches!(sites("kind = []"), Err(MeasuredError::Empty)));
        assert!(matches!(sites("nonsense"), Err(MeasuredError::Parse(_))));
        let bad = BUNDLED.replacen(
            "switch_touch_share = 0.09112991080367465",
            "switch_touch_share = 1.5",
            1,
        );
        assert_ne!(bad, BUNDLED, "the replacement must hit the bundled file");
        let err = sites(&bad).unwrap_err().to_string();
        assert!(
            err.contains("docs") && err.contains("switch_touch_share"),
            "{err}"
        );
        let bad = BUNDLED.replacen("switch_run_log2 = [", "switch_run_log2 = [0.5, ", 1);
        let err = sites(&bad).unwrap_err().to_string();
        assert!(err.contains("switch_run_log2"), "{err}");
    }
}
