//! The C ABI of libsluice_c.so, declared by hand from client/c/sluice.h (ABI version 1).
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int};

pub const SLUICE_C_ABI_VERSION: u32 = 1;

#[repr(C)]
pub struct sluice_status {
    _private: [u8; 0],
}

#[repr(C)]
pub struct sluice_dispatch {
    _private: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct sluice_resource {
    pub owner: u64,
    pub id: u64,
}

#[repr(C)]
pub struct sluice_remote_options {
    pub target: *const c_char,
    pub client_name: *const c_char,
    pub token: *const c_char,
    pub tls: c_int,
    pub tls_ca: *const c_char,
    pub tls_cert: *const c_char,
    pub tls_key: *const c_char,
    pub tls_server_name: *const c_char,
    pub not_resumable: c_int,
    pub pipelined: c_int,
    pub chunk_size: u32,
    pub connect_timeout_ms: u32,
    pub call_timeout_ms: u32,
}

#[repr(C)]
pub struct sluice_upload_range {
    pub resource: sluice_resource,
    pub offset: u64,
    pub bytes: *const u8,
    pub length: usize,
}

#[repr(C)]
pub struct sluice_read_range {
    pub resource: sluice_resource,
    pub offset: u64,
    pub length: u64,
}

#[repr(C)]
pub struct sluice_program {
    pub kernel: *const c_char,
    pub version: u32,
    pub params: *const u64,
    pub param_count: usize,
}

#[repr(C)]
pub struct sluice_step {
    pub program: *const sluice_program,
    pub resources: *const sluice_resource,
    pub resource_count: usize,
    pub grid: *const u32,
}

extern "C" {
    pub fn sluice_abi_version() -> u32;
    pub fn sluice_status_code(status: *const sluice_status) -> c_int;
    pub fn sluice_status_message(status: *const sluice_status) -> *const c_char;
    pub fn sluice_status_free(status: *mut sluice_status);
    pub fn sluice_code_name(code: c_int) -> *const c_char;

    pub fn sluice_remote_connect(
        options: *const sluice_remote_options,
        options_size: usize,
        out: *mut *mut sluice_dispatch,
    ) -> *mut sluice_status;
    pub fn sluice_local_open(out: *mut *mut sluice_dispatch) -> *mut sluice_status;
    pub fn sluice_dispatch_close(dispatch: *mut sluice_dispatch);
    pub fn sluice_backend_id(dispatch: *const sluice_dispatch) -> *const c_char;
    pub fn sluice_backend_version(dispatch: *const sluice_dispatch) -> *const c_char;

    pub fn sluice_allocate(
        dispatch: *mut sluice_dispatch,
        byte_len: u64,
        out: *mut sluice_resource,
    ) -> *mut sluice_status;
    pub fn sluice_free(dispatch: *mut sluice_dispatch, resource: sluice_resource)
        -> *mut sluice_status;
    pub fn sluice_upload(
        dispatch: *mut sluice_dispatch,
        resource: sluice_resource,
        bytes: *const u8,
        length: usize,
    ) -> *mut sluice_status;
    pub fn sluice_upload_many(
        dispatch: *mut sluice_dispatch,
        uploads: *const sluice_upload_range,
        count: usize,
    ) -> *mut sluice_status;
    pub fn sluice_upload_at_many(
        dispatch: *mut sluice_dispatch,
        uploads: *const sluice_upload_range,
        count: usize,
    ) -> *mut sluice_status;
    pub fn sluice_download(
        dispatch: *mut sluice_dispatch,
        resource: sluice_resource,
        output: *mut u8,
        capacity: usize,
        size: *mut usize,
    ) -> *mut sluice_status;
    pub fn sluice_download_ranges(
        dispatch: *mut sluice_dispatch,
        ranges: *const sluice_read_range,
        count: usize,
        outputs: *const *mut u8,
    ) -> *mut sluice_status;
    pub fn sluice_dispatch_program(
        dispatch: *mut sluice_dispatch,
        program: *const sluice_program,
        resources: *const sluice_resource,
        resource_count: usize,
        grid: *const u32,
    ) -> *mut sluice_status;
    pub fn sluice_dispatch_repeated_sequence(
        dispatch: *mut sluice_dispatch,
        prefix: *const sluice_step,
        prefix_count: usize,
        repeated: *const sluice_step,
        repeated_count: usize,
        repeat_count: u32,
        ranges: *const sluice_read_range,
        range_count: usize,
        outputs: *const *mut u8,
    ) -> *mut sluice_status;
    pub fn sluice_cancel(dispatch: *mut sluice_dispatch);
}
