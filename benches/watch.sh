#!/usr/bin/env bash
# What `ralph watch` costs the machine: its CPU use idle (a loop whose
# session waits) and while a session streams (a line every 50 ms), and its
# memory, each over DURATION seconds (default 30; bash keeps its own SECONDS) in a real terminal (tmux). Side by
# side with what users would run otherwise: `watch -n 1 ralph status --all`
# (procps), its shell and every ralph it starts counted. Needs tmux, procps.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${DURATION:-30}
cargo build --release --locked -q
RALPH=$PWD/target/release/ralph
W=$(mktemp -d)
trap 'for s in "$W"/sock*; do tmux -S "$s" kill-server 2>/dev/null; done; pkill -f "$W/claude" 2>/dev/null; rm -rf "$W"' EXIT
export HOME=$W/home
mkdir -p "$HOME/.claude" "$W/p"
cd "$W/p"
git init -q && git config user.email b@b && git config user.name b
mkdir .ralph && printf '# Spec\n\n- [ ] **1** One\n' > .ralph/spec.md && echo "do it" > .ralph/prompt.md
git add -A && git commit -qm init
"$RALPH" install-hook >/dev/null 2>&1
# MODE=idle: a session that prints one line and waits; stream: a line every 50 ms.
cat > "$W/claude" <<'SH'
#!/bin/sh
cat >/dev/null
echo '{"type":"system","subtype":"init","session_id":"s","model":"m"}'
if [ -e "$MODE_FILE" ] && [ "$(cat "$MODE_FILE")" = stream ]; then
  i=0; while :; do i=$((i+1)); echo '{"type":"assistant","message":{"content":[{"type":"text","text":"line '$i'"}]}}'; sleep 0.05; done
fi
echo '{"type":"assistant","message":{"content":[{"type":"text","text":"waiting"}]}}'
sleep 100000
SH
chmod +x "$W/claude"
export MODE_FILE=$W/mode
ticks=$(getconf CLK_TCK)
# CPU seconds (user+system) of a process and its children that have ended.
cpu_of() { awk -v t="$ticks" '{print ($14+$15+$16+$17)/t}' "/proc/$1/stat"; }
tree_cpu() { # a pid and every live descendant, plus what ended children used
  local total=0 p
  for p in $1 $(pgrep -P "$1" 2>/dev/null); do total=$(echo "$total + $(cpu_of "$p" 2>/dev/null || echo 0)" | bc -l); done
  echo "$total"
}
N=0
measure() { # $1: label, $2: command for the pane
  N=$((N+1))
  tmux -S "$W/sock$N" new-session -d -s b -x 120 -y 30 -c "$W/p" "echo \$\$ > $W/pane.pid; exec $2"
  sleep 3
  local pid; pid=$(cat "$W/pane.pid")
  local c0; c0=$(tree_cpu "$pid")
  sleep "$SECONDS_EACH"
  local c1; c1=$(tree_cpu "$pid")
  local hwm; hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  printf '%-40s cpu %6.3f%% of a core   peak RSS %6d KiB\n' "$1" "$(echo "($c1 - $c0) * 100 / $SECONDS_EACH" | bc -l)" "$hwm"
  tmux -S "$W/sock$N" kill-server 2>/dev/null || true
}
for mode in idle stream; do
  echo "$mode" > "$MODE_FILE"
  "$RALPH" loop --claude "$W/claude" > "$W/loop.out" 2>&1 &
  LOOP=$!
  sleep 2
  measure "ralph watch ($mode)" "$RALPH watch"
  measure "watch -n 1 ralph status --all ($mode)" "watch -n 1 $RALPH status --all"
  kill -INT "$LOOP"; wait "$LOOP" 2>/dev/null || true
  pkill -f "$W/claude" 2>/dev/null || true
  wc -c .ralph/runs/*/session-*.jsonl | tail -1 >&2
  rm -rf .ralph/runs
done
