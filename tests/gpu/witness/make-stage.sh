#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds what run-witness.sh needs into STAGE: make-stage.sh STAGE
#   demo                      nvcc -O2 -arch=sm_90 demo.cu (linked with libcuda for cuLaunchKernel)
#   libprovgate-witness.so    a release build of lib/witness (meson, build-witness-release/)
#   libprovgate-witness-bench.so  the same with the bench exports (run-overhead.sh, run-gate7.sh 08-11)
#   witness-tool              the gate's parser of witness files (tests/helpers)
#   run-witness.sh, run-overhead.sh, overhead-loop.py
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
stage=$1
mkdir -p "$stage"
nvcc -O2 -arch=sm_90 "$here/demo.cu" -o "$stage/demo" -L/usr/local/cuda/lib64/stubs -lcuda
b=$src/build-witness-release
[ -f "$b/build.ninja" ] || meson setup "$b" "$src" -Dbuildtype=release >/dev/null
ninja -C "$b" lib/witness/libprovgate-witness.so lib/witness/libprovgate-witness-bench.so tests/helpers/witness-tool >/dev/null
cp "$b/lib/witness/libprovgate-witness.so" "$b/lib/witness/libprovgate-witness-bench.so" "$b/tests/helpers/witness-tool" "$stage/"
cp "$here/run-witness.sh" "$here/run-overhead.sh" "$here/overhead-loop.py" "$stage/"
ls -l "$stage"
