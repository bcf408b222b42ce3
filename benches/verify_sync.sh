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
cargo build --release --locked -q
# A just-linked binary still has dirty pages in writeback, which slows its
# first thousands of starts: flush them before measuring.
sync
RALPH=$PWD/target/release/ralph
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
PATH="$(dirname "$BR"):$PATH" hyperfine -N -w 3 -r "${RUNS:-20}" --export-json "$work/r.json" \
  -n "br list --json" "$BR list --json" \
  -n "br list --all --json" "$BR list --all --json --limit 0" \
  -n "ralph verify-sync" "$RALPH verify-sync" >/dev/null
python3 - "$work/r.json" "$N" <<'PY'
import json, sys
r = {x["command"]: x["median"] * 1000 for x in json.load(open(sys.argv[1]))["results"]}
b, a, v = r["br list --json"], r["br list --all --json"], r["ralph verify-sync"]
print(f"{sys.argv[2]} steps/tasks, median ms: br list --json {b:.1f} | br list --all --json {a:.1f} | ralph verify-sync {v:.1f}")
print(f"verify-sync / br list --json:       {v / b:.3f}  (target <= 1.30)")
print(f"verify-sync / br list --all --json: {v / a:.3f}  (the one call it makes; --json alone leaves closed tasks out)")
PY
