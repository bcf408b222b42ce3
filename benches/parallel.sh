#!/usr/bin/env bash
# Benchmark `ralph loop --parallel`: nine steps (eight independent in a
# first `##` section, one in a second that waits for them), each done by a
# stand-in session that takes 3 s, run with --parallel 4 and with
# --parallel 1 (the ordinary loop) in the same run, ROUNDS times each,
# alternating, each with a gate (`--gate`, a command that counts its runs).
# Prints the wall times, their ratio (ideal 3x: 9 sessions of 3 s in 3
# waves of 4, 4 and 1 against 9 in a row; target >= 2.8x), the loop's own
# overhead per merge (git's merge plus ralph's spec and log merge and
# checkout move, as each merge line says) and how often the gate ran: once
# per merge and once for COMPLETE with --parallel 4, never by a worker.
# Needs git and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
RALPH=$(./install.sh --build-only)
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-3}
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
result='{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"ok","total_cost_usd":0.001,"usage":{"input_tokens":1,"output_tokens":1}}'
cat > "$work/session" <<EOF2
#!/bin/sh
cat > /dev/null
sleep $SECS
echo "\${RALPH_STEP:-one}" > "step-\$(date +%s%N).txt"
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md
git add -A && git commit -qm step
grep -q -e '- \[ \]' .ralph/spec.md || $RALPH complete -m done > /dev/null
echo '$result'
EOF2
chmod +x "$work/session"

# A fresh project for one run; prints its wall time in seconds.
one_run() {
  local n=$1 dir
  dir=$(mktemp -d "$work/p.XXXX")
  (
    cd "$dir"
    git init -q . && git config user.email b@b && git config user.name b
    mkdir .ralph
    { printf '# Spec\n\n## Independent\n\n'
      for i in 1 2 3 4 5 6 7 8; do printf -- '- [ ] **%d** part %d\n' "$i" "$i"; done
      printf '\n## Then\n\n- [ ] **9** join them\n'; } > .ralph/spec.md
    echo "do the first open step" > .ralph/prompt.md
    git add -A && git commit -qm start
    local t0 t1
    t0=$(date +%s.%N)
    "$RALPH" loop --parallel "$n" --claude "$work/session" --max-iterations 20 \
      --gate "echo ran >> $dir.gates" > "$dir.out" 2>&1 || { cat "$dir.out" >&2; exit 1; }
    t1=$(date +%s.%N)
    grep -q "complete: all 9 steps done" "$dir.out" || { cat "$dir.out" >&2; exit 1; }
    printf '%s ' "$(wc -l < "$dir.gates")" >> "$work/gates-$n"
    python3 -c "print($t1 - $t0)"
  )
}

p4=() p1=()
for r in $(seq "$ROUNDS"); do
  p4+=("$(one_run 4)")
  p1+=("$(one_run 1)")
done
merges=$(cat "$work"/p.*.out | sed -n 's/.*merged .* into .* (\([0-9]*\) ms)$/\1/p')
gates="--parallel 4: $(cat "$work/gates-4")· --parallel 1: $(cat "$work/gates-1")"
python3 - "${p4[*]}" "${p1[*]}" "$merges" "$gates" <<'PY'
import statistics, sys
p4 = [float(x) for x in sys.argv[1].split()]
p1 = [float(x) for x in sys.argv[2].split()]
ms = [int(x) for x in sys.argv[3].split()]
m4, m1 = statistics.median(p4), statistics.median(p1)
print(f"--parallel 4: {m4:.2f} s median of {len(p4)} ({', '.join(f'{x:.2f}' for x in p4)})")
print(f"--parallel 1: {m1:.2f} s median of {len(p1)} ({', '.join(f'{x:.2f}' for x in p1)})")
print(f"ratio: {m1 / m4:.2f}x (ideal 3x, target >= 2.8x)")
if ms:
    print(f"per merge (git merge + ralph's own work, before its gate): median {statistics.median(ms)} ms, max {max(ms)} ms over {len(ms)} merges")
print(f"gate runs per run (expected: 9 merges + COMPLETE = 10 with --parallel 4; the last session's `ralph complete` + COMPLETE = 2 with --parallel 1): {sys.argv[4]}")
PY
