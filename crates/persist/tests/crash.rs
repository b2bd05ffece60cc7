//! The age file survives interruption at every step: a truncated file, a write cut short, and a
//! real process killed with SIGKILL in the middle of write-backs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nvmswap_core::persist::{Medium, PersistError};
use nvmswap_persist::{create_age_file, open_age_file, FileMedium};

const SLOTS: u64 = 4096;

/// A scratch directory removed when the test ends, passing or failing.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> (Scratch, PathBuf) {
    let dir = std::env::temp_dir().join(format!("nvmswap-persist-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ages");
    (Scratch(dir), file)
}

/// Every age equals the generation that wrote it, so a mix is visible at once.
fn stamped(generation: u32) -> Vec<u32> {
    vec![generation; SLOTS as usize]
}

fn assert_uniform(ages: &[u32]) -> u32 {
    let g = ages[0];
    assert!(
        ages.iter().all(|&a| a == g),
        "recovered a mix of generations"
    );
    g
}

#[test]
fn a_write_cut_short_at_any_point_leaves_the_old_or_new_array() {
    let (_dir, path) = scratch("torn");
    let mut store = create_age_file(&path, SLOTS).unwrap();
    store.sync(&stamped(1)).unwrap();
    drop(store);
    let before = std::fs::read(&path).unwrap();
    let mut store = open_age_file(&path, SLOTS).unwrap().0;
    store.sync(&stamped(2)).unwrap();
    drop(store);
    let after = std::fs::read(&path).unwrap();
    // The on-disk bytes that differ, in file order; write-back order puts the array before the
    // pointer (offset 0), so try every prefix of the array writes with and without the pointer.
    let changed: Vec<usize> = (0..before.len())
        .filter(|&i| before[i] != after[i])
        .collect();
    let step = (changed.len() / 64).max(1);
    for cut in (0..=changed.len()).step_by(step) {
        for with_pointer in [false, true] {
            let mut image = before.clone();
            for &i in changed.iter().filter(|&&i| i >= 64).take(cut) {
                image[i] = after[i];
            }
            if with_pointer && cut == changed.len() {
                image[..64].copy_from_slice(&after[..64]);
            }
            std::fs::write(&path, &image).unwrap();
            let (_, ages) = open_age_file(&path, SLOTS).unwrap();
            let g = assert_uniform(&ages);
            assert!(g == 1 || g == 2);
        }
    }
}

#[test]
fn a_truncated_file_is_refused_not_misread() {
    let (_dir, path) = scratch("trunc");
    let mut store = create_age_file(&path, SLOTS).unwrap();
    store.sync(&stamped(7)).unwrap();
    drop(store);
    let full = std::fs::read(&path).unwrap();
    for len in [0, 8, 64, full.len() / 2, full.len() - 1] {
        std::fs::write(&path, &full[..len]).unwrap();
        match open_age_file(&path, SLOTS) {
            Err(PersistError::TooSmall { .. }) => {}
            Ok(_) => panic!("a {len}-byte file opened as an age store"),
            Err(e) => panic!("unexpected error for {len} bytes: {e}"),
        }
    }
}

/// Child side of the kill test: write back ever newer generations until killed.
#[test]
#[ignore = "run as a child process by a_process_killed_mid_write_back_leaves_one_whole_generation"]
fn child_writer() {
    let Ok(path) = std::env::var("NVMSWAP_PERSIST_CHILD") else {
        return;
    };
    let (mut store, ages) = open_age_file(Path::new(&path), SLOTS).unwrap();
    let mut g = assert_uniform(&ages);
    loop {
        g += 1;
        store.sync(&stamped(g)).unwrap();
    }
}

#[test]
fn a_process_killed_mid_write_back_leaves_one_whole_generation() {
    let (_dir, path) = scratch("kill");
    create_age_file(&path, SLOTS).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut last = 0;
    for round in 0..12u64 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "child_writer",
                "--ignored",
                "--test-threads",
                "1",
            ])
            .env("NVMSWAP_PERSIST_CHILD", &path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(30 + 17 * round));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let (_, ages) = open_age_file(&path, SLOTS).unwrap();
        let g = assert_uniform(&ages);
        assert!(g >= last, "generation went back from {last} to {g}");
        last = g;
    }
    assert!(last > 0, "the child never completed a write-back");
}

#[test]
fn file_medium_reports_its_length() {
    let (_dir, path) = scratch("len");
    let m = FileMedium::create(&path, 4096).unwrap();
    assert_eq!(m.size(), 4096);
}
