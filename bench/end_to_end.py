#!/usr/bin/env python3
"""End to end `sluice solve` of one generated problem, as a user runs it: the problem written
by `sluice gen` (front-end-shaped or not), then solved from the file by the resident solver
(in-process, `--stats --format=json`) and by the reference solver, alternated, `--repeats`
times each; the medians are kept. One flat JSON object for bench/report.py, on stdout:

  path_edges, read_bytes, flow_pairs (listed in the file, '->' counted), the resident run's
  seconds by phase (read, compile, upload, fixed_point, results, output: those of the run
  whose wall time is the median, but for read, the median of the runs' reads) and
  wall_seconds (the process, start to exit), solver_seconds (the solver's own phases as
  `--stats` times them: its set-up, which compiles and uploads the problem, the fixed point
  and the results),
  host_share_outside_solver (the wall time outside those: the issue's measure) and
  host_share_outside_fixed_point (the wall time outside the fixed point alone: stricter),
  parse_mb_per_s (read_bytes over that median read), peak_rss_bytes and
  rss_bytes_per_path_edge (the resident run's peak RSS, as `--stats` gives it: the process's
  own, where the peak a parent reads from wait4 would count this script's pages, which the
  forked child held until its exec), reference_wall_seconds and
  resident_over_reference_ratio (end to end: the reference's wall time over the resident's),
  front_end_names (1 where GEN_ARGS name it so: `sluice gen --front-end-names`).
  With --sluiced, the same problem is also solved as a client of that daemon (on a Unix
  socket in WORK_DIR, started and stopped here), its answer checked against the in-process
  one: client_peak_rss_bytes (the median of the repeats), compiled_bytes (the compiled
  problem the client uploads), client_over_compiled (the one over the other),
  results_read_bytes (the results the client reads back: one window of them on these
  problems, whose nodes fit the solver's 16M a window), client_over_bound (its peak over
  the compiled problem and those results, the issue's bound: at most 1),
  client_start_rss_bytes (its resident set before it read the problem: its code, libraries
  and what they set up, as `--stats` reports it) and client_own_over_bound (its peak less
  that, over the same bound), client_fixed_rss_bytes (the median peak of a client of the same
  daemon that solves a problem of six lines, run beside each repeat: what any client holds
  whatever its problem, its code and libraries as a session runs them, which a client that
  reads its problem before it opens its session has not run at its start) and
  client_problem_over_bound (the peak less that, over the same bound: what the client held
  for the problem, the issue's measure).

  end_to_end.py SLUICE_BINARY WORK_DIR [--repeats N] [--sluiced SLUICED] -- GEN_ARGS...
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(args, stderr_path=None):
    """Runs `args` to completion: its wall seconds; raises if it fails."""
    err = open(stderr_path, "w") if stderr_path else subprocess.DEVNULL
    try:
        start = time.perf_counter()
        child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
        _, status = os.waitpid(child.pid, 0)
        wall = time.perf_counter() - start
    finally:
        if stderr_path:
            err.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        detail = open(stderr_path).read()[-2000:] if stderr_path else ""
        raise RuntimeError(f"{' '.join(args)} exited {code}\n{detail}")
    return wall


UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def peak_rss(stderr_text):
    """The peak RSS in bytes that `--stats` gives on stderr ("memory: 41.4 MiB at peak, ...")."""
    found = re.search(r"^memory: ([0-9.]+) (B|KiB|MiB|GiB|TiB) at peak", stderr_text, re.MULTILINE)
    if found is None:
        raise RuntimeError("no memory line in the solve's stderr:\n" + stderr_text[-2000:])
    return float(found.group(1)) * UNITS[found.group(2)]


def read_stats(path):
    """The "stats" object at the end of `sluice solve --format=json --stats` output, read from
    the file's tail only: loading the whole answer would grow this process by hundreds of MB."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - (1 << 16)))
        tail = f.read().decode()
    at = tail.rfind('"stats":')
    if at < 0:
        raise RuntimeError(f"no stats at the end of {path}")
    stats, _ = json.JSONDecoder().raw_decode(tail, at + len('"stats":'))
    return stats


class Daemon:
    """sluiced on a Unix socket of its own (in a short temporary directory: a socket's path
    has at most 107 bytes), for the length of a `with`; its log in `work`."""

    def __init__(self, sluiced, work):
        self.directory = tempfile.mkdtemp(prefix="sl")
        self.socket = os.path.join(self.directory, "sluiced.sock")
        self.log = open(os.path.join(work, "e2e_sluiced.log"), "w")
        self.process = subprocess.Popen(
            [sluiced, f"--listen=unix:{self.socket}", "--backend=cpu"],
            stdout=subprocess.PIPE, stderr=self.log, text=True)

    def __enter__(self):
        # It says so once it serves ("sluiced listening on ADDRESS"); bounded by its exit.
        for line in self.process.stdout:
            if line.startswith("sluiced listening on "):
                return f"unix:{self.socket}"
        self.close()
        raise RuntimeError(f"sluiced did not start: see {self.log.name}")

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(timeout=60)
        self.process.stdout.close()
        self.log.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def count_pairs(path):
    pairs = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            pairs += block.count(b"->")
    return pairs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("sluice")
    parser.add_argument("work")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sluiced", help="also solve as a client of this daemon")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    gen = argv[split + 1:]
    problem = os.path.join(args.work, "e2e.ifds")
    answer = os.path.join(args.work, "e2e_answer.json")
    stderr = os.path.join(args.work, "e2e_stderr.txt")
    client_answer = os.path.join(args.work, "e2e_client_answer.json")
    # Any client's own cost: the least problem there is, a procedure of one edge.
    tiny = os.path.join(args.work, "e2e_tiny.ifds")
    with open(tiny, "w") as f:
        f.write("ifds 1\nzero 0\nfacts a\nprocedure main start s exit e\n"
                "edge s e {id}\nseed s 0\n")
    subprocess.run([args.sluice, "gen", *gen, f"--out={problem}"], check=True)
    clients, fixed = [], []
    try:
        pairs = count_pairs(problem)
        resident, reference, runs = [], [], []
        for _ in range(args.repeats):
            wall = run([args.sluice, "solve", problem, "--format=json", "--stats",
                        f"--out={answer}"], stderr)
            stats = read_stats(answer)
            with open(stderr) as f:
                text = f.read()
            # The output's own time is on stderr only ("output: 0.184 s (23.7 MiB at ...)").
            output = re.search(r"^output: ([0-9.]+) s", text, re.MULTILINE)
            if output is None:
                raise RuntimeError("no output line in the solve's stderr:\n" + text[-2000:])
            resident.append(wall)
            runs.append((wall, peak_rss(text), stats, float(output.group(1))))
            reference.append(run([args.sluice, "solve", problem, "--solver=reference",
                                  f"--out={os.devnull}"]))
        if args.sluiced:
            with Daemon(args.sluiced, args.work) as address:
                for _ in range(args.repeats):
                    run([args.sluice, "solve", problem, f"--server={address}",
                         "--format=json", "--stats", f"--out={client_answer}"], stderr)
                    client_stats = read_stats(client_answer)
                    with open(stderr) as f:
                        client_rss = peak_rss(f.read())
                    if client_stats["solution_digest"] != stats["solution_digest"]:
                        raise RuntimeError("the daemon's answer is not the in-process one")
                    if client_stats["result_windows"] != 1:
                        raise RuntimeError("the results took several windows: what the client "
                                           "reads back is more than one window of them")
                    clients.append((client_rss, client_stats["compiled_bytes"],
                                    client_stats["download_bytes"],
                                    client_stats["resident_bytes_before_read"]))
                    run([args.sluice, "solve", tiny, f"--server={address}", "--stats",
                         f"--out={os.devnull}"], stderr)
                    with open(stderr) as f:
                        fixed.append(peak_rss(f.read()))
    finally:
        for path in (problem, answer, stderr, client_answer, tiny):
            if os.path.exists(path):
                os.remove(path)
    # The read on its own: the median of the runs' reads, where one run's read on a busy host
    # can be a third longer than the next run's (docs/benchmarks.md).
    read_seconds = statistics.median(r[2]["phase_seconds"]["read"] for r in runs)
    # The run whose wall time is the median (its phases go together).
    runs.sort(key=lambda r: r[0])
    wall, rss, stats, output_seconds = runs[len(runs) // 2]
    p = stats["phase_seconds"]
    figures = {
        "path_edges": stats["path_edges"],
        "flow_pairs": pairs,
        "read_bytes": stats["read_bytes"],
        "read_seconds": read_seconds,
        "compile_seconds": p["compile"],
        "upload_seconds": p["upload"],
        "fixed_point_seconds": p["windows"] + p["growth"],
        "results_seconds": p["results"],
        "solver_seconds": p["setup"] + p["windows"] + p["growth"] + p["results"],
        "output_seconds": output_seconds,
        "wall_seconds": wall,
        "peak_rss_bytes": rss,
        "reference_wall_seconds": statistics.median(reference),
    }
    edges = max(1, figures["path_edges"])
    figures["host_share_outside_solver"] = (wall - figures["solver_seconds"]) / wall
    figures["host_share_outside_fixed_point"] = (wall - figures["fixed_point_seconds"]) / wall
    figures["parse_mb_per_s"] = (figures["read_bytes"] / figures["read_seconds"] / 1e6
                                 if figures["read_seconds"] > 0 else 0)
    # The reader runs a thread per core: the target is per core.
    figures["cores"] = os.cpu_count() or 1
    figures["parse_mb_per_s_per_core"] = figures["parse_mb_per_s"] / figures["cores"]
    figures["rss_bytes_per_path_edge"] = rss / edges
    figures["flow_pairs_per_path_edge"] = pairs / edges
    figures["text_bytes_per_path_edge"] = figures["read_bytes"] / edges
    figures["resident_over_reference_ratio"] = figures["reference_wall_seconds"] / wall
    # 1 where the problem's procedures and nodes are named as a C front end names them.
    figures["front_end_names"] = 1 if "--front-end-names" in gen else 0
    if clients:
        clients.sort()
        client_rss, compiled, results, client_start = clients[len(clients) // 2]
        figures["client_peak_rss_bytes"] = client_rss
        figures["compiled_bytes"] = compiled
        figures["client_over_compiled"] = client_rss / max(1, compiled)
        figures["results_read_bytes"] = results
        figures["client_over_bound"] = client_rss / max(1, compiled + results)
        figures["client_start_rss_bytes"] = client_start
        figures["client_own_over_bound"] = (client_rss - client_start) / max(1, compiled + results)
        figures["client_fixed_rss_bytes"] = statistics.median(fixed)
        figures["client_problem_over_bound"] = ((client_rss - figures["client_fixed_rss_bytes"])
                                                / max(1, compiled + results))
    json.dump(figures, sys.stdout, indent=2, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
