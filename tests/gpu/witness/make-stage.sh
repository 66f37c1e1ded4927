#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds what run-witness.sh needs into STAGE: make-stage.sh STAGE
#   demo                      nvcc -O2 -arch=sm_90 demo.cu (linked with libcuda for cuLaunchKernel)
#   libprovgate-witness.so    a release build of lib/witness (meson, build-witness-release/)
#   run-witness.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
stage=$1
mkdir -p "$stage"
nvcc -O2 -arch=sm_90 "$here/demo.cu" -o "$stage/demo" -L/usr/local/cuda/lib64/stubs -lcuda
b=$src/build-witness-release
[ -f "$b/build.ninja" ] || meson setup "$b" "$src" -Dbuildtype=release >/dev/null
ninja -C "$b" lib/witness/libprovgate-witness.so >/dev/null
cp "$b/lib/witness/libprovgate-witness.so" "$stage/"
cp "$here/run-witness.sh" "$stage/"
ls -l "$stage"
