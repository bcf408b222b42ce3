#!/usr/bin/env bash
# Benchmark the cost of `ralph loop --confined` per session against the
# default mode, with the real Claude Code CLI against the scripted API of the
# test suite: sessions of the two modes alternate (ROUNDS each, default 10),
# each one Bash call, whole `ralph loop --max-iterations 1` runs timed.
# Needs what the tests need (see README), plus bubblewrap and socat.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-10} cargo test --release --locked --test it -- --ignored --exact \
  confined::bench_confined_overhead_per_session --nocapture 2>&1 | grep -E "interleaved rounds|test result"
