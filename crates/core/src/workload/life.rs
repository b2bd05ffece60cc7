//! Tabs that live: which of a tab's pages a switch and its background activity touch, as pure
//! functions of the tab's measured shape ([`super::tabs::SiteType`], measured on real Chromium
//! by `nvmswap workload measure`). Every substrate asks these functions, so `sim`, `live` and
//! `linux` touch the same pages.
//!
//! - A switch on visit `v` touches a window of `ws` pages that starts `v * shift * ws` pages on
//!   (wrapping around the tab): consecutive visits share `1 - shift` of their pages.
//! - A background tab touches, in its `s`-th second in the background, a window of
//!   `share * pages` pages that advances by `(1 - overlap)` of its size each second.
//! - A tab grows by `growth_bytes_per_s` after load: new pages, written once.

/// A window of `len` pages of a tab of `pages` pages starting at `start`, wrapping.
fn window(pages: u32, start: u64, len: u32) -> impl Iterator<Item = u32> {
    let len = len.min(pages);
    let start = if pages == 0 { 0 } else { start % pages as u64 };
    (0..len as u64).map(move |i| ((start + i) % pages.max(1) as u64) as u32)
}

/// The pages (offsets in the tab) a switch touches on visit `visit` (0 = the first switch).
pub fn switch_pages(pages: u32, ws: u32, shift: f64, visit: u32) -> impl Iterator<Item = u32> {
    let step = (ws as f64 * shift.clamp(0.0, 1.0)).round() as u64;
    window(pages, step * visit as u64, ws)
}

/// How many pages a background tab touches in one second.
pub fn background_pages_per_s(pages: u32, share_per_s: f64) -> u32 {
    ((pages as f64 * share_per_s.clamp(0.0, 1.0)).round() as u32).min(pages)
}

/// The pages a background tab touches in its `second`-th second in the background.
pub fn background_pages(
    pages: u32,
    share_per_s: f64,
    overlap: f64,
    second: u64,
) -> impl Iterator<Item = u32> {
    let n = background_pages_per_s(pages, share_per_s);
    let step = (n as f64 * (1.0 - overlap.clamp(0.0, 1.0))).round() as u64;
    // The background set starts past the first working set, where timers' data lives in a
    // real renderer as much as anywhere; any fixed start would do.
    window(pages, pages as u64 / 2 + step * second, n)
}

/// Pages a tab has grown by after `ns` nanoseconds since load.
pub fn grown_pages(growth_bytes_per_s: f64, ns: u64) -> u64 {
    (growth_bytes_per_s.max(0.0) * ns as f64 / 1e9 / crate::PAGE_SIZE as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn a_shifting_working_set_touches_new_pages_on_the_next_visit() {
        let v0: BTreeSet<u32> = switch_pages(1000, 200, 0.25, 0).collect();
        let v1: BTreeSet<u32> = switch_pages(1000, 200, 0.25, 1).collect();
        assert_eq!(v0.len(), 200);
        assert_eq!(v1.len(), 200);
        assert_eq!(v1.difference(&v0).count(), 50);
        // Without a shift, every visit touches the same pages.
        let still: BTreeSet<u32> = switch_pages(1000, 200, 0.0, 7).collect();
        assert_eq!(still, v0);
        // The window wraps around the tab.
        assert!(switch_pages(100, 60, 1.0, 1).all(|p| p < 100));
    }

    #[test]
    fn background_windows_advance_by_their_overlap() {
        let s0: BTreeSet<u32> = background_pages(1000, 0.02, 0.5, 0).collect();
        let s1: BTreeSet<u32> = background_pages(1000, 0.02, 0.5, 1).collect();
        assert_eq!(s0.len(), 20);
        assert_eq!(s1.intersection(&s0).count(), 10);
        let hot: BTreeSet<u32> = background_pages(1000, 0.02, 1.0, 9).collect();
        assert_eq!(hot, s0);
        assert_eq!(background_pages(1000, 0.0, 0.0, 3).count(), 0);
        assert_eq!(grown_pages(4096.0 * 10.0, 2_000_000_000), 20);
    }
}
