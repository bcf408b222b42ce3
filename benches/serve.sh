#!/usr/bin/env bash
# What `ralph serve` costs the machine with LOOPS loops (default 20: a
# checkout and its worktrees, each running a session that waits) and its
# page open (an event stream connected), over DURATION seconds (default 60): its CPU
# use and peak memory, side by side with `ralph watch` on the same loops in
# a real terminal (tmux), the face users have for them today. Needs tmux,
# curl, bc.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${DURATION:-60}
LOOPS=${LOOPS:-20}
cargo build --release --locked -q
RALPH=$PWD/target/release/ralph
W=$(mktemp -d)
trap 'tmux -S "$W/sock" kill-server 2>/dev/null; kill $(jobs -p) 2>/dev/null; pkill -f "$W/claude" 2>/dev/null; sleep 2; rm -rf "$W"' EXIT
export HOME=$W/home
mkdir -p "$HOME/.claude" "$W/p"
cd "$W/p"
git init -q && git config user.email b@b && git config user.name b
mkdir .ralph && printf '# Spec\n\n- [ ] **1** One\n' > .ralph/spec.md && echo "do it" > .ralph/prompt.md
git add -A && git commit -qm init
"$RALPH" install-hook >/dev/null 2>&1
cat > "$W/claude" <<'SH'
#!/bin/sh
cat >/dev/null
echo '{"type":"system","subtype":"init","session_id":"s","model":"m"}'
echo '{"type":"assistant","message":{"content":[{"type":"text","text":"waiting"}]}}'
sleep 100000
SH
chmod +x "$W/claude"
"$RALPH" loop --claude "$W/claude" > "$W/loop-main.out" 2>&1 &
for i in $(seq 2 "$LOOPS"); do
  "$RALPH" loop --worktree "w$i" --claude "$W/claude" > "$W/loop-$i.out" 2>&1 &
done
sleep 5
ticks=$(getconf CLK_TCK)
cpu_of() { awk -v t="$ticks" '{print ($14+$15+$16+$17)/t}' "/proc/$1/stat"; }
report() { # $1 label, $2 pid, $3 cpu before, $4 cpu after
  printf '%-44s cpu %6.3f%% of a core   peak RSS %6d KiB\n' "$1" \
    "$(echo "($4 - $3) * 100 / $SECONDS_EACH" | bc -l)" "$(awk '/VmHWM/ {print $2}' "/proc/$2/status")"
}
# ralph serve, its page open: an event stream held by curl.
"$RALPH" serve > "$W/serve.out" 2>&1 &
SERVE=$!
sleep 2
url=$(grep -o 'http://[^ ]*' "$W/serve.out")
port=$(echo "$url" | sed 's|http://127.0.0.1:\([0-9]*\)/.*|\1|')
token=${url##*token=}
listed=$(curl -s -H "Cookie: ralph-serve-$port=$token" "http://127.0.0.1:$port/api/loops" | grep -o '"id":' | wc -l)
echo "ralph serve lists $listed loops"
curl -s -N -H "Cookie: ralph-serve-$port=$token" "http://127.0.0.1:$port/events" > "$W/events.out" &
sleep 3
c0=$(cpu_of "$SERVE"); sleep "$SECONDS_EACH"; c1=$(cpu_of "$SERVE")
serve_cpu=$(echo "($c1 - $c0) * 100 / $SECONDS_EACH" | bc -l)
report "ralph serve ($LOOPS loops, a page open)" "$SERVE" "$c0" "$c1"
kill "$SERVE"
# ralph watch on the same loops, in tmux.
tmux -S "$W/sock" new-session -d -s b -x 160 -y 40 -c "$W/p" "echo \$\$ > $W/pane.pid; exec $RALPH watch"
sleep 3
pid=$(cat "$W/pane.pid")
c0=$(cpu_of "$pid"); sleep "$SECONDS_EACH"; c1=$(cpu_of "$pid")
watch_cpu=$(echo "($c1 - $c0) * 100 / $SECONDS_EACH" | bc -l)
report "ralph watch ($LOOPS loops, in tmux)" "$pid" "$c0" "$c1"
printf 'serve / watch CPU: %.2f\n' "$(echo "$serve_cpu / ($watch_cpu + 0.0001)" | bc -l)"
