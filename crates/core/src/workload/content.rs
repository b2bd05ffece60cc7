//! Page contents with a modelled compressibility, so `live` and `linux` compress real bytes that
//! behave like the tab model says and `sim` can draw the same sizes without making the bytes.
//!
//! A page is either same-filled (one repeated 8-byte word, as zram/zswap detect) or a sequence of
//! 32-byte chunks, each either fresh pseudo-random bytes (incompressible) or a repeat of an earlier
//! chunk of the same page (what an LZ compressor turns into a short back-reference). The share of
//! fresh chunks sets the compressed size; `fresh_share_for_ratio` inverts that relation.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::PAGE_SIZE;

const CHUNK: usize = 32;

/// Of the same-filled pages, the share that is all zeros; the others repeat one random non-zero
/// 8-byte word. The tab model's assumption (Chromium's anonymous memory is not measured here).
/// It matters to the swap path: since 6.12 a zero page skips every swap device and zswap
/// (`swap_writeout`, mm/page_io.c, sets the swap area's zero mark, vmstat `swpout_zero`), while
/// a page of another repeated word is written to the device, compressed by zswap, or kept by
/// zram without compression (`ZRAM_SAME`).
pub const ZERO_SHARE_OF_SAME_FILLED: f64 = 0.8;

/// lz4 compressed/original ratio of pages made with a given share of fresh chunks, measured with
/// `lz4_flex::block::compress` over 200 pages per point. Short back-references cost more per byte
/// saved than long runs, hence the bend at the low end. The content tests check the inverse below
/// against real lz4.
const LZ4_RATIO_BY_FRESH_SHARE: [(f64, f64); 11] = [
    (0.0, 0.014),
    (0.1, 0.166),
    (0.2, 0.283),
    (0.3, 0.386),
    (0.4, 0.487),
    (0.5, 0.575),
    (0.6, 0.665),
    (0.7, 0.755),
    (0.8, 0.847),
    (0.9, 0.931),
    (1.0, 1.004),
];

/// Share of fresh (random) chunks that gives about `ratio` = compressed / original with an LZ77
/// compressor (lz4; lzo behaves alike), by linear interpolation in the measured table.
pub fn fresh_share_for_ratio(ratio: f64) -> f64 {
    let table = &LZ4_RATIO_BY_FRESH_SHARE;
    if ratio <= table[0].1 {
        return 0.0;
    }
    for w in table.windows(2) {
        let ((f0, r0), (f1, r1)) = (w[0], w[1]);
        if ratio <= r1 {
            return f0 + (f1 - f0) * (ratio - r0) / (r1 - r0);
        }
    }
    1.0
}

/// Fill `page` (4 KiB) deterministically from `(seed, key)`. `key` names the page (for example
/// tab, page index and version mixed together); the same inputs always give the same bytes.
pub fn fill_page(
    page: &mut [u8],
    seed: u64,
    key: u64,
    compress_ratio: f64,
    same_filled_share: f64,
) {
    assert_eq!(page.len() as u64, PAGE_SIZE, "pages are 4 KiB");
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ key.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    if rng.random_bool(same_filled_share.clamp(0.0, 1.0)) {
        // Mostly zero pages, sometimes another repeated word, as in real anonymous memory.
        let word: u64 = if rng.random_bool(ZERO_SHARE_OF_SAME_FILLED) {
            0
        } else {
            rng.random()
        };
        for w in page.chunks_exact_mut(8) {
            w.copy_from_slice(&word.to_le_bytes());
        }
        return;
    }
    let fresh = fresh_share_for_ratio(compress_ratio);
    let chunks = page.len() / CHUNK;
    for c in 0..chunks {
        let (done, rest) = page.split_at_mut(c * CHUNK);
        let chunk = &mut rest[..CHUNK];
        if c == 0 || rng.random_bool(fresh) {
            rng.fill_bytes(chunk);
        } else {
            let src = rng.random_range(0..c) * CHUNK;
            chunk.copy_from_slice(&done[src..src + CHUNK]);
        }
    }
}

/// Bytes lz4 makes of a page that repeats one non-zero 8-byte word: what a compressed pool holds
/// for such a page (sim's size for it), measured with `lz4_flex` once rather than assumed.
pub fn same_word_compressed_bytes() -> u16 {
    static BYTES: std::sync::OnceLock<u16> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        let page: Vec<u8> = std::iter::repeat_n(0x0123_4567_89ab_cdef_u64.to_le_bytes(), 512)
            .flatten()
            .collect();
        lz4_flex::block::compress(&page).len() as u16
    })
}

/// Bytes lz4 makes of a zero page with one byte changed: what a same-filled page becomes once a
/// tab writes it (the linux tab's write touch increments a byte), measured as above.
pub fn written_same_filled_compressed_bytes() -> u16 {
    static BYTES: std::sync::OnceLock<u16> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        let mut page = vec![0u8; PAGE_SIZE as usize];
        page[8] = 1;
        lz4_flex::block::compress(&page).len() as u16
    })
}

/// True if the page is one repeated 8-byte word (what zram calls same-filled).
pub fn is_same_filled(page: &[u8]) -> bool {
    let first = &page[..8];
    page.chunks_exact(8).all(|w| w == first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lz4_ratio(target: f64) -> f64 {
        let mut total = 0usize;
        let mut page = vec![0u8; PAGE_SIZE as usize];
        for key in 0..200 {
            fill_page(&mut page, 7, key, target, 0.0);
            total += lz4_flex::block::compress(&page).len();
        }
        total as f64 / (200.0 * PAGE_SIZE as f64)
    }

    #[test]
    fn lz4_compresses_pages_to_about_the_modelled_ratio() {
        for target in [0.25, 0.38, 0.5, 0.7] {
            let got = lz4_ratio(target);
            assert!(
                (got - target).abs() < 0.06,
                "target {target}, lz4 gave {got}"
            );
        }
    }

    #[test]
    fn same_filled_share_is_respected_and_detected() {
        let mut page = vec![0u8; PAGE_SIZE as usize];
        let mut same = 0;
        for key in 0..2000 {
            fill_page(&mut page, 1, key, 0.4, 0.25);
            same += is_same_filled(&page) as u32;
        }
        assert!((400..600).contains(&same), "{same} of 2000 same-filled");
    }

    #[test]
    fn a_page_of_one_word_compresses_to_a_few_dozen_bytes() {
        let n = same_word_compressed_bytes();
        assert!((8..=64).contains(&n), "{n} bytes");
    }

    #[test]
    fn a_written_zero_page_is_not_same_filled_and_compresses_to_a_few_dozen_bytes() {
        let n = written_same_filled_compressed_bytes();
        assert!((8..=64).contains(&n), "{n} bytes");
        let mut page = vec![0u8; PAGE_SIZE as usize];
        page[8] = 1;
        assert!(!is_same_filled(&page));
    }

    #[test]
    fn most_same_filled_pages_are_zero() {
        let mut page = vec![0u8; PAGE_SIZE as usize];
        let (mut same, mut zero) = (0u32, 0u32);
        for key in 0..4000 {
            fill_page(&mut page, 5, key, 0.4, 1.0);
            same += is_same_filled(&page) as u32;
            zero += page.iter().all(|&b| b == 0) as u32;
        }
        assert_eq!(same, 4000);
        let share = f64::from(zero) / f64::from(same);
        assert!(
            (share - ZERO_SHARE_OF_SAME_FILLED).abs() < 0.03,
            "{zero} of {same} zero"
        );
    }

    #[test]
    fn deterministic() {
        let mut a = vec![0u8; PAGE_SIZE as usize];
        let mut b = vec![0u8; PAGE_SIZE as usize];
        fill_page(&mut a, 3, 99, 0.4, 0.1);
        fill_page(&mut b, 3, 99, 0.4, 0.1);
        assert_eq!(a, b);
    }
}
