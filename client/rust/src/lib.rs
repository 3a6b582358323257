//! Sluice for Rust: the `IfdsResidentDispatch` trait, declared as the seed declares it, and two
//! implementations of it over Sluice's C client library (libsluice_c.so): [`RemoteDispatch`], a
//! session on a sluiced daemon, and [`LocalDispatch`], in-process on the CPU device.
//!
//! ```no_run
//! use sluice::{IfdsResidentDispatch, Program, RemoteDispatch};
//! let d = RemoteDispatch::connect("127.0.0.1:7450")?;
//! let counts = d.allocate_resident(4 * 1024)?;
//! d.dispatch_resident(&Program::new("iota_u32", vec![0, 1]), &[counts], None)?;
//! let tail = d.download_resident_range(&counts, 4 * 1020, 16)?; // moves 16 bytes
//! d.free_resident(counts)?;
//! # Ok::<(), String>(())
//! ```
//!
//! Errors are `String`s that start with the status code's name and a colon
//! (`"NOT_FOUND: ..."`, `"OUT_OF_RANGE: ..."`), so a caller can match on the code; the codes
//! are those of the C and C++ APIs (client/c/sluice.h).

mod ffi;

use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::ptr;
use std::sync::Mutex;

/// A kernel of the catalog (`sluice info` lists them), its scalar parameters in order, and the
/// kernel version the caller was written for (0: whichever the backend has).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub kernel: String,
    pub version: u32,
    pub params: Vec<u64>,
}

impl Program {
    /// `kernel` with `params`, at whichever version the backend has.
    pub fn new(kernel: &str, params: Vec<u64>) -> Program {
        Program { kernel: kernel.to_string(), version: 0, params }
    }
    /// `kernel` pinned to `version`: another version on the backend is FAILED_PRECONDITION.
    pub fn versioned(kernel: &str, version: u32, params: Vec<u64>) -> Program {
        Program { kernel: kernel.to_string(), version, params }
    }
}

/// Backend-neutral resident dispatch hooks for IFDS, as the seed declares them: resident
/// buffers that stay on the device between kernel windows, ranged transfers, and sequences of
/// programs with their reads behind one fence.
pub trait IfdsResidentDispatch {
    /// Opaque backend-owned resident handle.
    type Resource: Clone + PartialEq;

    /// Stable backend/device identity for resident resource ownership.
    fn resident_backend_id(&self) -> &'static str;
    /// Allocate a resident buffer of exactly `byte_len` bytes.
    fn allocate_resident(&self, byte_len: usize) -> Result<Self::Resource, String>;
    /// Upload bytes into a resident buffer.
    fn upload_resident(&self, resource: &Self::Resource, bytes: &[u8]) -> Result<(), String>;
    /// Upload several resident buffers as one logical staging operation.
    fn upload_resident_many(&self, uploads: &[(&Self::Resource, &[u8])]) -> Result<(), String>;
    /// Download a resident buffer.
    fn download_resident(&self, resource: &Self::Resource) -> Result<Vec<u8>, String>;
    /// Download a resident buffer into caller-owned host storage.
    fn download_resident_into(
        &self,
        resource: &Self::Resource,
        output: &mut Vec<u8>,
    ) -> Result<(), String>;
    /// Download one byte range from a resident buffer.
    fn download_resident_range(
        &self,
        resource: &Self::Resource,
        byte_offset: usize,
        byte_len: usize,
    ) -> Result<Vec<u8>, String>;
    /// Download one byte range from a resident buffer into caller-owned host storage.
    fn download_resident_range_into(
        &self,
        resource: &Self::Resource,
        byte_offset: usize,
        byte_len: usize,
        output: &mut Vec<u8>,
    ) -> Result<(), String>;
    /// Free a resident buffer.
    fn free_resident(&self, resource: Self::Resource) -> Result<(), String>;
    /// Dispatch `program` with resident buffers in binding order.
    fn dispatch_resident(
        &self,
        program: &Program,
        resources: &[Self::Resource],
        grid_override: Option<[u32; 3]>,
    ) -> Result<(), String>;

    /// Stable backend implementation version for resident cache compatibility.
    fn resident_backend_version(&self) -> &'static str {
        "unversioned"
    }

    /// Upload byte ranges into resident buffers as one logical staging operation. The default
    /// only supports zero-offset uploads and forwards them through `upload_resident_many`.
    fn upload_resident_at_many(
        &self,
        uploads: &[(&Self::Resource, usize, &[u8])],
    ) -> Result<(), String> {
        if let Some((_, offset, _)) = uploads.iter().find(|(_, offset, _)| *offset != 0) {
            return Err(format!(
                "INVALID_ARGUMENT: this dispatcher uploads at offset 0 only (an upload at {offset})"
            ));
        }
        let whole: Vec<(&Self::Resource, &[u8])> =
            uploads.iter().map(|(r, _, bytes)| (*r, *bytes)).collect();
        self.upload_resident_many(&whole)
    }

    /// Download several resident byte ranges into caller-owned host buffers as one logical
    /// readback operation.
    fn download_resident_ranges_into(
        &self,
        ranges: &[(&Self::Resource, usize, usize)],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<(), String> {
        if ranges.len() != outputs.len() {
            return Err(format!(
                "INVALID_ARGUMENT: {} ranges and {} outputs",
                ranges.len(),
                outputs.len()
            ));
        }
        for ((resource, offset, len), output) in ranges.iter().zip(outputs.iter_mut()) {
            self.download_resident_range_into(resource, *offset, *len, output)?;
        }
        Ok(())
    }

    /// Dispatch an ordered sequence of resident-buffer programs and read selected resident
    /// byte ranges into caller-owned host buffers.
    fn dispatch_resident_sequence_read_ranges_into(
        &self,
        steps: &[(&Program, &[Self::Resource], Option<[u32; 3]>)],
        read_ranges: &[(&Self::Resource, usize, usize)],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<(), String> {
        for (program, resources, grid) in steps {
            self.dispatch_resident(program, resources, *grid)?;
        }
        self.download_resident_ranges_into(read_ranges, outputs)
    }

    /// Dispatch a resident sequence prefix, repeat a resident sub-sequence, and read selected
    /// resident byte ranges into caller-owned host buffers.
    fn dispatch_resident_repeated_sequence_read_ranges_into(
        &self,
        prefix_steps: &[(&Program, &[Self::Resource], Option<[u32; 3]>)],
        repeated_steps: &[(&Program, &[Self::Resource], Option<[u32; 3]>)],
        repeat_count: u32,
        read_ranges: &[(&Self::Resource, usize, usize)],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<(), String> {
        for (program, resources, grid) in prefix_steps {
            self.dispatch_resident(program, resources, *grid)?;
        }
        for _ in 0..repeat_count {
            for (program, resources, grid) in repeated_steps {
                self.dispatch_resident(program, resources, *grid)?;
            }
        }
        self.download_resident_ranges_into(read_ranges, outputs)
    }
}

/// A resident buffer of a Sluice dispatcher: a value, copied and compared freely, meaningful
/// only to the dispatcher that issued it (another's is FAILED_PRECONDITION, a freed one
/// NOT_FOUND).
/// Laid out as the C ABI's `sluice_resource` (`transparent`): a slice of them is passed as
/// theirs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Resource(ffi::sluice_resource);

/// The name of a status code (`"NOT_FOUND"`), as error strings begin.
fn code_name(code: i32) -> String {
    // SAFETY: sluice_code_name returns a static NUL-terminated string for any value.
    unsafe { CStr::from_ptr(ffi::sluice_code_name(code)) }.to_string_lossy().into_owned()
}

/// Ok for a null status; else "CODE: message", the status freed.
fn check(status: *mut ffi::sluice_status) -> Result<(), String> {
    if status.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null status from the library, read and then freed exactly once.
    unsafe {
        let code = ffi::sluice_status_code(status);
        let message = CStr::from_ptr(ffi::sluice_status_message(status)).to_string_lossy();
        let text = format!("{}: {}", code_name(code), message);
        ffi::sluice_status_free(status);
        Err(text)
    }
}

/// Strings the seed wants as `&'static str` (backend ids and versions): each distinct string
/// is leaked once for the life of the process and shared by every dispatcher that reports it,
/// so opening dispatchers again and again holds no more memory.
fn intern(s: &str) -> &'static str {
    static INTERNED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut interned = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = interned.iter().find(|known| **known == s) {
        return found;
    }
    let leaked: &'static str = Box::leak(s.to_string().into_boxed_str());
    interned.push(leaked);
    leaked
}

fn c_string(s: &str, what: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("INVALID_ARGUMENT: {what} contains a NUL byte"))
}

fn to_u64(n: usize) -> u64 {
    n as u64 // usize is at most 64 bits on every target Sluice builds for
}

/// Programs and steps as the C ABI takes them; the pointers point into `self`, which must not
/// move while they are used (it is built, then used, in one call).
struct CSteps {
    names: Vec<CString>,
    programs: Vec<ffi::sluice_program>,
    steps: Vec<ffi::sluice_step>,
}

impl CSteps {
    fn new(
        groups: &[&[(&Program, &[Resource], Option<[u32; 3]>)]],
    ) -> Result<CSteps, String> {
        let all: Vec<&(&Program, &[Resource], Option<[u32; 3]>)> =
            groups.iter().flat_map(|g| g.iter()).collect();
        let mut names = Vec::with_capacity(all.len());
        for (program, _, _) in &all {
            names.push(c_string(&program.kernel, "a kernel name")?);
        }
        let programs: Vec<ffi::sluice_program> = all
            .iter()
            .zip(names.iter())
            .map(|((program, _, _), name)| ffi::sluice_program {
                kernel: name.as_ptr(),
                version: program.version,
                params: program.params.as_ptr(),
                param_count: program.params.len(),
            })
            .collect();
        let steps = all
            .iter()
            .zip(programs.iter())
            .map(|((_, resources, grid), program)| ffi::sluice_step {
                program: program as *const ffi::sluice_program,
                resources: resources.as_ptr() as *const ffi::sluice_resource,
                resource_count: resources.len(),
                grid: match grid {
                    Some(g) => g.as_ptr(),
                    None => ptr::null(),
                },
            })
            .collect();
        Ok(CSteps { names, programs, steps })
    }
}

/// Ranges and their outputs as the C ABI takes them: each output vector is emptied and given
/// room for its range (its capacity reused), to be written in place; `set_lengths` then gives
/// each its range's length once the read succeeded.
fn c_reads(
    ranges: &[(&Resource, usize, usize)],
    outputs: &mut [&mut Vec<u8>],
) -> Result<(Vec<ffi::sluice_read_range>, Vec<*mut u8>), String> {
    if ranges.len() != outputs.len() {
        return Err(format!(
            "INVALID_ARGUMENT: {} ranges and {} outputs",
            ranges.len(),
            outputs.len()
        ));
    }
    let reads = ranges
        .iter()
        .map(|(r, offset, len)| ffi::sluice_read_range {
            resource: r.0,
            offset: to_u64(*offset),
            length: to_u64(*len),
        })
        .collect();
    let mut pointers = Vec::with_capacity(outputs.len());
    for (i, ((_, _, len), output)) in ranges.iter().zip(outputs.iter_mut()).enumerate() {
        output.clear();
        // Room the process cannot have (a range of usize::MAX bytes) is an error, not a panic
        // or an abort: the library checks the range against its buffer only once called.
        output.try_reserve_exact(*len).map_err(|_| {
            format!("RESOURCE_EXHAUSTED: range {i}: this process cannot hold {len} bytes")
        })?;
        pointers.push(output.as_mut_ptr());
    }
    Ok((reads, pointers))
}

/// After a successful read: every output holds its range (the library wrote all of it).
fn set_lengths(ranges: &[(&Resource, usize, usize)], outputs: &mut [&mut Vec<u8>]) {
    for ((_, _, len), output) in ranges.iter().zip(outputs.iter_mut()) {
        // SAFETY: c_reads reserved `len` bytes, and the read that succeeded wrote them all.
        unsafe { output.set_len(*len) };
    }
}

/// What RemoteDispatch and LocalDispatch share: a dispatcher of the C ABI.
struct Dispatcher {
    raw: *mut ffi::sluice_dispatch,
    backend_id: &'static str,
    backend_version: &'static str,
}

// SAFETY: the C ABI's dispatchers may be used from several threads at once
// (client/c/sluice.h); the handle is closed only in Drop.
unsafe impl Send for Dispatcher {}
unsafe impl Sync for Dispatcher {}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        // SAFETY: the handle came from the library and is closed once.
        unsafe { ffi::sluice_dispatch_close(self.raw) }
    }
}

impl Dispatcher {
    fn adopt(raw: *mut ffi::sluice_dispatch) -> Dispatcher {
        // SAFETY: the strings live as long as the dispatcher; they are copied here.
        let (id, version) = unsafe {
            (
                CStr::from_ptr(ffi::sluice_backend_id(raw)).to_string_lossy().into_owned(),
                CStr::from_ptr(ffi::sluice_backend_version(raw)).to_string_lossy().into_owned(),
            )
        };
        Dispatcher { raw, backend_id: intern(&id), backend_version: intern(&version) }
    }

    fn allocate(&self, byte_len: usize) -> Result<Resource, String> {
        let mut out = ffi::sluice_resource { owner: 0, id: 0 };
        // SAFETY: `out` is valid for the call.
        check(unsafe { ffi::sluice_allocate(self.raw, to_u64(byte_len), &mut out) })?;
        Ok(Resource(out))
    }

    fn free(&self, resource: Resource) -> Result<(), String> {
        check(unsafe { ffi::sluice_free(self.raw, resource.0) })
    }

    fn upload(&self, resource: &Resource, bytes: &[u8]) -> Result<(), String> {
        check(unsafe { ffi::sluice_upload(self.raw, resource.0, bytes.as_ptr(), bytes.len()) })
    }

    fn upload_ranges(
        &self,
        uploads: &[(&Resource, usize, &[u8])],
        at_offsets: bool,
    ) -> Result<(), String> {
        let c: Vec<ffi::sluice_upload_range> = uploads
            .iter()
            .map(|(r, offset, bytes)| ffi::sluice_upload_range {
                resource: r.0,
                offset: to_u64(*offset),
                bytes: bytes.as_ptr(),
                length: bytes.len(),
            })
            .collect();
        // SAFETY: `c` and the bytes it points to outlive the call.
        check(unsafe {
            if at_offsets {
                ffi::sluice_upload_at_many(self.raw, c.as_ptr(), c.len())
            } else {
                ffi::sluice_upload_many(self.raw, c.as_ptr(), c.len())
            }
        })
    }

    fn download_into(&self, resource: &Resource, output: &mut Vec<u8>) -> Result<(), String> {
        output.clear();
        loop {
            let capacity = output.capacity();
            let mut size = 0usize;
            // SAFETY: the output has room for `capacity` bytes; on success the library wrote
            // `size` <= capacity of them.
            let status = unsafe {
                ffi::sluice_download(self.raw, resource.0, output.as_mut_ptr(), capacity, &mut size)
            };
            if status.is_null() {
                unsafe { output.set_len(size) };
                return Ok(());
            }
            if size > capacity {
                // The buffer is larger than the vector's room: make room, and read again.
                unsafe { ffi::sluice_status_free(status) };
                output.try_reserve_exact(size).map_err(|_| {
                    format!(
                        "RESOURCE_EXHAUSTED: this process cannot hold the buffer's {size} bytes"
                    )
                })?;
                continue;
            }
            return check(status);
        }
    }

    fn read_ranges(
        &self,
        ranges: &[(&Resource, usize, usize)],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<(), String> {
        let (reads, pointers) = c_reads(ranges, outputs)?;
        // SAFETY: the reads and the outputs (room for each range) outlive the call.
        check(unsafe {
            ffi::sluice_download_ranges(self.raw, reads.as_ptr(), reads.len(), pointers.as_ptr())
        })?;
        set_lengths(ranges, outputs);
        Ok(())
    }

    fn dispatch(
        &self,
        program: &Program,
        resources: &[Resource],
        grid: Option<[u32; 3]>,
    ) -> Result<(), String> {
        let step: [(&Program, &[Resource], Option<[u32; 3]>); 1] = [(program, resources, grid)];
        let c = CSteps::new(&[&step])?;
        let s = &c.steps[0];
        // SAFETY: `c` (and what it points to) outlives the call.
        check(unsafe {
            ffi::sluice_dispatch_program(self.raw, s.program, s.resources, s.resource_count, s.grid)
        })
    }

    fn dispatch_repeated(
        &self,
        prefix: &[(&Program, &[Resource], Option<[u32; 3]>)],
        repeated: &[(&Program, &[Resource], Option<[u32; 3]>)],
        repeat_count: u32,
        ranges: &[(&Resource, usize, usize)],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<(), String> {
        let c = CSteps::new(&[prefix, repeated])?;
        let (reads, pointers) = c_reads(ranges, outputs)?;
        let (first, again) = c.steps.split_at(prefix.len());
        // SAFETY: the steps, reads and outputs (each its range's length) outlive the call.
        let status = unsafe {
            ffi::sluice_dispatch_repeated_sequence(
                self.raw,
                first.as_ptr(),
                first.len(),
                again.as_ptr(),
                again.len(),
                repeat_count,
                reads.as_ptr(),
                reads.len(),
                pointers.as_ptr(),
            )
        };
        let _ = (&c.names, &c.programs); // what the steps point to lives until here
        check(status)?;
        set_lengths(ranges, outputs);
        Ok(())
    }
}

/// Implements the trait for a wrapper of `Dispatcher`, overriding every provided method the
/// seed says a real backend overrides: batched and ranged uploads as one staging operation,
/// real ranged reads, sequences with their reads behind one fence, repeated sequences
/// forwarded to the device (never looped on the host).
macro_rules! implement_dispatch {
    ($name:ident) => {
        impl IfdsResidentDispatch for $name {
            type Resource = Resource;

            fn resident_backend_id(&self) -> &'static str {
                self.0.backend_id
            }
            fn resident_backend_version(&self) -> &'static str {
                self.0.backend_version
            }
            fn allocate_resident(&self, byte_len: usize) -> Result<Resource, String> {
                self.0.allocate(byte_len)
            }
            fn upload_resident(&self, resource: &Resource, bytes: &[u8]) -> Result<(), String> {
                self.0.upload(resource, bytes)
            }
            fn upload_resident_many(&self, uploads: &[(&Resource, &[u8])]) -> Result<(), String> {
                let at: Vec<(&Resource, usize, &[u8])> =
                    uploads.iter().map(|(r, bytes)| (*r, 0usize, *bytes)).collect();
                self.0.upload_ranges(&at, false)
            }
            fn upload_resident_at_many(
                &self,
                uploads: &[(&Resource, usize, &[u8])],
            ) -> Result<(), String> {
                self.0.upload_ranges(uploads, true)
            }
            fn download_resident(&self, resource: &Resource) -> Result<Vec<u8>, String> {
                let mut out = Vec::new();
                self.0.download_into(resource, &mut out)?;
                Ok(out)
            }
            fn download_resident_into(
                &self,
                resource: &Resource,
                output: &mut Vec<u8>,
            ) -> Result<(), String> {
                self.0.download_into(resource, output)
            }
            fn download_resident_range(
                &self,
                resource: &Resource,
                byte_offset: usize,
                byte_len: usize,
            ) -> Result<Vec<u8>, String> {
                let mut out = Vec::new();
                self.0.read_ranges(&[(resource, byte_offset, byte_len)], &mut [&mut out])?;
                Ok(out)
            }
            fn download_resident_range_into(
                &self,
                resource: &Resource,
                byte_offset: usize,
                byte_len: usize,
                output: &mut Vec<u8>,
            ) -> Result<(), String> {
                self.0.read_ranges(&[(resource, byte_offset, byte_len)], &mut [output])
            }
            fn download_resident_ranges_into(
                &self,
                ranges: &[(&Resource, usize, usize)],
                outputs: &mut [&mut Vec<u8>],
            ) -> Result<(), String> {
                self.0.read_ranges(ranges, outputs)
            }
            fn free_resident(&self, resource: Resource) -> Result<(), String> {
                self.0.free(resource)
            }
            fn dispatch_resident(
                &self,
                program: &Program,
                resources: &[Resource],
                grid_override: Option<[u32; 3]>,
            ) -> Result<(), String> {
                self.0.dispatch(program, resources, grid_override)
            }
            fn dispatch_resident_sequence_read_ranges_into(
                &self,
                steps: &[(&Program, &[Resource], Option<[u32; 3]>)],
                read_ranges: &[(&Resource, usize, usize)],
                outputs: &mut [&mut Vec<u8>],
            ) -> Result<(), String> {
                self.0.dispatch_repeated(steps, &[], 0, read_ranges, outputs)
            }
            fn dispatch_resident_repeated_sequence_read_ranges_into(
                &self,
                prefix_steps: &[(&Program, &[Resource], Option<[u32; 3]>)],
                repeated_steps: &[(&Program, &[Resource], Option<[u32; 3]>)],
                repeat_count: u32,
                read_ranges: &[(&Resource, usize, usize)],
                outputs: &mut [&mut Vec<u8>],
            ) -> Result<(), String> {
                self.0.dispatch_repeated(
                    prefix_steps,
                    repeated_steps,
                    repeat_count,
                    read_ranges,
                    outputs,
                )
            }
        }

        impl $name {
            /// Cancels the calls in flight at this moment, from any thread: each returns
            /// `CANCELLED`. Calls made afterwards run normally.
            pub fn cancel(&self) {
                // SAFETY: the handle is live; the library takes cancels from any thread.
                unsafe { ffi::sluice_cancel(self.0.raw) }
            }
        }
    };
}

/// How to open a session on a daemon, beyond its address.
#[derive(Clone, Debug, Default)]
pub struct RemoteOptions {
    /// The name the daemon's log gives the session.
    pub client_name: Option<String>,
    /// A tenant's bearer token, for a daemon with tenants.
    pub token: Option<String>,
    /// TLS to the daemon (also on when a TLS file is given).
    pub tls: bool,
    pub tls_ca: Option<String>,
    pub tls_cert: Option<String>,
    pub tls_key: Option<String>,
    pub tls_server_name: Option<String>,
    /// The session ends with its connection instead of surviving a drop.
    pub not_resumable: bool,
    /// Calls that return only a status go without waiting for their reply.
    pub pipelined: bool,
    /// Milliseconds to wait to connect, and for a call (0: the library's defaults).
    pub connect_timeout_ms: u32,
    pub call_timeout_ms: u32,
}

/// A session on a sluiced daemon.
pub struct RemoteDispatch(Dispatcher);
implement_dispatch!(RemoteDispatch);

impl RemoteDispatch {
    /// Opens a session on the daemon at `target` (`host:port`, or `unix:PATH`).
    pub fn connect(target: &str) -> Result<RemoteDispatch, String> {
        RemoteDispatch::connect_with(target, &RemoteOptions::default())
    }

    /// Opens a session on the daemon at `target` with `options`.
    pub fn connect_with(target: &str, options: &RemoteOptions) -> Result<RemoteDispatch, String> {
        check_abi()?;
        let target = c_string(target, "the target")?;
        let optional = |s: &Option<String>, what: &str| -> Result<Option<CString>, String> {
            match s {
                Some(s) => c_string(s, what).map(Some),
                None => Ok(None),
            }
        };
        let name = optional(&options.client_name, "the client name")?;
        let token = optional(&options.token, "the token")?;
        let ca = optional(&options.tls_ca, "the CA file")?;
        let cert = optional(&options.tls_cert, "the certificate file")?;
        let key = optional(&options.tls_key, "the key file")?;
        let server_name = optional(&options.tls_server_name, "the server name")?;
        let p = |s: &Option<CString>| -> *const c_char {
            s.as_ref().map_or(ptr::null(), |s| s.as_ptr())
        };
        let c = ffi::sluice_remote_options {
            target: target.as_ptr(),
            client_name: p(&name),
            token: p(&token),
            tls: options.tls as i32,
            tls_ca: p(&ca),
            tls_cert: p(&cert),
            tls_key: p(&key),
            tls_server_name: p(&server_name),
            not_resumable: options.not_resumable as i32,
            pipelined: options.pipelined as i32,
            chunk_size: 0,
            connect_timeout_ms: options.connect_timeout_ms,
            call_timeout_ms: options.call_timeout_ms,
        };
        let mut raw = ptr::null_mut();
        // SAFETY: the options and the strings they point to outlive the call.
        check(unsafe {
            ffi::sluice_remote_connect(&c, std::mem::size_of::<ffi::sluice_remote_options>(), &mut raw)
        })?;
        Ok(RemoteDispatch(Dispatcher::adopt(raw)))
    }
}

/// An in-process dispatcher on the CPU device (every core), built from the same kernel bodies
/// as the daemon's.
pub struct LocalDispatch(Dispatcher);
implement_dispatch!(LocalDispatch);

impl LocalDispatch {
    /// A dispatcher on a new CPU device.
    pub fn new() -> Result<LocalDispatch, String> {
        check_abi()?;
        let mut raw = ptr::null_mut();
        check(unsafe { ffi::sluice_local_open(&mut raw) })?;
        Ok(LocalDispatch(Dispatcher::adopt(raw)))
    }
}

/// FAILED_PRECONDITION when the library linked is of another ABI than this crate declares.
fn check_abi() -> Result<(), String> {
    // SAFETY: a plain function of the library.
    let version = unsafe { ffi::sluice_abi_version() };
    if version != ffi::SLUICE_C_ABI_VERSION {
        return Err(format!(
            "FAILED_PRECONDITION: libsluice_c.so has C ABI {version}; this crate was written for {}",
            ffi::SLUICE_C_ABI_VERSION
        ));
    }
    Ok(())
}
