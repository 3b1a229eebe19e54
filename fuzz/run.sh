#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in build-fuzz/ and runs each for a
# bounded time on its seed corpus: the IDX reader's on fuzz/corpus, the
# CIFAR reader's on fuzz/corpus_cifar, the .npz/.npy reader's on fuzz/corpus_npz,
# the NumPy dataset reader's on fuzz/corpus_npz_dataset, the PNG/JPEG decoder's on
# fuzz/corpus_image.
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
ninja -C build-fuzz fuzz/fuzz_idx fuzz/fuzz_cifar fuzz/fuzz_npz fuzz/fuzz_npz_dataset
[ -x build-fuzz/fuzz/fuzz_image ] || ninja -C build-fuzz fuzz/fuzz_image 2>/dev/null || true
fuzz/run_target.sh build-fuzz/fuzz/fuzz_idx fuzz/corpus build-fuzz/fuzz-idx-work "$secs"
fuzz/run_target.sh build-fuzz/fuzz/fuzz_cifar fuzz/corpus_cifar build-fuzz/fuzz-cifar-work "$secs"
fuzz/run_target.sh build-fuzz/fuzz/fuzz_npz fuzz/corpus_npz build-fuzz/fuzz-npz-work "$secs"
fuzz/run_target.sh build-fuzz/fuzz/fuzz_npz_dataset fuzz/corpus_npz_dataset build-fuzz/fuzz-npz-dataset-work "$secs"
if [ -x build-fuzz/fuzz/fuzz_image ]; then
  fuzz/run_target.sh build-fuzz/fuzz/fuzz_image fuzz/corpus_image build-fuzz/fuzz-image-work "$secs"
else
  echo "fuzz/run.sh: no image fuzzer (libpng or libjpeg missing): skipped"
fi
