//! The crate against the C++ client it wraps, on one daemon: 4-byte ranged-read latency and
//! upload throughput through `sluice::RemoteDispatch`, and the same calls made straight on the
//! C ABI (the C++ client behind a C shim, as a C caller uses it), alternated in rounds; prints
//! each and their ratios (crate / C++).
//!
//!   cargo run --release --example remote_bench -- HOST:PORT [SAMPLES] [UPLOAD_MIB]
use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::ptr;
use std::time::Instant;

use sluice::{IfdsResidentDispatch, RemoteDispatch};

// The few C ABI calls the baseline makes (client/c/sluice.h).
#[repr(C)]
struct Options {
    target: *const c_char,
    client_name: *const c_char,
    token: *const c_char,
    tls: c_int,
    tls_ca: *const c_char,
    tls_cert: *const c_char,
    tls_key: *const c_char,
    tls_server_name: *const c_char,
    not_resumable: c_int,
    pipelined: c_int,
    chunk_size: u32,
    connect_timeout_ms: u32,
    call_timeout_ms: u32,
}
#[repr(C)]
#[derive(Clone, Copy)]
struct Res {
    owner: u64,
    id: u64,
}
#[repr(C)]
struct Range {
    resource: Res,
    offset: u64,
    length: u64,
}
extern "C" {
    fn sluice_remote_connect(o: *const Options, size: usize, out: *mut *mut u8) -> *mut u8;
    fn sluice_allocate(d: *mut u8, len: u64, out: *mut Res) -> *mut u8;
    fn sluice_upload(d: *mut u8, r: Res, bytes: *const u8, len: usize) -> *mut u8;
    fn sluice_download_ranges(d: *mut u8, r: *const Range, n: usize, out: *const *mut u8) -> *mut u8;
    fn sluice_dispatch_close(d: *mut u8);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let target = args.get(1).ok_or("usage: remote_bench HOST:PORT [SAMPLES] [UPLOAD_MIB]")?;
    let samples: usize = args.get(2).map_or(Ok(2000), |s| s.parse()).map_err(|e| format!("{e}"))?;
    let mib: usize = args.get(3).map_or(Ok(64), |s| s.parse()).map_err(|e| format!("{e}"))?;
    let rounds = 5;

    let crate_d = RemoteDispatch::connect(target)?;
    let c_target = CString::new(target.as_str()).map_err(|e| e.to_string())?;
    let options = Options {
        target: c_target.as_ptr(),
        client_name: ptr::null(),
        token: ptr::null(),
        tls: 0,
        tls_ca: ptr::null(),
        tls_cert: ptr::null(),
        tls_key: ptr::null(),
        tls_server_name: ptr::null(),
        not_resumable: 0,
        pipelined: 0,
        chunk_size: 0,
        connect_timeout_ms: 0,
        call_timeout_ms: 0,
    };
    let mut raw = ptr::null_mut();
    let bytes = vec![7u8; mib << 20];
    let mut c_res = Res { owner: 0, id: 0 };
    unsafe {
        if !sluice_remote_connect(&options, std::mem::size_of::<Options>(), &mut raw).is_null()
            || !sluice_allocate(raw, bytes.len() as u64, &mut c_res).is_null()
        {
            return Err("the C ABI's session could not open or allocate".to_string());
        }
    }
    let r = crate_d.allocate_resident(bytes.len())?;

    let (mut crate_reads, mut c_reads) = (Vec::new(), Vec::new());
    let (mut crate_up, mut c_up) = (Vec::new(), Vec::new());
    let mut out = Vec::with_capacity(4);
    let mut word = [0u8; 4];
    for _ in 0..rounds {
        for _ in 0..samples {
            let t = Instant::now();
            crate_d.download_resident_range_into(&r, 4096, 4, &mut out)?;
            crate_reads.push(t.elapsed().as_secs_f64() * 1e6);
            let range = Range { resource: c_res, offset: 4096, length: 4 };
            let pointer = word.as_mut_ptr();
            let t = Instant::now();
            let status = unsafe { sluice_download_ranges(raw, &range, 1, &pointer) };
            c_reads.push(t.elapsed().as_secs_f64() * 1e6);
            if !status.is_null() {
                return Err("a C ABI read failed".to_string());
            }
        }
        let t = Instant::now();
        crate_d.upload_resident(&r, &bytes)?;
        crate_up.push(bytes.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
        let t = Instant::now();
        let status = unsafe { sluice_upload(raw, c_res, bytes.as_ptr(), bytes.len()) };
        c_up.push(bytes.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
        if !status.is_null() {
            return Err("a C ABI upload failed".to_string());
        }
    }
    crate_d.free_resident(r)?;
    unsafe { sluice_dispatch_close(raw) };
    let (cr, cc) = (median(crate_reads), median(c_reads));
    let (ur, uc) = (median(crate_up), median(c_up));
    println!("4-byte ranged read p50: crate {cr:.1} us, C++ client {cc:.1} us: {:.2}x", cr / cc);
    println!("upload of {mib} MiB: crate {ur:.0} MB/s, C++ client {uc:.0} MB/s: {:.2}x", ur / uc);
    Ok(())
}
