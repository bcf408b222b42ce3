#!/usr/bin/env bash
# Benchmark `ralph loop` overhead per iteration with one loop alone and with
# two loops at once in two git worktrees of one repository (instant stand-ins
# for claude, as benches/loop.sh). Target: the same within noise.
set -euo pipefail
cd "$(dirname "$0")/.."
RALPH=$(./install.sh --build-only)
sync
N=${N:-50}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir repo && cd repo
git init -q . && git -c user.email=b@b -c user.name=b commit -q --allow-empty -m start
mkdir .ralph && printf -- '- [ ] **1** work\n' > .ralph/spec.md && echo "do it" > .ralph/prompt.md
git add -A && git -c user.email=b@b -c user.name=b commit -qm ralph
result='{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"ok","total_cost_usd":0.001,"usage":{"input_tokens":1,"output_tokens":1}}'
cat > "$work/instant" <<EOF2
#!/bin/sh
cat > /dev/null
echo x >> work.txt
echo '$result'
EOF2
chmod +x "$work/instant"
run() { # worktree name -> seconds for N iterations
  local t0 t1
  t0=$(date +%s%N)
  "$RALPH" loop --worktree "$1" --claude "$work/instant" --max-iterations "$N" >/dev/null 2>&1 || true
  t1=$(date +%s%N)
  echo "$(( (t1 - t0) / 1000 ))e-6"
}
alone=()
pair=()
for round in 1 2 3; do
  alone+=("$(run solo$round)")
  run pa$round > "$work/a.$round" &
  run pb$round > "$work/b.$round" &
  wait
  pair+=("$(cat "$work/a.$round")" "$(cat "$work/b.$round")")
done
python3 - "$N" "${alone[@]}" -- "${pair[@]}" <<'PY'
import sys, statistics
n = int(sys.argv[1]); rest = sys.argv[2:]; i = rest.index("--")
alone = [float(x) for x in rest[:i]]; pair = [float(x) for x in rest[i+1:]]
a = statistics.median(alone) / n * 1000; p = statistics.median(pair) / n * 1000
print(f"per iteration, whole: one loop alone {a:.1f} ms; each of two loops at once {p:.1f} ms ({p/a:.2f}x; 2 cores)")
PY
