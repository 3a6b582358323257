//! Every method's contract from the seed, through the trait alone, against a real sluiced
//! (started from the build tree on a free loopback port) and in-process: exact allocation
//! sizes, ranged reads that move only the range, outputs sized to their ranges, batched and
//! ranged uploads, sequences and repeated sequences, and the errors for freed and foreign
//! resources and for ranges past the end.
mod common;

use common::Daemon;
use sluice::{IfdsResidentDispatch, LocalDispatch, Program, RemoteDispatch, RemoteOptions};

fn code(result: Result<impl std::fmt::Debug, String>) -> String {
    match result {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e.split(':').next().unwrap_or("").to_string(),
    }
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The seed's contracts, on `d` (and `other`, a second dispatcher of the same kind).
fn contracts<D: IfdsResidentDispatch<Resource = sluice::Resource>>(d: &D, other: &D) {
    assert!(!d.resident_backend_id().is_empty());
    assert_ne!(d.resident_backend_version(), "unversioned", "a real backend says its version");

    // Exact sizes, zero-filled.
    let r = d.allocate_resident(100).unwrap();
    assert_eq!(d.download_resident(&r).unwrap(), vec![0u8; 100]);
    let empty = d.allocate_resident(0).unwrap();
    assert_eq!(d.download_resident(&empty).unwrap().len(), 0);

    // Uploads at offset 0 leave the rest; ranged reads move only their range, sized to it.
    let bytes: Vec<u8> = (0..100).collect();
    d.upload_resident(&r, &bytes[..60]).unwrap();
    let mut out = vec![0xee; 500]; // a larger output is replaced, not appended to
    d.download_resident_range_into(&r, 40, 30, &mut out).unwrap();
    assert_eq!(out.len(), 30);
    assert_eq!(&out[..20], &bytes[40..60]);
    assert_eq!(&out[20..], &[0u8; 10][..]);
    assert_eq!(d.download_resident_range(&r, 100, 0).unwrap(), Vec::<u8>::new());
    assert_eq!(code(d.download_resident_range(&r, 95, 6)), "OUT_OF_RANGE");
    assert_eq!(code(d.download_resident_range(&r, 101, 0)), "OUT_OF_RANGE");
    // A range no process could hold is an error too, never a panic or an abort.
    let absurd = code(d.download_resident_range(&r, 0, usize::MAX));
    assert!(absurd == "OUT_OF_RANGE" || absurd == "RESOURCE_EXHAUSTED", "{absurd}");
    let absurd = code(d.download_resident_range(&r, 0, 1 << 46));
    assert!(absurd == "OUT_OF_RANGE" || absurd == "RESOURCE_EXHAUSTED", "{absurd}");
    assert_eq!(code(d.upload_resident(&r, &[0u8; 101])), "OUT_OF_RANGE");
    let mut whole = Vec::with_capacity(3); // too little room: it grows
    d.download_resident_into(&r, &mut whole).unwrap();
    assert_eq!(whole.len(), 100);
    assert_eq!(&whole[..60], &bytes[..60]);

    // Batched uploads: one staging operation, all checked before any is written.
    let s = d.allocate_resident(8).unwrap();
    d.upload_resident_many(&[(&r, &[9u8, 9][..]), (&s, &[7u8; 8][..])]).unwrap();
    d.upload_resident_at_many(&[(&r, 98, &[1u8, 2][..]), (&s, 4, &[5u8][..])]).unwrap();
    assert_eq!(
        code(d.upload_resident_at_many(&[(&r, 0, &[3u8][..]), (&s, 8, &[1u8][..])])),
        "OUT_OF_RANGE"
    );
    let (mut a, mut b) = (Vec::new(), Vec::new());
    d.download_resident_ranges_into(&[(&r, 0, 2), (&r, 98, 2)], &mut [&mut a, &mut b]).unwrap();
    assert_eq!((a.as_slice(), b.as_slice()), (&[9u8, 9][..], &[1u8, 2][..]), "nothing of the failed batch");
    assert_eq!(d.download_resident(&s).unwrap(), vec![7, 7, 7, 7, 5, 7, 7, 7]);
    assert_eq!(code(d.download_resident_ranges_into(&[(&r, 0, 2)], &mut [])), "INVALID_ARGUMENT");

    // Programs, sequences and repeated sequences.
    let counters = d.allocate_resident(16 * 4).unwrap();
    d.dispatch_resident(&Program::new("fill_u32", vec![5]), &[counters], None).unwrap();
    d.dispatch_resident(&Program::versioned("fill_u32", 1, vec![1]), &[counters], Some([4, 1, 1]))
        .unwrap();
    assert_eq!(words(&d.download_resident_range(&counters, 12, 8).unwrap()), vec![1, 5]);
    assert_eq!(code(d.dispatch_resident(&Program::new("no_such_kernel", vec![]), &[counters], None)), "NOT_FOUND");
    assert_eq!(
        code(d.dispatch_resident(&Program::versioned("fill_u32", 99, vec![0]), &[counters], None)),
        "FAILED_PRECONDITION"
    );
    assert_eq!(code(d.dispatch_resident(&Program::new("fill_u32", vec![0]), &[], None)), "INVALID_ARGUMENT");

    let fill = Program::new("fill_u32", vec![3]);
    let add = Program::new("atomic_add_u32", vec![1, 2]);
    let mut head = Vec::new();
    d.dispatch_resident_sequence_read_ranges_into(
        &[(&fill, &[counters][..], None), (&add, &[counters][..], None)],
        &[(&counters, 0, 8)],
        &mut [&mut head],
    )
    .unwrap();
    assert_eq!(words(&head), vec![3, 5]);
    // An invalid step anywhere runs nothing.
    let unknown = Program::new("no_such_kernel", vec![]);
    let zero = Program::new("fill_u32", vec![0]);
    assert_eq!(
        code(d.dispatch_resident_sequence_read_ranges_into(
            &[(&zero, &[counters][..], None), (&unknown, &[counters][..], None)],
            &[(&counters, 0, 8)],
            &mut [&mut head],
        )),
        "NOT_FOUND"
    );
    assert_eq!(words(&d.download_resident_range(&counters, 0, 8).unwrap()), vec![3, 5]);

    // A repeated group the loop guard ends: word 0 counts 3 down, word 1 counts up.
    let set = Program::new("fill_u32", vec![3]);
    let clear = Program::new("fill_u32", vec![0]);
    let guard = Program::new("repeat_while_u32", vec![0]);
    let down = Program::new("atomic_add_u32", vec![0, 0xffff_ffff]);
    let up = Program::new("atomic_add_u32", vec![1, 1]);
    let c = [counters];
    let prefix = [(&clear, &c[..], None), (&set, &c[..], Some([1, 1, 1]))];
    let repeated = [(&guard, &c[..], None), (&down, &c[..], None), (&up, &c[..], None)];
    let mut both = Vec::new();
    d.dispatch_resident_repeated_sequence_read_ranges_into(&prefix, &repeated, 10, &[(&counters, 0, 8)], &mut [&mut both])
        .unwrap();
    assert_eq!(words(&both), vec![0, 3]);
    d.dispatch_resident_repeated_sequence_read_ranges_into(&prefix, &repeated, 0, &[(&counters, 0, 8)], &mut [&mut both])
        .unwrap();
    assert_eq!(words(&both), vec![3, 0], "0 repetitions run none");

    // Freed resources are NOT_FOUND; another dispatcher's FAILED_PRECONDITION.
    d.free_resident(s).unwrap();
    assert_eq!(code(d.free_resident(s)), "NOT_FOUND");
    assert_eq!(code(d.download_resident(&s)), "NOT_FOUND");
    let theirs = other.allocate_resident(4).unwrap();
    assert!(theirs != r);
    assert_eq!(code(d.download_resident_range(&theirs, 0, 4)), "FAILED_PRECONDITION");
    assert_eq!(code(d.free_resident(theirs)), "FAILED_PRECONDITION");
    other.free_resident(theirs).unwrap();
    for resource in [r, empty, counters] {
        d.free_resident(resource).unwrap();
    }
}

#[test]
fn in_process_every_contract_holds() {
    let d = LocalDispatch::new().unwrap();
    let other = LocalDispatch::new().unwrap();
    contracts(&d, &other);
}

#[test]
fn against_a_daemon_every_contract_holds() {
    let daemon = Daemon::start();
    let d = RemoteDispatch::connect(&daemon.address).unwrap();
    let other = RemoteDispatch::connect_with(
        &daemon.address,
        &RemoteOptions { client_name: Some("other".into()), pipelined: true, ..Default::default() },
    )
    .unwrap();
    contracts(&d, &other);
    assert_eq!(d.resident_backend_id(), other.resident_backend_id(), "one device");
    // The backend's strings are kept once for the process, however many dispatchers say them.
    assert!(std::ptr::eq(d.resident_backend_id(), other.resident_backend_id()));
}

#[test]
fn a_daemon_that_is_not_there_is_unavailable() {
    let result = RemoteDispatch::connect_with(
        "127.0.0.1:1",
        &RemoteOptions { connect_timeout_ms: 2000, ..Default::default() },
    );
    assert_eq!(code(result.map(|_| ())), "UNAVAILABLE");
    assert_eq!(code(RemoteDispatch::connect("").map(|_| ())), "INVALID_ARGUMENT");
    assert_eq!(code(RemoteDispatch::connect("a\0b").map(|_| ())), "INVALID_ARGUMENT");
}
