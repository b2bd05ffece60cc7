//! `nvmswap validate --calibrate` end to end on the running kernel (root; skips with a message
//! otherwise): it calibrates this machine, hands sim the files it wrote, names them in every sim
//! run, and leaves the machine as it found it.

mod uid;

use std::path::Path;
use std::process::Command;

use nvmswap_linux::state::MachineSnapshot;

#[test]
fn validate_calibrates_this_machine_first_and_sim_takes_what_it_measured() {
    if uid::effective_uid() != 0 {
        eprintln!(
            "skipping validate --calibrate: needs root (it calibrates this machine and runs \
             the kernel's zram in a memory cgroup)"
        );
        return;
    }
    let top = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("nvmswap-validate-cal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let before = MachineSnapshot::capture().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_nvmswap"))
        .current_dir(&top)
        .args([
            "validate",
            "--configs",
            "linux-zram",
            "--scale",
            "0.05",
            "--calibrate",
            "--calibrate-runs",
            "1",
            "--calibrate-out",
            out.to_str().unwrap(),
            "--json",
        ])
        .output()
        .expect("binary runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let disk = out.join("calibrated-disk.toml");
    let costs = out.join("calibrated-costs.toml");
    // What it wrote loads as a device profile and as sim's costs.
    nvmswap_core::device::DeviceProfile::resolve(disk.to_str().unwrap()).unwrap();
    nvmswap_linux::calibrate::load_costs(&costs, "lzo-rle").unwrap();
    // The minor fault is the median of the probe's bursts, each listed beside it.
    let costs_text = std::fs::read_to_string(&costs).unwrap();
    assert!(
        costs_text.contains("the median of 8 bursts' p50s ("),
        "{costs_text}"
    );
    let v: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let sims: Vec<&serde_json::Value> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["substrate"] == "sim")
        .collect();
    assert_eq!(sims.len(), 1, "{v}");
    let cal = &sims[0]["extra"]["calibration"];
    assert_eq!(cal["disk_profile"], disk.display().to_string(), "{cal}");
    assert_eq!(cal["costs"], costs.display().to_string(), "{cal}");
    assert_eq!(
        before.differences(&MachineSnapshot::capture().unwrap()),
        Vec::<String>::new(),
        "swap, zswap, cgroups and trace mounts as before"
    );
    let _ = std::fs::remove_dir_all(&out);
}
