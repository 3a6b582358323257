//! A fixed point through the trait alone: breadth-first levels of a generated graph, each
//! window a repeated sequence (the catalog's loop guard, bfs_expand, bfs_advance) run on the
//! device, with one ranged read of the BFS state as its convergence poll; the levels are
//! checked against a BFS on the host.
//!
//!   cargo run --example bfs               # in-process, on the CPU device
//!   cargo run --example bfs -- HOST:PORT  # against a sluiced
use std::collections::VecDeque;

use sluice::{IfdsResidentDispatch, LocalDispatch, Program, RemoteDispatch};

const UNREACHED: u32 = u32::MAX;

/// A graph in CSR form: `row_offsets` (nodes + 1) and `columns`.
pub struct Graph {
    pub row_offsets: Vec<u32>,
    pub columns: Vec<u32>,
}

/// `nodes` nodes of 0 to 2 * `degree` out-edges each, from a seeded generator.
pub fn generate(nodes: u32, degree: u32, seed: u64) -> Graph {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    let mut g = Graph { row_offsets: vec![0], columns: Vec::new() };
    for _ in 0..nodes {
        for _ in 0..next() % (2 * degree + 1) {
            g.columns.push(next() % nodes);
        }
        g.row_offsets.push(g.columns.len() as u32);
    }
    g
}

pub fn host_levels(g: &Graph, source: u32) -> Vec<u32> {
    let mut levels = vec![UNREACHED; g.row_offsets.len() - 1];
    levels[source as usize] = 0;
    let mut queue = VecDeque::from([source]);
    while let Some(u) = queue.pop_front() {
        for e in g.row_offsets[u as usize]..g.row_offsets[u as usize + 1] {
            let v = g.columns[e as usize] as usize;
            if levels[v] == UNREACHED {
                levels[v] = levels[u as usize] + 1;
                queue.push_back(v as u32);
            }
        }
    }
    levels
}

fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// BFS levels from `source` on `d`, `window` iterations per repeated sequence; returns the
/// levels and the number of windows.
pub fn device_levels<D: IfdsResidentDispatch>(
    d: &D,
    g: &Graph,
    source: u32,
    window: u32,
) -> Result<(Vec<u32>, u32), String> {
    let n = g.row_offsets.len() - 1;
    let rows = d.allocate_resident(g.row_offsets.len() * 4)?;
    let columns = d.allocate_resident(g.columns.len() * 4)?;
    let visited = d.allocate_resident((n + 31) / 32 * 4)?;
    let levels = d.allocate_resident(n * 4)?;
    let frontier = d.allocate_resident(n * 4)?;
    let next = d.allocate_resident(n * 4)?;
    let state = d.allocate_resident(4 * 4)?; // frontier count, next count, level, status
    // The graph, the first frontier and the state go up as one staging operation.
    let (row_bytes, column_bytes) = (bytes(&g.row_offsets), bytes(&g.columns));
    let (first, initial) = (bytes(&[source]), bytes(&[1, 0, 0, 0]));
    d.upload_resident_many(&[
        (&rows, &row_bytes),
        (&columns, &column_bytes),
        (&frontier, &first),
        (&state, &initial),
    ])?;
    d.dispatch_resident(&Program::new("fill_u32", vec![UNREACHED as u64]), &[levels.clone()], None)?;
    let (zero, bit) = (bytes(&[0]), bytes(&[1 << (source % 32)]));
    d.upload_resident_at_many(&[
        (&levels, source as usize * 4, &zero),
        (&visited, (source / 32) as usize * 4, &bit),
    ])?;

    let guard = Program::new("repeat_while_u32", vec![0]); // while the frontier is not empty
    let expand = Program::new("bfs_expand", vec![]);
    let advance = Program::new("bfs_advance", vec![]);
    let expand_on = [rows.clone(), columns.clone(), visited.clone(), levels.clone(), frontier.clone(), next.clone(), state.clone()];
    let advance_on = [frontier.clone(), next.clone(), state.clone()];
    let guard_on = [state.clone()];
    let group = [(&guard, &guard_on[..], None), (&expand, &expand_on[..], None), (&advance, &advance_on[..], None)];
    let mut polled = Vec::new();
    let mut windows = 0;
    loop {
        d.dispatch_resident_repeated_sequence_read_ranges_into(&[], &group, window, &[(&state, 0, 16)], &mut [&mut polled])?;
        windows += 1;
        let s = words(&polled);
        if s[3] != 0 {
            return Err(format!("DATA_LOSS: the device reported status {:#x}", s[3]));
        }
        if s[0] == 0 {
            break;
        }
        if windows as usize * window as usize > n + window as usize {
            return Err("INTERNAL: BFS did not converge within one level per node".to_string());
        }
    }
    let result = words(&d.download_resident(&levels)?);
    for r in [rows, columns, visited, levels, frontier, next, state] {
        d.free_resident(r)?;
    }
    Ok((result, windows))
}

fn main() -> Result<(), String> {
    let graph = generate(100_000, 4, 7);
    let expected = host_levels(&graph, 0);
    let (levels, windows) = match std::env::args().nth(1) {
        Some(target) => device_levels(&RemoteDispatch::connect(&target)?, &graph, 0, 8)?,
        None => device_levels(&LocalDispatch::new()?, &graph, 0, 8)?,
    };
    if levels != expected {
        return Err("the device's levels differ from the host's".to_string());
    }
    let depth = levels.iter().filter(|l| **l != UNREACHED).max().map_or(0, |l| l + 1);
    println!(
        "bfs: {} nodes, {} edges, depth {depth}, {windows} windows: the levels agree with the host's",
        graph.row_offsets.len() - 1,
        graph.columns.len()
    );
    Ok(())
}
