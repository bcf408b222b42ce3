#!/usr/bin/env bash
# Benchmark `ralph verify-sync` on a 2,000-step spec whose steps are the
# 2,000 tasks of one epic, against a single `br list --json` on the same
# workspace (the floor: verify-sync must read every status at least once).
# Target: verify-sync <= 1.3x br list.
#
# Needs hyperfine (apt-get install hyperfine) and br on PATH (or BR=path; the
# test suite builds one into ~/.cache/ralph-test/br-0.7.6/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "hyperfine not found: apt-get install hyperfine" >&2; exit 2; }
BR=${BR:-$(command -v br || echo "$HOME/.cache/ralph-test/br-0.7.6/bin/br")}
[ -x "$BR" ] || { echo "br not found (set BR=...)" >&2; exit 2; }
N=${N:-2000}
# The binary exactly as install.sh builds it (static where it can be).
RALPH=$(./install.sh --build-only)
# A just-linked binary still has dirty pages in writeback, which slows its
# first thousands of starts: flush them before measuring.
sync
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
mkdir -p "$work/bench"
cd "$work/bench"
"$BR" init >/dev/null
epic=$("$BR" create "Benchmark epic" --type epic --silent)
python3 - "$epic" "$N" <<'PY'
import json, sys
epic, n = sys.argv[1], int(sys.argv[2])
t = "2026-11-22T00:00:00.000000000Z"
with open(".beads/issues.jsonl") as f:
    lines = f.read().splitlines()
spec = ["# Benchmark spec", "", f"Epic: [{epic}]", ""]
for i in range(1, n + 1):
    tid = f"{epic}.{i}"
    closed = i % 2 == 0
    issue = {"id": tid, "title": f"Task {i}", "status": "closed" if closed else "open", "priority": 2,
             "issue_type": "task", "created_at": t, "created_by": "bench", "updated_at": t,
             "source_repo": "bench", "compaction_level": 0, "original_size": 0,
             "dependencies": [{"issue_id": tid, "depends_on_id": epic, "type": "parent-child",
                               "created_at": t, "created_by": "bench", "metadata": "{}", "thread_id": ""}]}
    if closed:
        issue.update(closed_at=t, close_reason="done")
    lines.append(json.dumps(issue))
    spec.append(f"- [{'x' if closed else ' '}] **{i}** Task {i} [{tid}]")
open(".beads/issues.jsonl", "w").write("\n".join(lines) + "\n")
import os
os.makedirs(".ralph", exist_ok=True)
open(".ralph/spec.md", "w").write("\n".join(spec) + "\n")
PY
"$BR" sync --import-only >/dev/null
PATH="$(dirname "$BR"):$PATH" "$RALPH" verify-sync >/dev/null || { echo "setup is not in sync:"; PATH="$(dirname "$BR"):$PATH" "$RALPH" verify-sync | head; exit 1; }
export PATH="$(dirname "$BR"):$PATH"
hyperfine -N -w 3 -r "${RUNS:-20}" --export-json "$work/r.json" \
  -n "br list --json" "$BR list --json" \
  -n "br list --all --json --fields" "$BR list --all --json --limit 0 --fields id,status,title" \
  -n "ralph verify-sync" "$RALPH verify-sync" >/dev/null
# This VM's speed drifts by tens of percent over seconds, and hyperfine times
# each command in its own block; so time them interleaved as well (one run of
# each in turn), which every command feels alike.
python3 - "$work/r.json" "$N" "$BR" "$RALPH" "${RUNS:-20}" <<'PY'
import json, os, statistics, sys, time
r = {x["command"]: x["median"] * 1000 for x in json.load(open(sys.argv[1]))["results"]}
n, br, ralph, runs = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
cmds = {"br list --json": [br, "list", "--json"],
        "br list --all --json --fields": [br, "list", "--all", "--json", "--limit", "0", "--fields", "id,status,title"],
        "ralph verify-sync": [ralph, "verify-sync"]}
null = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0), (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)]
def timed(argv):
    t0 = time.perf_counter_ns()
    os.waitpid(os.posix_spawn(argv[0], argv, os.environ, file_actions=null), 0)
    return (time.perf_counter_ns() - t0) / 1e6
t = {k: [] for k in cmds}
for i in range(3 + runs * 3):
    for k, argv in cmds.items():
        d = timed(argv)
        if i >= 3:
            t[k].append(d)
m = {k: statistics.median(v) for k, v in t.items()}
for label, x in (("hyperfine, each in its block", r), (f"interleaved, {runs * 3} rounds", m)):
    b, a, v = x["br list --json"], x["br list --all --json --fields"], x["ralph verify-sync"]
    print(f"{label}: {n} steps/tasks, median ms: br list --json {b:.1f} | br list --all --json --fields id,status,title {a:.1f} | ralph verify-sync {v:.1f}")
    print(f"  verify-sync / br list --json:       {v / b:.3f}  (target <= 1.30)")
    print(f"  verify-sync / the br call it makes: {v / a:.3f}  (--all: --json alone leaves closed tasks out)")
PY
