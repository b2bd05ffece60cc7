//! Generates the C header from the crate's `extern "C"` declarations into OUT_DIR; a test
//! (tests/c_example.rs) checks that the copy in include/ is the same, so the checked-in header
//! never goes stale.

fn main() {
    let crate_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let config = cbindgen::Config::from_root_or_default(&crate_dir);
    cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("the C ABI declarations generate a header")
        .write_to_file(std::path::Path::new(&out_dir).join("nvmswap_pheap.h"));
    println!("cargo:rerun-if-changed=src/lib.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
}
