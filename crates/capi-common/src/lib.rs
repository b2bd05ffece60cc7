//! What the C ABI crates (`live-capi`, `pheap-capi`) share, so each keeps only its own
//! functions:
//!
//! * the per-thread last-error message behind `nvmswap_last_error` / `nvmswap_pheap_last_error`
//!   and `guarded`, which turns an error or a caught panic into a return value and a message (no
//!   Rust panic crosses into C);
//! * `write_header` (feature `build`): the cbindgen run of each crate's build script;
//! * `testing`: what each crate's C-example test does (the checked-in header is the generated
//!   one; the static library builds, a C program compiles against it, links and runs).

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Leave `message` for this thread's last-error function (NUL bytes become spaces).
pub fn set_error(message: &str) {
    let c = CString::new(message.replace('\0', " ")).expect("NUL bytes were replaced");
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// This thread's last error message ("" if none), valid until the next `set_error` on this
/// thread.
pub fn last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Runs `f`, turning an error or a panic into `on_error` and a message for the last-error
/// function.
pub fn guarded<T>(on_error: T, f: impl FnOnce() -> Result<T, String>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(message)) => {
            set_error(&message);
            on_error
        }
        Err(_) => {
            set_error("internal error (a panic was caught at the C boundary)");
            on_error
        }
    }
}

/// A C string argument as `&str`, or an error naming it.
///
/// # Safety
/// `s` is NULL or a NUL-terminated string that outlives `'a`.
pub unsafe fn text<'a>(s: *const c_char, what: &str) -> Result<&'a str, String> {
    if s.is_null() {
        return Err(format!("{what} is NULL"));
    }
    // SAFETY: not NULL, and NUL-terminated and alive for 'a (function contract).
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map_err(|_| format!("{what} is not UTF-8"))
}

/// For build.rs: generate the C header of the crate being built from its `extern "C"`
/// declarations (and its cbindgen.toml) into `OUT_DIR/<file>`. The crate's C-example test
/// checks that its checked-in copy in include/ is the same.
#[cfg(feature = "build")]
pub fn write_header(file: &str) {
    let crate_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let config = cbindgen::Config::from_root_or_default(&crate_dir);
    cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("the C ABI declarations generate a header")
        .write_to_file(std::path::Path::new(&out_dir).join(file));
    println!("cargo:rerun-if-changed=src/lib.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
}

/// What the C-example tests of the C ABI crates check.
pub mod testing {
    use std::path::{Path, PathBuf};
    use std::process::{Command, Output};

    /// Panics unless `include/<header>` under `manifest_dir` equals `<out_dir>/<header>`.
    pub fn assert_header_fresh(out_dir: &str, manifest_dir: &Path, header: &str) {
        let generated = std::fs::read_to_string(Path::new(out_dir).join(header)).unwrap();
        let checked_in =
            std::fs::read_to_string(manifest_dir.join("include").join(header)).unwrap_or_default();
        assert!(
            generated == checked_in,
            "include/{header} is stale: copy {out_dir}/{header} over it"
        );
    }

    /// The C compiler, or `None` (the caller skips) when there is none.
    pub fn c_compiler() -> Option<String> {
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        if Command::new(&cc).arg("--version").output().is_err() {
            eprintln!("skipping: no C compiler ({cc})");
            return None;
        }
        Some(cc)
    }

    /// The directory cargo put the running test's profile artefacts in (target/<profile>).
    fn profile_dir() -> PathBuf {
        let exe = std::env::current_exe().unwrap();
        exe.parent() // deps
            .and_then(Path::parent)
            .expect("test binary lives in target/<profile>/deps")
            .to_path_buf()
    }

    /// Build `package`'s static library `lib<lib>.a` (`cargo test` builds the crate as an rlib
    /// only) with the same cargo, profile and target directory; compile `example` (relative to
    /// `manifest_dir`) against its include/ and link it; run it with `args`. Returns the run's
    /// output; the program is removed.
    pub fn build_and_run_c_example(
        cc: &str,
        manifest_dir: &Path,
        package: &str,
        lib: &str,
        example: &str,
        args: &[&std::ffi::OsStr],
    ) -> Output {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        // A profile whose artefacts go where the running test lives: `cargo test` puts its
        // tests in target/debug (as profile `test` does), `cargo test --release` in
        // target/release. A library built into the other directory would leave whatever
        // archive this one holds (from another build, with other features) to be linked.
        let profile = match profile_dir().file_name().and_then(|n| n.to_str()) {
            Some("release") => "release",
            _ => "test",
        };
        let built = Command::new(&cargo)
            .args(["build", "--profile", profile, "-p", package, "--lib"])
            .current_dir(manifest_dir)
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "cargo build of the static library failed: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        let lib = profile_dir().join(format!("lib{lib}.a"));
        assert!(lib.exists(), "{} was not built", lib.display());
        let out = std::env::temp_dir().join(format!("{package}-demo-{}", std::process::id()));
        let build = Command::new(cc)
            .arg("-std=c11")
            .arg("-Wall")
            .arg("-Werror")
            .arg("-I")
            .arg(manifest_dir.join("include"))
            .arg(manifest_dir.join(example))
            .arg(&lib)
            .args(["-lpthread", "-ldl", "-lm", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            build.status.success(),
            "cc failed: {}",
            String::from_utf8_lossy(&build.stderr)
        );
        let run = Command::new(&out).args(args).output().unwrap();
        let _ = std::fs::remove_file(&out);
        assert!(
            run.status.success(),
            "{example} failed: {} {}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        );
        run
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_panics_become_the_error_value_and_a_message() {
        assert_eq!(guarded(-1, || Ok(7)), 7);
        assert_eq!(guarded(-1, || Err("bad\0thing".into())), -1);
        // SAFETY: last_error returns this thread's NUL-terminated message.
        let m = unsafe { CStr::from_ptr(last_error()) }.to_str().unwrap();
        assert_eq!(m, "bad thing");
        assert_eq!(
            guarded(-2, || -> Result<i32, String> { panic!("boom") }),
            -2
        );
        // SAFETY: as above.
        let m = unsafe { CStr::from_ptr(last_error()) }.to_str().unwrap();
        assert!(m.contains("panic"), "{m}");
    }
}
