//! Builds the libpmemobj PHT benchmark (c/pmdk_pht.c) into a static library when libpmemobj's
//! header is installed (Debian: libpmemobj-dev, which scripts/install-deps installs), and sets
//! `cfg(pmdk)`; without it the benchmark reports that PMDK is missing.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(pmdk)");
    println!("cargo:rerun-if-changed=c/pmdk_pht.c");
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_PMDK").is_none() {
        return;
    }
    let found = [
        "/usr/include/libpmemobj.h",
        "/usr/local/include/libpmemobj.h",
    ]
    .iter()
    .any(|p| std::path::Path::new(p).exists());
    if !found {
        println!("cargo:warning=libpmemobj.h not found: the PMDK comparison is disabled (run scripts/install-deps)");
        return;
    }
    cc::Build::new()
        .file("c/pmdk_pht.c")
        .opt_level(2)
        .warnings(true)
        .compile("nvmswap_pmdk_pht");
    println!("cargo:rustc-link-lib=pmemobj");
    // Export the libpmem interposers of c/pmdk_pht.c from this package's executables (tests),
    // so libpmemobj.so's calls bind to them. Cargo passes link args to this package's own
    // targets only: the `nvmswap` binary does not get them, and reports libpmemobj's flushes
    // as not counted.
    println!("cargo:rustc-link-arg=-Wl,--export-dynamic-symbol=pmem_*");
    println!("cargo:rustc-cfg=pmdk");
}
