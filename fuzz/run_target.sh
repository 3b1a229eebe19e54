#!/bin/sh
# Runs a libFuzzer target for a bounded time.
# Usage: run_target.sh TARGET SEED_DIR WORK_DIR [SECONDS]
# New corpus entries go to WORK_DIR/corpus (the seed dir stays untouched);
# a crashing input is saved under WORK_DIR/artifacts and the exit code is
# non-zero.
set -eu
target=$1 seeds=$2 work=$3 secs=${4:-20}
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
exec "$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" "$seeds"
