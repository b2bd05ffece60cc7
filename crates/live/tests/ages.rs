//! Heap-Wear's ages on the `file` back-end outlive the pager (seed 001 §3.3: ages kept in
//! crash-consistent shadow arrays), so a restarted tier levels wear from where it stopped.

use nvmswap_core::kinds::NvmBackend;
use nvmswap_live::tiers::Nvm;
use nvmswap_live::PAGE;

#[test]
fn ages_survive_a_restart_on_the_file_back_end() {
    let path = std::env::temp_dir().join(format!("nvmswap-ages-test-{}", std::process::id()));
    std::fs::write(&path, b"").unwrap();
    let backend = NvmBackend::File(path.display().to_string());
    let age_file = format!("{}.ages", path.display());
    let page = [0x5au8; PAGE];
    let before: Vec<u32> = {
        let mut nvm = Nvm::new(&backend, 64, "heap-wear").unwrap();
        for _ in 0..500 {
            let slot = nvm.store(&page).unwrap();
            nvm.free(slot);
        }
        nvm.ages().unwrap().to_vec()
    }; // dropped: ages written back
    assert_eq!(before.iter().map(|&a| a as u64).sum::<u64>(), 500);
    let mut nvm = Nvm::new(&backend, 64, "heap-wear").unwrap();
    assert_eq!(nvm.ages().unwrap(), &before[..], "ages recovered");
    // Wear levelling goes on from there: the next write goes to one of the youngest slots.
    let youngest = *before.iter().min().unwrap();
    let slot = nvm.store(&page).unwrap();
    let ages = nvm.ages().unwrap();
    let written = (0..64).find(|&s| ages[s] != before[s]).unwrap();
    assert!(
        before[written] <= youngest + 16,
        "slot {written} (age {}) taken, youngest {youngest}",
        before[written]
    );
    nvm.free(slot);
    drop(nvm);
    // A tier of another size, larger or smaller, does not silently reuse the file.
    for slots in [128, 32] {
        let err = Nvm::new(&backend, slots, "heap-wear").err().unwrap();
        assert!(err.to_string().contains(".ages"), "{slots} slots: {err}");
    }
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(&age_file).unwrap();
}
