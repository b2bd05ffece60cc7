//! Generates the C header from the crate's `extern "C"` declarations into OUT_DIR; a test
//! (tests/c_example.rs) checks that the copy in include/ is the same, so the checked-in header
//! never goes stale.

fn main() {
    nvmswap_capi_common::write_header("nvmswap.h");
}
