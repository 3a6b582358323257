#!/usr/bin/env python3
"""Collects the figures bench/run.sh's benches wrote (one JSON object each) into results.json,
plots them with gnuplot (PNG), and with --docs refreshes the summary in docs/benchmarks.md.

  report.py RESULTS_DIR [--docs docs/benchmarks.md] [--stamp TEXT]
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

# Every ratio the summary shows: its key, what it is, and its target (None: none).
RATIOS = [
    ("ifds.remote_over_in_process_solve_ratio", "remote / in-process solve (medium)", "<= 1.10"),
    ("ifds.round_trips_over_windows_ratio", "round trips / windows (medium, pipelined)", None),
    ("ifds.pipelined_over_waiting_solve_ratio", "pipelined / every call waiting (solve time)", None),
    ("remote.ranged_read_over_bare_p50_ratio", "ranged read p50 / bare ping-pong p50", "<= 1.30"),
    ("remote.ranged_read_over_bare_p99_ratio", "ranged read p99 / bare ping-pong p99", None),
    ("remote.ranged_read_polling_over_bare_p50_ratio",
     "ranged read p50, polling 100 us for the reply / bare ping-pong p50", None),
    ("remote.upload_over_bare_stream_ratio", "upload / bare client stream", ">= 0.80"),
    ("remote.upload_over_memcpy_ratio", "upload / memcpy (loopback TCP)", None),
    ("remote.download_over_bare_stream_ratio", "download / bare server stream", ">= 0.90"),
    ("remote.shm_upload_over_memcpy_ratio", "same-host upload, shared memory / memcpy", ">= 0.80"),
    ("remote.staged_upload_over_memcpy_ratio", "same-host upload of the staging area / memcpy", None),
    ("remote.shm_upload_over_unix_stream_ratio", "same-host upload, shared memory / Unix stream", None),
    ("remote.shm_download_over_memcpy_ratio", "same-host download, shared memory / memcpy", None),
]
SIZES = ["small", "medium", "large"]


def load(directory):
    results = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if name == "results":
            continue
        with open(path) as f:
            for key, value in json.load(f).items():
                results[f"{name}.{key}"] = value
    return results


def meets(value, target):
    if target is None:
        return ""
    op, bound = target.split()
    ok = value <= float(bound) if op == "<=" else value >= float(bound)
    return "met" if ok else "missed"


def plot(directory, results):
    """Three PNGs: every ratio, the IFDS sizes, the light client against 1-8 sessions."""
    script = ["set terminal png size 1000,600", "set grid ytics", "set style fill solid 0.6"]
    with open(os.path.join(directory, "ratios.dat"), "w") as f:
        for i, (key, label, _) in enumerate(RATIOS):
            if key in results:
                f.write(f'{i} "{label}" {results[key]}\n')
    script += [
        f"set output '{directory}/ratios.png'",
        "set title 'Sluice: every ratio of one run (1.0 = the baseline)'",
        "set xtics rotate by 35 right font ',8'", "set bmargin 14", "set lmargin 26",
        "set rmargin 4", f"set xrange [-0.6:{len(RATIOS) - 0.4}]", "set boxwidth 0.7",
        "set logscale y", "set ylabel 'ratio (log scale)'",
        f"plot '{directory}/ratios.dat' using 1:3:xtic(2) with boxes notitle, 1 notitle lw 2",
        "unset logscale y", "set autoscale x", "set lmargin", "set rmargin",
    ]
    with open(os.path.join(directory, "ifds.dat"), "w") as f:
        for i, size in enumerate(SIZES):
            speed = results.get(f"ifds.{size}_resident_over_reference_speed_ratio")
            per_edge = results.get(f"ifds.{size}_device_bytes_per_path_edge")
            if speed is not None:
                f.write(f"{i} {size} {speed} {per_edge}\n")
    script += [
        "set xtics norotate font ''", "set bmargin",
        f"set output '{directory}/ifds.png'",
        "set title 'IFDS resident solver (CPU device) against the reference solver'",
        "set ylabel 'speed ratio'", "set y2label 'device bytes per path edge'",
        "set y2tics", "set ytics nomirror",
        f"plot '{directory}/ifds.dat' using 1:3:xtic(2) with linespoints lw 2 title 'speed',"
        f" '' using 1:4 axes x1y2 with linespoints lw 2 title 'bytes per path edge'",
        "unset y2tics", "unset y2label", "set ytics mirror",
    ]
    with open(os.path.join(directory, "sessions.dat"), "w") as f:
        for path in sorted(glob.glob(os.path.join(directory, "fairness_*.json")),
                           key=lambda p: int(re.findall(r"\d+", os.path.basename(p))[0])):
            with open(path) as g:
                r = json.load(g)
            f.write(f"{int(r['heavy_sessions'])} {r['light_solve_one_client_ratio']} "
                    f"{r['light_read_p50_one_client_ratio']} "
                    f"{r['light_solve_many_clients_ratio']}\n")
    script += [
        f"set output '{directory}/sessions.png'",
        "set title 'A light client while heavy sessions solve (1.0 = alone; target <= 2)'",
        "set xlabel 'heavy sessions'", "set ylabel 'slowdown'", "set xtics 1",
        f"plot '{directory}/sessions.dat' using 1:2 with linespoints lw 2 title 'solve, one heavy client',"
        " '' using 1:3 with linespoints lw 2 title 'read p50, one heavy client',"
        " '' using 1:4 with linespoints lw 2 title 'solve, as many heavy clients', 2 notitle dt 2",
    ]
    subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True)


def summary(results, stamp):
    lines = [f"Last run: {stamp}. Every figure below comes from that one run.", "",
             "| ratio | result | target |", "|---|---|---|"]
    for key, label, target in RATIOS:
        if key in results:
            verdict = meets(results[key], target)
            lines.append(f"| {label} | {results[key]:.2f}x | "
                         f"{target + ', ' + verdict if target else ''} |")
    # DESIGN's bound on a remote solve's round trips is its windows and 5 more: a count.
    trips, windows = results.get("ifds.remote_round_trips"), results.get("ifds.remote_windows")
    if trips is not None and windows is not None:
        beyond = trips - windows
        lines.append(f"| round trips beyond the windows (medium, pipelined) | {beyond:.0f} | "
                     f"<= 5, {'met' if beyond <= 5 else 'missed'} |")
    lines += ["", "| size | path edges | resident / reference speed | resident / reference RSS "
              "| device bytes per path edge |", "|---|---|---|---|---|"]
    for size in SIZES:
        if f"ifds.{size}_path_edges" in results:
            lines.append(
                f"| {size} | {int(results[f'ifds.{size}_path_edges']):,} | "
                f"{results[f'ifds.{size}_resident_over_reference_speed_ratio']:.2f}x | "
                f"{results[f'ifds.{size}_resident_over_reference_rss_ratio']:.2f}x | "
                f"{results[f'ifds.{size}_device_bytes_per_path_edge']:.1f} |")
    fairness = sorted((int(v), k.split(".")[0]) for k, v in results.items()
                      if k.endswith(".heavy_sessions"))
    if fairness:
        lines += ["", "| heavy sessions | light solve, 1 heavy client | light read p50 | "
                  "light solve, as many heavy clients |", "|---|---|---|---|"]
        for n, name in fairness:
            lines.append(f"| {n} | {results[name + '.light_solve_one_client_ratio']:.2f}x | "
                         f"{results[name + '.light_read_p50_one_client_ratio']:.2f}x | "
                         f"{results[name + '.light_solve_many_clients_ratio']:.2f}x |")
    e2e = sorted((results[k], k.split(".")[0]) for k in results
                 if k.startswith("e2e_") and k.endswith(".path_edges"))
    if e2e:
        lines += ["", "`sluice solve` end to end (in-process, CPU device) on problems shaped as a "
                  "front end emits them (`sluice gen --front-end-shape --facts=32`; front-end "
                  "names: with `--front-end-names`, as `sluice analyze` names procedures and "
                  "nodes), medians:", "",
                  "| path edges | flow pairs / path edge | text bytes / path edge | read | "
                  "fixed point | solver | outside the solver | outside the fixed point | "
                  "parse (every core) | peak RSS / path edge | resident / reference | "
                  "client of a daemon / (compiled problem + results read back) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        # A share judged against 25%, or "-" where the run did not record it (an older one's
        # results: it judged the share outside the fixed point alone, as `host_share`).
        def share(value):
            return "-" if value is None else f"{value:.0%} ({meets(value, '<= 0.25')})"

        def seconds(value):
            return "-" if value is None else f"{value:.3f} s"

        for _, name in e2e:
            r = {k.split(".", 1)[1]: v for k, v in results.items() if k.startswith(name + ".")}
            names = ", front-end names" if r.get("front_end_names") else ""
            lines.append(
                f"| {int(r['path_edges']):,}{names} | {r['flow_pairs_per_path_edge']:.2f} | "
                f"{r['text_bytes_per_path_edge']:.1f} | {r['read_seconds']:.3f} s | "
                f"{r['fixed_point_seconds']:.3f} s | {seconds(r.get('solver_seconds'))} | "
                f"{share(r.get('host_share_outside_solver'))} | "
                f"{share(r.get('host_share_outside_fixed_point', r.get('host_share')))} | "
                f"{r['parse_mb_per_s']:.0f} MB/s, "
                f"{r['parse_mb_per_s_per_core']:.0f} a core "
                f"({meets(r['parse_mb_per_s_per_core'], '>= 400')}) | "
                f"{r['rss_bytes_per_path_edge']:.0f} B ({meets(r['rss_bytes_per_path_edge'], '<= 70')}) "
                f"| {r['resident_over_reference_ratio']:.2f}x "
                f"({meets(r['resident_over_reference_ratio'], '>= 1.5')}) | "
                + (f"{r['client_peak_rss_bytes'] / 2**20:.0f} / "
                   f"({r['compiled_bytes'] / 2**20:.0f} + {r['results_read_bytes'] / 2**20:.0f}) "
                   f"MiB ({r['client_over_bound']:.2f}x, {meets(r['client_over_bound'], '<= 1')})"
                   + (f"; less its {r['client_start_rss_bytes'] / 2**20:.0f} MiB at start: "
                      f"{r['client_own_over_bound']:.2f}x "
                      f"({meets(r['client_own_over_bound'], '<= 1')})"
                      if 'client_own_over_bound' in r else "")
                   + (f"; less a client's peak on a six-line problem, "
                      f"{r['client_fixed_rss_bytes'] / 2**20:.0f} MiB: "
                      f"{r['client_problem_over_bound']:.2f}x "
                      f"({meets(r['client_problem_over_bound'], '<= 1')})"
                      if 'client_problem_over_bound' in r else "") + " |"
                   if 'client_over_bound' in r else "- |"))
        if "memory.fresh_huge_page_gbs" in results:
            lines += ["", f"Fresh memory on this host at the time (`sluice_memory_bench`, "
                      f"{results['memory.mib']:.0f} MiB of each, the first write to every page): "
                      f"{results['memory.fresh_huge_page_gbs']:.2f} GB/s in huge pages, "
                      f"{results['memory.fresh_small_page_gbs']:.2f} GB/s in small pages "
                      f"({results['memory.populated_small_page_gbs']:.2f} backed at once), "
                      f"{results['memory.reused_huge_page_gbs']:.2f} GB/s in huge pages freed "
                      f"and mapped again; memset {results['memory.memset_gbs']:.1f} GB/s."]
        lines += ["", "Targets: the host phases at most 25% of the wall time, judged two ways: "
                  "outside the solver's own phases (`--stats`'s set-up, which compiles and uploads "
                  "the problem, the fixed point and the results; the issue's measure) and, stricter, outside the fixed point alone; parse at "
                  "least 400 MB/s a core, peak RSS at most 70 bytes per path edge, "
                  "resident / reference end to end at least 1.5x, a client of a daemon at most "
                  "the compiled problem and a window of results (these problems' results take "
                  "one window: what the client reads back), its peak given whole, less its "
                  "resident set before it read the problem (its code and libraries, "
                  "`--stats`'s \"before the read\"), and less the peak of a client of the same "
                  "daemon that solves a problem of six lines (what any client holds, the code "
                  "its session runs among it, which the first figure's start has not run yet: "
                  "the issue's measure)."]
    return "\n".join(lines) + "\n"


BEGIN = "<!-- bench/run.sh: begin -->"
END = "<!-- bench/run.sh: end -->"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("--docs")
    parser.add_argument("--stamp", default="")
    args = parser.parse_args()
    results = load(args.directory)
    missing = [key for key, _, _ in RATIOS if key not in results]
    if missing:
        print("missing figures: " + ", ".join(missing), file=sys.stderr)
        return 1
    with open(os.path.join(args.directory, "results.json"), "w") as f:
        json.dump({"stamp": args.stamp, "figures": results}, f, indent=2, sort_keys=True)
    plot(args.directory, results)
    text = summary(results, args.stamp)
    with open(os.path.join(args.directory, "summary.md"), "w") as f:
        f.write(text)
    if args.docs:
        with open(args.docs) as f:
            docs = f.read()
        if BEGIN not in docs or END not in docs:
            print(f"{args.docs} has no {BEGIN} ... {END} section", file=sys.stderr)
            return 1
        head, rest = docs.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        with open(args.docs, "w") as f:
            f.write(head + BEGIN + "\n" + text + END + tail)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
