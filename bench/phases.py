#!/usr/bin/env python3
"""The phases of one `sluice solve --stats --format=json` run, as one flat JSON object for
bench/report.py: seconds per phase (read, compile, upload, fixed point, results, output), the
bytes read, uploaded, read back and written, and the share of the wall time outside the fixed
point.

  phases.py ANSWER.json STDERR.txt > solve_phases.json
"""
import json
import re
import sys


def main():
    answer_path, stderr_path = sys.argv[1], sys.argv[2]
    with open(answer_path) as f:
        stats = json.load(f)["stats"]
    with open(stderr_path) as f:
        stderr = f.read()
    # The output's own time is on stderr only ("output: 0.184 s (23.7 MiB at 135 MB/s)").
    output = re.search(r"^output: ([0-9.]+) s", stderr, re.MULTILINE)
    if output is None:
        print("no output line in " + stderr_path, file=sys.stderr)
        return 1
    p = stats["phase_seconds"]
    figures = {
        "path_edges": stats["path_edges"],
        "read_seconds": p["read"],
        "compile_seconds": p["compile"],
        "upload_seconds": p["upload"],
        "fixed_point_seconds": p["windows"] + p["growth"],
        "results_seconds": p["results"],
        "output_seconds": float(output.group(1)),
        "read_bytes": stats["read_bytes"],
        "upload_bytes": stats["upload_bytes"],
        "download_bytes": stats["download_bytes"],
    }
    phases = ["read", "compile", "upload", "fixed_point", "results", "output"]
    wall = sum(figures[name + "_seconds"] for name in phases)
    figures["wall_seconds"] = wall
    figures["host_share"] = (wall - figures["fixed_point_seconds"]) / wall if wall > 0 else 0
    json.dump(figures, sys.stdout, indent=2, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
