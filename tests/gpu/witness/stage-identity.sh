#!/bin/bash
# SPDX-License-Identifier: MIT
# Prepares the folder for run-identity.sh: stage-identity.sh PROVGATE_BINARY STAGE_DIR
#   everything stage-gate7.sh puts there, then run-identity.sh, common.sh and the vendor
#   plugin's source, and tests/gpu/jit's recorder of Triton and torch.compile caches. Then, on
#   the GPU machine: bash STAGE_DIR/run-identity.sh; bash STAGE_DIR/record-jit.sh STAGE_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/stage-gate7.sh" "$1" "$2"
cp "$here/run-identity.sh" "$here/common.sh" "$here/../ext/vendor/vendor_ops.cu" "$2/"
cp "$here"/../jit/*.sh "$here"/../jit/*.py "$2/"
