//! Where a switch's pages lie in a tab: runs of neighbouring pages separated by gaps, as
//! `nvmswap workload measure` finds them in real Chromium renderers. The layout decides how much
//! the swap read-ahead helps: the kernel's VMA read-ahead (mm/swap_state.c,
//! `swap_vma_readahead`) reads the fault's virtual neighbours, so a switch whose pages lie in
//! long runs is served by few device reads, one whose pages are scattered by one read per page.
//!
//! The measurement and the model share one vocabulary:
//! - the tab's swappable pages in address order form a dense page space (offsets 0..pages);
//! - a switch's touched pages in that space form **runs** (maximal sequences of touched
//!   neighbours) separated by **gaps** (untouched stretches between two runs);
//! - the lengths of each are kept as a [`Log2Shares`]: the share of runs (or gaps) whose length
//!   lies in [2^b, 2^(b+1)).
//!
//! [`TouchLayout`] lays a tab out from the two distributions: runs and gaps drawn in turn from a
//! seeded generator (so sim, live and linux lay out the same tab the same way), the gaps
//! stretched by one factor so that runs cover the measured share of the tab. Each visit moves a
//! share `shift` of the runs within their territory (the run and the gap behind it), so
//! consecutive visits share `1 - shift` of their pages, as the measured `switch_new_share` says,
//! without changing the shape of the runs. A run moves between a few places in turn
//! ([`places_for`] derives how many from the measured visits: whether the pages a visit moved to
//! were touched by an earlier visit or are new), so over many visits a tab touches a bounded set
//! or keeps wandering as the measurement says.
//!
//! What the measurement cannot give and the model assumes: the order in which a switch touches
//! its pages (address order here: the VMA read-ahead sees a run as a sequential stream), and
//! which runs move together (independently here, by phase).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Buckets of a [`Log2Shares`]: lengths up to 2^16 - 1 pages have a bucket of their own, longer
/// ones fall in the last.
pub const LOG2_BUCKETS: usize = 16;

/// A distribution of lengths (in pages) as shares per power-of-two bucket: `shares[b]` is the
/// share of items whose length is in [2^b, 2^(b+1)). All zero = no distribution.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Log2Shares {
    shares: [f64; LOG2_BUCKETS],
}

impl Log2Shares {
    /// The distribution of `lengths` (zero lengths are ignored).
    pub fn of(lengths: impl IntoIterator<Item = u32>) -> Self {
        let mut counts = [0u64; LOG2_BUCKETS];
        for len in lengths.into_iter().filter(|&l| l > 0) {
            counts[bucket(len)] += 1;
        }
        Self::from_counts(&counts)
    }

    /// From shares as a measured profile stores them (normalised here; negative or non-finite
    /// entries are refused by [`Log2Shares::check`], not here).
    pub fn from_shares(shares: &[f64]) -> Self {
        let mut s = [0.0; LOG2_BUCKETS];
        for (i, &x) in shares.iter().enumerate() {
            s[i.min(LOG2_BUCKETS - 1)] += x.max(0.0);
        }
        let total: f64 = s.iter().sum();
        if total > 0.0 && total.is_finite() {
            s.iter_mut().for_each(|x| *x /= total);
        } else {
            s = [0.0; LOG2_BUCKETS];
        }
        Log2Shares { shares: s }
    }

    fn from_counts(counts: &[u64; LOG2_BUCKETS]) -> Self {
        let total: u64 = counts.iter().sum();
        let mut shares = [0.0; LOG2_BUCKETS];
        if total > 0 {
            for (s, &c) in shares.iter_mut().zip(counts) {
                *s = c as f64 / total as f64;
            }
        }
        Log2Shares { shares }
    }

    /// The shares, trailing empty buckets dropped (as a profile stores them).
    pub fn shares(&self) -> Vec<f64> {
        let used = self
            .shares
            .iter()
            .rposition(|&s| s > 0.0)
            .map_or(0, |i| i + 1);
        self.shares[..used].to_vec()
    }

    pub fn is_empty(&self) -> bool {
        self.shares.iter().all(|&s| s == 0.0)
    }

    /// Mean length of the model's draws ([`Log2Shares::draw`]: uniform within a bucket).
    pub fn mean(&self) -> f64 {
        self.shares
            .iter()
            .enumerate()
            .map(|(b, s)| s * ((1u64 << b) as f64 * 1.5 - 0.5))
            .sum()
    }

    /// A length drawn from the distribution: a bucket by its share, then uniform within it.
    pub fn draw(&self, rng: &mut impl Rng) -> u32 {
        let u: f64 = rng.random();
        let mut acc = 0.0;
        let mut b = self.shares.iter().rposition(|&s| s > 0.0).unwrap_or(0);
        for (i, &s) in self.shares.iter().enumerate() {
            acc += s;
            if u < acc {
                b = i;
                break;
            }
        }
        let lo = 1u32 << b;
        lo + rng.random_range(0..lo)
    }
}

fn bucket(len: u32) -> usize {
    (31 - len.leading_zeros() as usize).min(LOG2_BUCKETS - 1)
}

/// The runs and the gaps between them of a touched set over a dense page space, `touched[i]`
/// saying whether page `i` was touched. Untouched stretches before the first run and after the
/// last are not gaps (nothing bounds them on one side).
pub fn runs_and_gaps(touched: &[bool]) -> (Vec<u32>, Vec<u32>) {
    let (mut runs, mut gaps) = (Vec::new(), Vec::new());
    let mut len = 0u32;
    let mut gap = None::<u32>;
    for &t in touched {
        if t {
            // A gap is open only after a run, so this one lies between two.
            if let Some(g) = gap.take() {
                gaps.push(g);
            }
            len += 1;
        } else {
            if len > 0 {
                runs.push(len);
                len = 0;
                gap = Some(0);
            }
            if let Some(g) = gap.as_mut() {
                *g += 1;
            }
        }
    }
    if len > 0 {
        runs.push(len);
    }
    // A gap still open at the end has no run after it: not a gap.
    (runs, gaps)
}

/// One run of a laid-out tab: where it lies at home, how far its territory (the run and the gap
/// behind it) reaches, and its phase in the cycle of moves.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Run {
    home: u32,
    len: u32,
    gap: u32,
    phase: f64,
}

/// A tab's layout of one kind of touched set (a switch's, or a background second's): runs and
/// gaps over its dense page space, and how the runs move between sets (see the module text).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TouchLayout {
    pub runs: Log2Shares,
    pub gaps: Log2Shares,
    /// How many places each run moves between, in turn (its home and `places - 1` others
    /// spread over its territory); 0 = as many as the territory holds (the set keeps wandering).
    pub places: u32,
    /// Mixed into the layout's seed, so that two layouts of one tab (switch and background) do
    /// not draw the same runs.
    pub salt: u64,
}

/// Salts of the tab's layouts: a switch's, a background second's and a scroll's.
pub const SWITCH_SALT: u64 = 0x6c61_796f_7574_0001;
pub const BACKGROUND_SALT: u64 = 0x6c61_796f_7574_0002;
pub const SCROLL_SALT: u64 = 0x6c61_796f_7574_0003;

/// The most places [`places_for`] gives a run: beyond this many the measured visits cannot tell
/// a run that wanders from one that cycles.
pub const MAX_PLACES: u32 = 16;

impl TouchLayout {
    /// Whether both distributions are present (a profile without them lays a switch's pages out
    /// as one window, [`super::life::switch_pages`]).
    pub fn is_known(&self) -> bool {
        !self.runs.is_empty() && !self.gaps.is_empty()
    }

    /// The factor the drawn gaps are stretched by so that runs cover `share` of the tab on
    /// average: mean run / (mean run + factor * mean gap) = share.
    fn gap_stretch(&self, share: f64) -> f64 {
        let share = share.clamp(1e-6, 1.0);
        let (r, g) = (self.runs.mean(), self.gaps.mean());
        if g <= 0.0 {
            return 0.0;
        }
        r * (1.0 - share) / (share * g)
    }

    /// The runs of tab `tab` laid over its first `pages` pages. Drawn in order from offset 0,
    /// so a grown tab keeps its earlier runs where they were.
    fn lay_out(&self, tab: u32, pages: u32, share: f64) -> Vec<Run> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.salt ^ tab as u64);
        let stretch = self.gap_stretch(share);
        let stretched = |g: u32| ((g as f64 * stretch).round() as u64).min(u32::MAX as u64) as u32;
        // The tab starts part-way into a gap, so that offset 0 is not always a run's start.
        let first: u32 = stretched(self.gaps.draw(&mut rng));
        let mut at = (first as f64 * rng.random::<f64>()) as u64;
        let mut out = Vec::new();
        while at < pages as u64 {
            let len = self.runs.draw(&mut rng);
            let gap = stretched(self.gaps.draw(&mut rng));
            let phase: f64 = rng.random();
            out.push(Run {
                home: at as u32,
                len,
                gap,
                phase,
            });
            at += len as u64 + gap as u64;
        }
        out
    }

    /// The pages (offsets, ascending) of set number `visit` of tab `tab` (a switch's visit, or a
    /// background second), the tab having `pages` pages and its runs covering `share` of them.
    /// A run moves on set `v` when floor(v * shift + phase) passes an integer, so each set moves
    /// a share `shift` of the runs and consecutive sets share `1 - shift` of their pages (less
    /// where a territory is too short for a run's places not to overlap). The `k`-th move takes
    /// the run to place `k mod places`, place `j` starting `j / places` of the way into its
    /// territory.
    pub fn set_pages(&self, tab: u32, pages: u32, share: f64, shift: f64, visit: u32) -> Vec<u32> {
        let shift = shift.clamp(0.0, 1.0);
        let mut out = Vec::new();
        for run in self.lay_out(tab, pages, share) {
            let territory = run.len as u64 + run.gap as u64;
            let places = match self.places {
                0 => (territory / run.len.max(1) as u64).max(1),
                m => m as u64,
            };
            let moves = (visit as f64 * shift + run.phase).floor() as u64;
            let place = moves % places;
            let start = run.home as u64 + (territory * place / places).min(run.gap as u64);
            let end = (start + run.len as u64).min(pages as u64);
            out.extend(start as u32..end.max(start) as u32);
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// How many places a run moves between, derived from a kind's measured visits: the visits'
/// union (1 + the sum of `unseen_shares`, each visit's share of pages no earlier visit touched)
/// against the model's union after as many visits with `shift`, for 2..=[`MAX_PLACES`] places;
/// the count whose union is nearest (the smaller on a tie). A shift of 0 never moves: 1 place.
/// This is the one statistic of the visits that the shift (the mean of `switch_new_shares`)
/// does not already fix: it says whether the moved pages are new or pages touched before.
pub fn places_for(shift: f64, unseen_shares: &[f64]) -> u32 {
    if shift <= 0.0 || unseen_shares.is_empty() {
        return 1;
    }
    let measured = 1.0 + unseen_shares.iter().sum::<f64>();
    // Over V = unseen + 1 visits a run with phase u moves floor((V-1) * shift + u) times: the
    // floor of x with probability 1 - frac(x), one more otherwise.
    let x = unseen_shares.len() as f64 * shift.min(1.0);
    let (k, f) = (x.floor(), x - x.floor());
    let union = |m: f64| (1.0 - f) * m.min(k + 1.0) + f * m.min(k + 2.0);
    (2..=MAX_PLACES)
        .min_by(|&a, &b| {
            let da = (union(a as f64) - measured).abs();
            let db = (union(b as f64) - measured).abs();
            da.partial_cmp(&db).unwrap_or(std::cmp::Ordering::Equal)
        })
        .unwrap_or(2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn runs_and_gaps_of_a_known_set() {
        let t = |s: &str| s.chars().map(|c| c == '#').collect::<Vec<bool>>();
        assert_eq!(
            runs_and_gaps(&t("..##.#...###..")),
            (vec![2, 1, 3], vec![1, 3])
        );
        assert_eq!(runs_and_gaps(&t("#")), (vec![1], vec![]));
        assert_eq!(runs_and_gaps(&t("....")), (vec![], vec![]));
        assert_eq!(runs_and_gaps(&t("#.#")), (vec![1, 1], vec![1]));
    }

    #[test]
    fn log2_shares_bucket_by_powers_of_two() {
        let d = Log2Shares::of([1, 1, 2, 3, 4, 7, 8, 0]);
        assert_eq!(d.shares(), [2.0 / 7.0, 2.0 / 7.0, 2.0 / 7.0, 1.0 / 7.0]);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..1000 {
            let x = d.draw(&mut rng);
            assert!((1..16).contains(&x), "{x}");
        }
        // One bucket [4, 8): mean 5.5.
        assert_eq!(Log2Shares::from_shares(&[0.0, 0.0, 1.0]).mean(), 5.5);
        assert!(Log2Shares::from_shares(&[]).is_empty());
        assert_eq!(Log2Shares::from_shares(&[2.0, 2.0]).shares(), [0.5, 0.5]);
    }

    fn layout(runs: &[f64], gaps: &[f64]) -> TouchLayout {
        TouchLayout {
            runs: Log2Shares::from_shares(runs),
            gaps: Log2Shares::from_shares(gaps),
            places: 2,
            salt: SWITCH_SALT,
        }
    }

    #[test]
    fn a_laid_out_switch_covers_its_share_in_runs_of_the_measured_lengths() {
        // Runs of 4-7 pages, gaps of 8-15 stretched so runs cover 10 %.
        let l = layout(&[0.0, 0.0, 1.0], &[0.0, 0.0, 0.0, 1.0]);
        let pages = 200_000;
        let p = l.set_pages(3, pages, 0.1, 0.0, 0);
        let share = p.len() as f64 / pages as f64;
        assert!((share - 0.1).abs() < 0.01, "{share}");
        let mut dense = vec![false; pages as usize];
        p.iter().for_each(|&i| dense[i as usize] = true);
        let (runs, _) = runs_and_gaps(&dense);
        assert!(runs.iter().all(|r| (4..8).contains(r)), "{runs:?}");
        // The same tab is laid out the same way; another tab differently.
        assert_eq!(l.set_pages(3, pages, 0.1, 0.0, 0), p);
        assert_ne!(l.set_pages(4, pages, 0.1, 0.0, 0), p);
    }

    #[test]
    fn visits_share_one_minus_shift_of_their_pages() {
        let l = layout(&[0.5, 0.3, 0.2], &[0.2, 0.3, 0.5]);
        let pages = 100_000;
        let v: Vec<BTreeSet<u32>> = (0..4)
            .map(|v| l.set_pages(9, pages, 0.1, 0.35, v).into_iter().collect())
            .collect();
        for w in v.windows(2) {
            let new = w[1].difference(&w[0]).count() as f64 / w[1].len() as f64;
            assert!((new - 0.35).abs() < 0.04, "{new}");
        }
        // Without a shift every visit touches the same pages.
        let still = l.set_pages(9, pages, 0.1, 0.0, 7);
        assert_eq!(still, l.set_pages(9, pages, 0.1, 0.0, 0));
        // With a shift of 1 every run moves every visit, and comes back on the next.
        let a = l.set_pages(9, pages, 0.1, 1.0, 0);
        assert_eq!(a, l.set_pages(9, pages, 0.1, 1.0, 2));
    }

    #[test]
    fn runs_cycle_through_their_places() {
        let mut l = layout(&[1.0], &[0.0, 0.0, 0.0, 0.0, 1.0]);
        l.places = 3;
        let set = |v| l.set_pages(2, 50_000, 0.1, 1.0, v);
        // Every run moves every visit: three places, then home again.
        assert_eq!(set(0), set(3));
        assert_ne!(set(0), set(1));
        assert_ne!(set(1), set(2));
        // Wandering (places 0): the union keeps growing over visits.
        l.places = 0;
        let union = |n: u32| {
            (0..n)
                .flat_map(|v| l.set_pages(2, 50_000, 0.1, 0.5, v))
                .collect::<BTreeSet<u32>>()
                .len()
        };
        assert!(union(6) > union(3) && union(3) > union(1));
        // Another salt lays the same tab out elsewhere.
        let other = TouchLayout {
            salt: BACKGROUND_SALT,
            ..l
        };
        assert_ne!(
            other.set_pages(2, 50_000, 0.1, 0.5, 0),
            l.set_pages(2, 50_000, 0.1, 0.5, 0)
        );
    }

    #[test]
    fn places_come_from_the_union_of_the_measured_visits() {
        // Moving a quarter of the runs a visit over 4 visits: at most one move each, so a union of
        // 1.75 whatever the places; 2 is the fewest.
        assert_eq!(places_for(0.25, &[0.25, 0.25, 0.25]), 2);
        // Three quarters a visit, the visits' new pages new for two visits, then seen again
        // (video frame buffers): three places.
        assert_eq!(places_for(0.75, &[0.75, 0.75, 0.27, 0.30]), 3);
        // Every move to new pages over 4 visits of shift 1: the union 5 needs 5 places.
        assert_eq!(places_for(1.0, &[1.0, 1.0, 1.0, 1.0]), 5);
        assert_eq!(places_for(0.0, &[0.0, 0.0]), 1);
        assert_eq!(places_for(0.3, &[]), 1);
    }

    #[test]
    fn a_grown_tab_keeps_its_earlier_runs() {
        let l = layout(&[0.5, 0.5], &[0.0, 0.5, 0.5]);
        let small = l.set_pages(1, 1000, 0.2, 0.3, 2);
        let big = l.set_pages(1, 5000, 0.2, 0.3, 2);
        let head: Vec<u32> = big.iter().copied().filter(|&p| p < 900).collect();
        let small_head: Vec<u32> = small.iter().copied().filter(|&p| p < 900).collect();
        assert_eq!(head, small_head);
        assert!(big.iter().all(|&p| p < 5000));
    }
}
