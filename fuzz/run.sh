#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in build-fuzz/ and runs the IDX
# reader's for a bounded time on the seed corpus in fuzz/corpus.
# Usage: fuzz/run.sh [SECONDS]   (default 20)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
secs=${1:-20}
if ! command -v clang >/dev/null; then
  echo "fuzz/run.sh: clang not found: apt-get install clang" >&2
  exit 1
fi
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang meson setup build-fuzz -Dfuzz=enabled -Dtests=false --buildtype=debugoptimized
fi
ninja -C build-fuzz fuzz/fuzz_idx
fuzz/run_target.sh build-fuzz/fuzz/fuzz_idx fuzz/corpus build-fuzz/fuzz-idx-work "$secs"
