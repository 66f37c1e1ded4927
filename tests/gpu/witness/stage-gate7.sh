#!/bin/bash
# SPDX-License-Identifier: MIT
# Prepares the folder for run-gate7.sh: stage-gate7.sh PROVGATE_BINARY STAGE_DIR
#   everything tests/gpu/stage.sh puts there (bin/provgate, lib/, repo/ with the extension),
#   then what make-stage.sh adds (a release libprovgate-witness.so, demo), then run-gate7.sh.
# PROVGATE_BINARY should be a release build (e.g. build-witness-release/cmd/provgate, which
# make-stage.sh sets up). Then, on the GPU machine: bash STAGE_DIR/run-gate7.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/../stage.sh" "$1" "$2"
bash "$here/make-stage.sh" "$2"
cp "$here/run-gate7.sh" "$here/common.sh" "$2/"
git -C "$here" log -1 --format='provgate source %H %s' >"$2/provgate-source.txt"
git -C "$here" status --short >>"$2/provgate-source.txt"
