#!/usr/bin/env bash
# Benchmark `ralph hook stop` against the plain-bash reference hook
# (../shared/reference/ref-stop-hook.sh, or $REF) and /bin/true, whole-process
# wall time with hyperfine, in one run:
#   1. no-op path (RALPH_LOOP unset): ralph vs reference vs /bin/true
#   2. active path (RALPH_LOOP=1): ralph vs reference
#   3. active path again with 5,000 extra idle processes on the machine
#
# The active path signals the Claude Code process above it, so it runs under
# a stand-in session started here: a copy of bash named `claude`, started with
# RALPH_LOOP=1 and ignoring SIGINT, with hyperfine as its child. Nothing
# outside this script is ever signalled.
#
# Stdin is /dev/null for every command (old hyperfine has no --input): the
# hook must cope with empty input anyway.
# Needs hyperfine (apt-get install hyperfine) and a release build (done here).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "hyperfine not found: apt-get install hyperfine" >&2; exit 2; }
REF=${REF:-../shared/reference/ref-stop-hook.sh}
[ -f "$REF" ] || { echo "reference hook not found at $REF (set REF=...)" >&2; exit 2; }
cargo build --release --locked -q
RALPH=$PWD/target/release/ralph
RUNS=${RUNS:-300}
work=$(mktemp -d)
sleepers=()
cleanup() {
  if [ ${#sleepers[@]} -gt 0 ]; then kill "${sleepers[@]}" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cp "$REF" "$work/ref-stop-hook.sh"
cp /bin/bash "$work/claude"
echo '{"hook_event_name":"Stop","session_id":"bench"}' > "$work/stop.json"

median() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join("%.3f" % (r["median"]*1000) for r in d["results"]))' "$1"; }

# 1. no-op
env -u RALPH_LOOP hyperfine -N -w 20 -r "$RUNS" --export-json "$work/noop.json" \
  -n true "/bin/true" \
  -n ralph "$RALPH hook stop" \
  -n reference "bash $work/ref-stop-hook.sh" >/dev/null
read -r t_true t_ralph_noop t_ref_noop < <(median "$work/noop.json")

# 2./3. active, under the stand-in session (CLAUDE_PID as Claude Code sets it;
# `cli` entrypoint: the interactive path that signals at once, like the reference).
# shellcheck disable=SC2016 # expanded by the stand-in session, not here
active() {
  env RALPH_LOOP=1 CLAUDE_CODE_ENTRYPOINT=cli "$work/claude" -c '
    trap "" INT
    export CLAUDE_PID=$$
    hyperfine -N -w 20 -r "$1" --export-json "$2" \
      -n ralph "$3 hook stop" -n reference "bash $4" >/dev/null
    true' bench "$2" "$1" "$RALPH" "$work/ref-stop-hook.sh"
}
active "$work/active.json" "$RUNS"
read -r t_ralph_active t_ref_active < <(median "$work/active.json")

for _ in $(seq 5000); do sleep 3600 & sleepers+=($!); done
# The reference takes ~0.7 s a run here: fewer runs.
active "$work/active5000.json" "${RUNS5000:-40}"
read -r t_ralph_5000 t_ref_5000 < <(median "$work/active5000.json")

python3 - "$t_true" "$t_ralph_noop" "$t_ref_noop" "$t_ralph_active" "$t_ref_active" "$t_ralph_5000" "$t_ref_5000" <<'PY'
import sys
t, rn, fn, ra, fa, r5, f5 = map(float, sys.argv[1:])
rows = [
  ("no-op: ralph / /bin/true", rn / t, "<= 1.30"),
  ("no-op: ralph / reference", rn / fn, "<= 0.35"),
  ("active: ralph / reference", ra / fa, "<= 0.05"),
  ("active +5000 procs / active", r5 / ra, "<= 1.20"),
]
print(f"median ms: /bin/true {t:.3f} | no-op ralph {rn:.3f} ref {fn:.3f} | active ralph {ra:.3f} ref {fa:.3f} | +5000 procs ralph {r5:.3f} ref {f5:.3f}")
for name, ratio, target in rows:
    print(f"{name:32} {ratio:6.3f}  (target {target})")
PY
