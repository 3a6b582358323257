//! Finds libsluice_c.so and links it: $SLUICE_LIB_DIR when set, else the tree's own build
//! (../../build/client, where `cmake --build build` puts it), else what pkg-config says of
//! sluice-c (an installed Sluice). The binaries cargo builds find it at run time too (rpath).
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn has_library(dir: &Path) -> bool {
    dir.join("libsluice_c.so").exists()
}

fn main() {
    println!("cargo:rerun-if-env-changed=SLUICE_LIB_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(dir) = env::var("SLUICE_LIB_DIR") {
        candidates.push(PathBuf::from(dir));
    }
    candidates.push(manifest.join("../../build/client"));
    if let Ok(out) = Command::new("pkg-config").args(["--variable=libdir", "sluice-c"]).output() {
        if out.status.success() {
            let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !dir.is_empty() {
                candidates.push(PathBuf::from(dir));
            }
        }
    }
    let dir = match candidates.iter().find(|d| has_library(d)) {
        Some(dir) => dir.canonicalize().unwrap_or_else(|_| dir.clone()),
        None => panic!(
            "libsluice_c.so not found in {:?}: build Sluice first (cmake --build build), or \
             set SLUICE_LIB_DIR, or install Sluice where pkg-config finds sluice-c",
            candidates
        ),
    };
    println!("cargo:rerun-if-changed={}", dir.join("libsluice_c.so").display());
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=sluice_c");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
}
