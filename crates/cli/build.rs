//! Exports the libpmem interposers that crates/pheap/c/pmdk_pht.c defines from the `nvmswap`
//! binary, so that libpmemobj.so's calls into libpmem bind to them and `nvmswap pheap bench`
//! counts libpmemobj's flushes (crates/pheap/build.rs does the same for that package's own
//! tests: cargo passes a package's link arguments to its own targets only). Without
//! libpmemobj installed the pattern matches nothing and the bench reports PMDK as missing.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol=pmem_*");
}
