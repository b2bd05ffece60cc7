//! The web pages real Chromium loads, generated here as files (no network): a rotation of page
//! kinds in the spirit of the sites seed 000 opened (Oliveira et al., "Extending memory capacity
//! in consumer devices with emerging non-volatile memory: an experimental study", IEEE Access
//! 2023, §3: YouTube, Maps, Sheets, Docs, Facebook, Twitter), and of the Tast `mempressure` URL
//! list (docs, spreadsheet, news, maps, video, shopping, social).
//!
//! Every page holds its data the way such a site does: a JS model (strings, objects, typed
//! arrays) on the V8 heap, a DOM of what is on screen, decoded images, canvases, and timers that
//! keep working while the tab is in the background (autosave, recalculation, polling, frame
//! buffering, ad rotation). Sizes at scale 1 are our choice (`data_mib` below: what the page
//! allocates, not what the renderer ends up holding); everything the tab model takes from
//! these pages is then measured by `nvmswap workload measure` (crates/linux/src/chromium/measure.rs).
//! A page sets `window.__nvmswapReady` once built.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::LinuxError;

/// A kind of page and how much data it allocates at scale 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageKind {
    /// Short name, also the site name in the tab model.
    pub name: &'static str,
    /// MiB of data the page's script builds at scale 1 (our choice, see the module docs).
    pub data_mib: u32,
}

/// The rotation, opened in this order, round-robin.
pub const KINDS: [PageKind; 7] = [
    PageKind {
        name: "docs",
        data_mib: 48,
    },
    PageKind {
        name: "sheets",
        data_mib: 64,
    },
    PageKind {
        name: "maps",
        data_mib: 96,
    },
    PageKind {
        name: "video",
        data_mib: 80,
    },
    PageKind {
        name: "news",
        data_mib: 40,
    },
    PageKind {
        name: "social",
        data_mib: 56,
    },
    PageKind {
        name: "mail",
        data_mib: 40,
    },
];

/// Script shared by every page: a seeded generator, a word list for text, a sink that keeps data
/// reachable, and the ready flag.
const COMMON_JS: &str = r#"
let __s = (SEED >>> 0) || 1;
function rnd() { __s ^= __s << 13; __s >>>= 0; __s ^= __s >>> 17; __s ^= __s << 5; __s >>>= 0; return __s / 4294967296; }
function ri(n) { return (rnd() * n) | 0; }
const WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from at which " +
  "but have an they you were her she there been one all we their has would when if so no will more can said who " +
  "out up them some could him into its then two time only may do what like other about over after year new also " +
  "budget meeting report quarter revenue project team update review draft customer market price order weather " +
  "city river station museum travel recipe garden football season election council policy research result").split(" ");
function words(n) { let a = []; for (let i = 0; i < n; i++) a.push(WORDS[ri(WORDS.length)]); return a.join(" "); }
const MIB = 1048576;
const BUDGET = Math.max(1, Math.round(DATA_MIB * SCALE * MIB));
window.__keep = [];
function ready() { window.__nvmswapReady = true; }
"#;

/// The body and script of each kind. `DATA_MIB`, `SCALE`, `SEED`, `IMAGES` are defined before.
fn kind_script(name: &str) -> &'static str {
    match name {
        // A long document: the model holds every paragraph; the DOM shows the first pages in an
        // editable area; autosave serialises a slice each second and an edit lands now and then.
        "docs" => {
            r#"
const paras = []; let bytes = 0;
while (bytes < BUDGET) { const p = words(60 + ri(80)); paras.push(p); bytes += p.length * 2 + 64; }
const ed = document.getElementById("main"); ed.contentEditable = "true";
for (let i = 0; i < Math.min(paras.length, 1500); i++) { const d = document.createElement("p"); d.textContent = paras[i]; ed.appendChild(d); }
let cursor = 0;
setInterval(() => {
  const n = Math.max(1, paras.length >> 7); const slice = paras.slice(cursor, cursor + n);
  window.__keep[0] = JSON.stringify(slice); cursor = (cursor + n) % paras.length;
  const k = ri(paras.length); paras[k] = paras[k] + " " + words(3);
}, 1000);
ready();
"#
        }
        // A spreadsheet: numeric columns in typed arrays, formulas as strings, a visible grid;
        // each second a share of the cells is recalculated.
        "sheets" => {
            r#"
const cols = 40; const rows = Math.max(100, Math.floor(BUDGET / (cols * 8 + cols * 24)));
const vals = new Float64Array(rows * cols); for (let i = 0; i < vals.length; i++) vals[i] = rnd() * 1000;
const formulas = []; for (let i = 0; i < rows; i++) formulas.push("=SUM(A" + i + ":AN" + i + ")*" + ri(100) + "/" + words(2));
const t = document.createElement("table"); document.getElementById("main").appendChild(t);
for (let r = 0; r < 120; r++) { const tr = t.insertRow(); for (let c = 0; c < 20; c++) tr.insertCell().textContent = vals[r * cols + c].toFixed(2); }
setInterval(() => {
  const n = Math.max(1, rows >> 6); const start = ri(rows);
  for (let r = 0; r < n; r++) { const row = (start + r) % rows; let s = 0; for (let c = 0; c < cols; c++) s += vals[row * cols + c]; vals[row * cols + ri(cols)] = s / cols; }
  if (t.rows[0]) t.rows[ri(120)].cells[ri(20)].textContent = vals[ri(vals.length)].toFixed(2);
}, 1000);
ready();
"#
        }
        // Map tiles: a cache of 256x256 RGBA tiles, the visible ones drawn on a canvas; the map
        // pans every half second (new tiles fetched into the cache's oldest slots).
        "maps" => {
            r#"
const TILE = 256 * 256 * 4; const ntiles = Math.max(4, Math.floor(BUDGET / TILE));
function tile(seed) { const d = new Uint8ClampedArray(TILE); let v = seed;
  for (let y = 0; y < 256; y++) for (let x = 0; x < 256; x++) { const o = (y * 256 + x) * 4;
    const road = (x % 64 < 3 || y % 48 < 3); v = (v * 1103515245 + 12345) >>> 0;
    d[o] = road ? 250 : 200 + ((x + seed) & 31); d[o + 1] = road ? 240 : 220 + ((y ^ seed) & 15); d[o + 2] = road ? 200 : 180 + ((v >>> 24) & 15); d[o + 3] = 255; }
  return d; }
const tiles = []; for (let i = 0; i < ntiles; i++) tiles.push(tile(i));
const cv = document.createElement("canvas"); cv.width = 1280; cv.height = 768; document.getElementById("main").appendChild(cv);
const ctx = cv.getContext("2d"); let ox = 0, oy = 0, next = 0;
function draw() { for (let ty = 0; ty < 3; ty++) for (let tx = 0; tx < 5; tx++) {
  const i = ((oy + ty) * 7 + ox + tx) % ntiles; ctx.putImageData(new ImageData(tiles[i], 256, 256), tx * 256, ty * 256); } }
draw();
setInterval(() => { ox = (ox + 1) % 97; if (ox % 5 == 0) { tiles[next] = tile(next + ox * 1000); next = (next + 1) % ntiles; } requestAnimationFrame(draw); }, 500);
ready();
"#
        }
        // Video: a ring of decoded 640x360 RGBA frames; while visible a frame is decoded (written)
        // and shown each animation frame; in the background the player keeps buffering a frame
        // every 200 ms.
        "video" => {
            r#"
const FRAME = 640 * 360 * 4; const nframes = Math.max(4, Math.floor(BUDGET / FRAME));
const frames = []; for (let i = 0; i < nframes; i++) { const f = new Uint8ClampedArray(FRAME); for (let j = 0; j < FRAME; j += 4) { f[j] = (j >> 8) + i; f[j + 1] = (j >> 4) ^ i; f[j + 2] = ri(256); f[j + 3] = 255; } frames.push(f); }
const cv = document.createElement("canvas"); cv.width = 640; cv.height = 360; document.getElementById("main").appendChild(cv);
const ctx = cv.getContext("2d"); let cur = 0, buffered = 0;
function decode(f, k) { for (let j = 0; j < FRAME; j += 64) { f[j] = (f[j] + k) & 255; f[j + 1] = ri(256); } }
function play() { decode(frames[cur], cur); ctx.putImageData(new ImageData(frames[cur], 640, 360), 0, 0); cur = (cur + 1) % nframes; requestAnimationFrame(play); }
requestAnimationFrame(play);
setInterval(() => { buffered = (buffered + 1) % nframes; decode(frames[buffered], buffered); }, 200);
ready();
"#
        }
        // A long news page: articles with text and photos (decoded images), an ad slot rotating
        // every 3 s.
        "news" => {
            r#"
const m = document.getElementById("main"); let bytes = 0, k = 0;
while (bytes < BUDGET) { const a = document.createElement("article"); const h = document.createElement("h2"); h.textContent = words(8); a.appendChild(h);
  const im = document.createElement("img"); im.src = IMAGES[k % IMAGES.length] + "?a=" + k; im.width = 400; im.height = 300; a.appendChild(im);
  const p = document.createElement("p"); p.textContent = words(300); a.appendChild(p); m.appendChild(a); bytes += 400 * 300 * 4 + 3000; k++; }
const ad = document.createElement("img"); ad.width = 300; ad.height = 250; m.prepend(ad); let adk = 0;
setInterval(() => { ad.src = IMAGES[adk % IMAGES.length] + "?ad=" + adk; adk++; window.__keep[1] = words(200); }, 3000);
ready();
"#
        }
        // A social feed: posts (text, photo) in a cache and in the DOM; scrolling near the
        // bottom appends more (infinite scroll); a poll every 2 s brings a new post to the top,
        // so the cache grows while the tab sits in the background.
        "social" => {
            r#"
const m = document.getElementById("main"); const cache = []; let k = 0, bytes = 0;
function post(top) { const d = document.createElement("div"); d.className = "post"; const o = { id: k, user: words(2), text: words(40 + ri(60)), likes: ri(1000), comments: [] };
  for (let c = 0; c < ri(6); c++) o.comments.push(words(15)); cache.push(o);
  d.textContent = o.user + ": " + o.text; const im = document.createElement("img"); im.src = IMAGES[k % IMAGES.length] + "?p=" + k; im.width = 500; im.height = 375; d.appendChild(im);
  if (top) m.prepend(d); else m.appendChild(d); k++; return 500 * 375 * 4 + 2000; }
while (bytes < BUDGET) bytes += post(false);
window.addEventListener("scroll", () => { if (window.scrollY + window.innerHeight > document.body.scrollHeight - 2000) for (let i = 0; i < 5; i++) post(false); });
setInterval(() => { post(true); window.__keep[2] = JSON.stringify(cache.slice(-20)); }, 2000);
ready();
"#
        }
        // Mail: an inbox model of messages (headers and bodies), a list of the latest 200 on
        // screen, a sync every 5 s that adds a message and re-serialises the newest batch.
        "mail" => {
            r#"
const msgs = []; let bytes = 0;
while (bytes < BUDGET) { const b = words(150 + ri(300)); msgs.push({ from: words(2), subject: words(7), body: b, read: rnd() < 0.7 }); bytes += b.length * 2 + 200; }
const m = document.getElementById("main"); const ul = document.createElement("ul"); m.appendChild(ul);
for (let i = 0; i < Math.min(200, msgs.length); i++) { const li = document.createElement("li"); li.textContent = msgs[i].from + " - " + msgs[i].subject; ul.appendChild(li); }
setInterval(() => { const b = words(200); msgs.unshift({ from: words(2), subject: words(7), body: b, read: false });
  const li = document.createElement("li"); li.textContent = msgs[0].from + " - " + msgs[0].subject; ul.prepend(li);
  window.__keep[3] = JSON.parse(JSON.stringify(msgs.slice(0, 50))); }, 5000);
ready();
"#
        }
        _ => "ready();",
    }
}

/// A photo-like 24-bit BMP (smooth gradients with noise), `w` x `h`.
fn bmp(w: u32, h: u32, seed: u32) -> Vec<u8> {
    let row = (w * 3).div_ceil(4) * 4;
    let size = 54 + row * h;
    let mut b = Vec::with_capacity(size as usize);
    b.extend_from_slice(b"BM");
    for v in [size, 0, 54, 40] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&(w as i32).to_le_bytes());
    b.extend_from_slice(&(h as i32).to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&24u16.to_le_bytes());
    for v in [0u32, row * h, 2835, 2835, 0, 0] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    let mut x32 = seed.wrapping_mul(2_654_435_761) | 1;
    for y in 0..h {
        for x in 0..w {
            x32 ^= x32 << 13;
            x32 ^= x32 >> 17;
            x32 ^= x32 << 5;
            let noise = x32 & 15;
            let r = (x * 255 / w + seed * 37 + noise) & 255;
            let g = (y * 255 / h + seed * 91 + noise) & 255;
            let bl = ((x + y) * 127 / (w + h) + seed * 13 + noise) & 255;
            b.extend_from_slice(&[bl as u8, g as u8, r as u8]);
        }
        b.resize(b.len() + (row - w * 3) as usize, 0);
    }
    b
}

/// The generated pages in a directory (removed when dropped).
pub struct Pages {
    pub dir: PathBuf,
}

impl Pages {
    /// Write every kind's page for `scale` and `seed` into `dir` (created).
    pub fn generate(dir: &Path, scale: f64, seed: u64) -> Result<Pages, LinuxError> {
        std::fs::create_dir_all(dir).map_err(|e| LinuxError::io("mkdir", dir, e))?;
        let mut images = Vec::new();
        for i in 0..12u32 {
            let path = dir.join(format!("photo{i}.bmp"));
            std::fs::write(&path, bmp(400, 300, i + 1))
                .map_err(|e| LinuxError::io("write", &path, e))?;
            images.push(format!("\"photo{i}.bmp\""));
        }
        for kind in KINDS {
            let mut html = String::new();
            let _ = write!(
                html,
                "<!doctype html><html><head><meta charset=utf-8><title>{name}</title>\
                 <style>body{{font:14px sans-serif;margin:0}}#main{{padding:8px}}\
                 .post{{margin:12px;border-bottom:1px solid #ccc}}</style></head>\
                 <body><div id=main></div><script>\
                 const DATA_MIB = {mib}; const SCALE = {scale}; const SEED = {seed};\
                 const IMAGES = [{images}];{common}{script}</script></body></html>",
                name = kind.name,
                mib = kind.data_mib,
                seed = seed as u32 ^ kind.data_mib,
                images = images.join(","),
                common = COMMON_JS,
                script = kind_script(kind.name),
            );
            let path = dir.join(format!("{}.html", kind.name));
            std::fs::write(&path, html).map_err(|e| LinuxError::io("write", &path, e))?;
        }
        Ok(Pages {
            dir: dir.to_path_buf(),
        })
    }

    /// The file:// URL of page `kind`; `tab` makes each tab's URL distinct (a fresh document).
    pub fn url(&self, kind: usize, tab: u32) -> String {
        format!(
            "file://{}/{}.html?tab={tab}",
            self.dir.display(),
            KINDS[kind % KINDS.len()].name
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_written_for_every_kind_with_their_scale() {
        let dir = std::env::temp_dir().join(format!("nvmswap-pages-test-{}", std::process::id()));
        let pages = Pages::generate(&dir, 0.25, 7).unwrap();
        for kind in KINDS {
            let html = std::fs::read_to_string(dir.join(format!("{}.html", kind.name))).unwrap();
            assert!(html.contains("const SCALE = 0.25"), "{}", kind.name);
            assert!(html.contains("ready();"), "{}", kind.name);
        }
        let img = std::fs::read(dir.join("photo0.bmp")).unwrap();
        assert_eq!(&img[..2], b"BM");
        assert_eq!(img.len(), 54 + 1200 * 300);
        assert!(pages.url(8, 3).ends_with("sheets.html?tab=3"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
