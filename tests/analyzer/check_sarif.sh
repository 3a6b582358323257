#!/usr/bin/env bash
# Checks `sluice analyze --format=sarif` with Microsoft's SARIF Multitool (`validate`: the SARIF
# 2.1.0 JSON schema and the SARIF rules viewers and code-scanning services rely on), on the logs
# of every annotated program and on a log without findings. Fails on any error or warning but
# SARIF2005 (the tool's informationUri: Sluice has no public address to give).
# Usage: check_sarif.sh SLUICE_BINARY
set -euo pipefail
sluice=$1
here=$(cd "$(dirname "$0")" && pwd)
tool="$here/sarif/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"
if [ ! -f "$tool" ]; then
  (cd "$here/sarif" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
chmod +x "$tool"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for program in "$here"/programs/*.c; do
  name=$(basename "$program" .c)
  analysis=${name%%_*}
  config=()
  [ "$analysis" = taint ] && config=(--config "$here/programs/taint.toml")
  "$sluice" analyze --analysis="$analysis" "${config[@]}" --format=sarif "$program" \
    >"$out/$name.sarif"
done
# A log without results: the uninit analysis of a taint program that initializes everything.
"$sluice" analyze --analysis=uninit --format=sarif "$here/programs/taint_01_getenv_system.c" \
  >"$out/no-findings.sarif"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["runs"][0]["results"] == []' \
  "$out/no-findings.sarif"

logs=("$out"/*.sarif)
DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 "$tool" validate "${logs[@]}" --level Error Warning \
  --output "$out/validation.json" --quiet >/dev/null
python3 - "$out/validation.json" "${#logs[@]}" <<'PY'
import json, sys
log = json.load(open(sys.argv[1]))
problems = [r for run in log["runs"] for r in run.get("results", [])
            if r.get("ruleId") != "SARIF2005"]
for r in problems:
    where = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    print(f'{where}: {r.get("level")} {r["ruleId"]}: {r["message"].get("text", r["message"])}')
if problems:
    sys.exit(f"{len(problems)} SARIF problems")
print(f"{sys.argv[2]} SARIF logs valid (SARIF Multitool validate)")
PY
