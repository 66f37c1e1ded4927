#!/bin/bash
# SPDX-License-Identifier: MIT
# Prepares the folder that travels to the GPU machine: stage.sh PROVGATE_BINARY STAGE_DIR
#   bin/provgate, lib/ (its non-system shared libraries: the GPU machine has none of
#   provgate's -dev packages), repo/ (the scenario repository: tag "baseline" with the baseline
#   kernel, then one commit changing csrc/pvg_kern.cu and pvgext/__init__.py), run-h200.sh and
#   compare-inspect.py. Then, on the GPU machine: bash STAGE_DIR/run-h200.sh
set -euo pipefail
bin=$1
stage=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib"
cp "$bin" "$stage/bin/provgate"
ldd "$bin" | awk '$3 ~ /^\// {print $3}' | while read -r l; do
	case "$(basename "$l")" in
	libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
	*) cp -L "$l" "$stage/lib/" ;;
	esac
done
cp "$here/run-h200.sh" "$here/run-h200-ab.sh" "$here/run-floor.sh" "$here/compare-inspect.py" \
	"$here/../bench/measure.py" "$here/../fixtures/procs/libpvgfixture.so" "$stage/"
mkdir -p "$stage/cuda-rdc"
cp "$here/../fixtures/cuda-rdc/make.sh" "$here/../fixtures/cuda-rdc/"*.cu "$stage/cuda-rdc/"

r=$stage/repo
mkdir -p "$r/csrc" "$r/pvgext" "$r/tools"
git -C "$r" init -q -b main
git -C "$r" config user.name provgate-test
git -C "$r" config user.email provgate-test@localhost
cp "$here/ext/csrc/pvg_ops.cpp" "$r/csrc/"
cp "$here/ext/csrc/pvg_kern.baseline.cu" "$r/csrc/pvg_kern.cu"
sed 's/^KERNEL_VERSION = 2$/KERNEL_VERSION = 1/' "$here/ext/pvgext/__init__.py" >"$r/pvgext/__init__.py"
cp "$here/ext/tools/"*.py "$r/tools/"
printf '# pvgext\nA small CUDA extension served by a PyTorch process (provgate GPU validation).\n' >"$r/README.md"
git -C "$r" add -A
git -C "$r" commit -qm "pvgext: rowscale falls back to PyTorch everywhere"
git -C "$r" tag baseline
cp "$here/ext/csrc/pvg_kern.cu" "$r/csrc/pvg_kern.cu"
cp "$here/ext/pvgext/__init__.py" "$r/pvgext/__init__.py"
git -C "$r" commit -qam "pvgext: half2 kernel for fp16 skinny rows"
git -C "$r" log --oneline
du -sh "$stage"
