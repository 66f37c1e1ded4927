#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the code-identity programs into STAGE (make-modules.sh STAGE), with nvcc, sm_90:
#   libpvgdup.so            the artifact's pvg_dup_kernel (x * 2 + 1)
#   libpvgdup_z.so          the same, its fatbin compressed (-Xfatbin=-compress-all)
#   libvendor_ops.so        an older copy of pvg_dup_kernel (x * 2), another entry point
#   dupsvc                  the host program (dupsvc.cu)
#   modload, k.cubin, k.ptx, k_fat.fatbin   driver-API loads (modload.cu)
#   libprovgate-witness.so, libprovgate-witness-bench.so, witness-tool   release builds
# (cuobjdump, which extracts each .so's sm_90 ELF, runs on the GPU machine: run-modules.sh)
set -euo pipefail
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../../.." && pwd)
stage=$1
mkdir -p "$stage"
cd "$stage"
NV="nvcc -O2 -arch=sm_90 -cudart shared -Xcompiler -fvisibility=hidden,-fPIC"
$NV -shared -o libpvgdup.so "$here/pvgdup.cu"
$NV -shared -Xfatbin=-compress-all -o libpvgdup_z.so "$here/pvgdup.cu"
$NV -shared -DVARIANT_VENDOR -o libvendor_ops.so "$here/pvgdup.cu"
$NV -o dupsvc "$here/dupsvc.cu" -ldl
nvcc -O2 -arch=sm_90 -o modload "$here/modload.cu" -lcuda
nvcc -cubin -arch=sm_90 -o k.cubin "$here/pvgdup.cu"
nvcc -ptx -arch=sm_90 -o k.ptx "$here/pvgdup.cu"
nvcc -fatbin -gencode arch=compute_90,code=sm_90 -o k_fat.fatbin "$here/pvgdup.cu"
b=$src/build-witness-release
[ -f "$b/build.ninja" ] || meson setup "$b" "$src" -Dbuildtype=release >/dev/null
ninja -C "$b" lib/witness/libprovgate-witness.so lib/witness/libprovgate-witness-bench.so tests/helpers/witness-tool >/dev/null
cp "$b/lib/witness/libprovgate-witness.so" "$b/lib/witness/libprovgate-witness-bench.so" "$b/tests/helpers/witness-tool" .
cp "$here/triton_add.py" "$here/run-modules.sh" .
nvcc -O2 -arch=sm_90 "$here/../demo.cu" -o demo -L/usr/local/cuda/lib64/stubs -lcuda
sha256sum *.cubin *.so | sort -k2
