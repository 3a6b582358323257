//! The bfs example's fixed point, run by the tests in-process and against a daemon.
mod common;

#[path = "../examples/bfs.rs"]
#[allow(dead_code)]
mod bfs;

use common::Daemon;
use sluice::{LocalDispatch, RemoteDispatch};

#[test]
fn bfs_levels_agree_with_the_host_in_process() {
    let graph = bfs::generate(20_000, 4, 11);
    let expected = bfs::host_levels(&graph, 0);
    let depth = expected.iter().filter(|l| **l != u32::MAX).max().unwrap() + 1;
    assert!(depth > 4, "a graph deep enough for several windows (depth {depth})");
    let (levels, windows) = bfs::device_levels(&LocalDispatch::new().unwrap(), &graph, 0, 2).unwrap();
    assert_eq!(levels, expected);
    assert!(windows >= 2, "{windows} windows");
}

#[test]
fn bfs_levels_agree_with_the_host_against_a_daemon() {
    let daemon = Daemon::start();
    let graph = bfs::generate(20_000, 4, 12);
    let d = RemoteDispatch::connect(&daemon.address).unwrap();
    let (levels, _) = bfs::device_levels(&d, &graph, 0, 4).unwrap();
    assert_eq!(levels, bfs::host_levels(&graph, 0));
}
