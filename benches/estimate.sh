#!/usr/bin/env bash
# What `ralph estimate` costs against a long past: 1 run, then 5,000 runs
# (as callgrind instruction counts, the same on a busy machine). A run's
# steps are kept, as it ends, in two bounded files of ralph's state folder
# (the project's newest 100 runs, the machine's newest 300): the estimate
# reads those, never the run folders. The 5,000 runs are made as they would
# be: each run's folder (50 records) in .ralph/runs, and its steps put in
# the kept files as `history::costs::Kept::put` puts them (the newest kept,
# the oldest dropped). The target: 5,000 runs within 1.5x of 1 run.
# BEFORE=<an older ralph> is not offered: older ones have no estimate.
# Needs valgrind.
#   benches/estimate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)"; exit 1; }
cargo build --release --locked -q
RALPH=$PWD/target/release/ralph
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
export HOME=$W/home
mkdir -p "$HOME/.claude"

P=$W/p
mkdir -p "$P" && cd "$P"
git init -q && git config user.email b@b && git config user.name b
mkdir .ralph
printf '# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n- [ ] **3** Three\n- [ ] **4** Four\n' > .ralph/spec.md
echo "do it" > .ralph/prompt.md
git add -A && git commit -qm init
# A stand-in claude that does one step a session, at a cost.
cat > "$W/claude" <<'SH'
#!/bin/sh
cat >/dev/null
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md && git commit -qam step
echo '{"type":"system","subtype":"init","session_id":"s","model":"m"}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.25,"num_turns":1,"usage":{"input_tokens":10,"output_tokens":5}}'
SH
chmod +x "$W/claude"
# One real run: its three steps kept.
"$RALPH" loop --claude "$W/claude" --max-iterations 3 >/dev/null 2>&1 || true
STATE=$HOME/.local/state/ralph
KEPT=$(ls "$STATE"/loops/*.costs.json)
[ -s "$KEPT" ] || { echo "the run kept no costs"; exit 1; }
git reset -q --hard HEAD~3

instructions() {
  timeout 300 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null </dev/null \
    | awk '/Collected :/ {print $4}'
}

ONE=$(instructions "$RALPH" estimate)
"$RALPH" estimate

# 4,999 more runs: their folders, and their steps kept as ralph keeps them.
TEMPLATE=$(ls -d .ralph/runs/*/ | head -1)
for _ in $(seq 1 50); do head -1 "$TEMPLATE/records.jsonl"; done > "$W/records.jsonl"
for i in $(seq 1 4999); do
  mkdir -p ".ralph/runs/2025-past-$i"
  cp "$W/records.jsonl" ".ralph/runs/2025-past-$i/records.jsonl"
done
python3 - "$KEPT" "$STATE/costs.json" <<'PY'
import json, sys
for path, most in ((sys.argv[1], 100), (sys.argv[2], 300)):
    kept = json.load(open(path))
    one = kept["runs"][-1]
    for i in range(4999):
        run = dict(one, run=f"past-{i}", steps=[[0.2 + (i % 7) * 0.05, 1.0, 60.0]] * 3)
        kept["runs"] = [r for r in kept["runs"] if r["run"] != run["run"]] + [run]
        kept["runs"] = kept["runs"][-most:]
    json.dump(kept, open(path, "w"))
PY
MANY=$(instructions "$RALPH" estimate)
"$RALPH" estimate
printf '%-10s %14s %14s %10s\n' command "1 run" "5000 runs" ratio
printf '%-10s %14s %14s %9.2fx\n' estimate "$ONE" "$MANY" "$(echo "$MANY / $ONE" | bc -l)"
