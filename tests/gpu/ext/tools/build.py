# SPDX-License-Identifier: MIT
"""Builds pvgext's _C.so with torch.utils.cpp_extension (ninja, verbose: the compile lines with
their -gencode flags and the link line go to stdout, which the caller keeps as the build log).
Usage: build.py REPO BUILD_DIR   (TORCH_CUDA_ARCH_LIST picks the arch, e.g. "9.0+PTX")."""
import os
import sys

from torch.utils.cpp_extension import load

repo, bdir = sys.argv[1], sys.argv[2]
os.makedirs(bdir, exist_ok=True)
load(name="_C",
     sources=[os.path.join(repo, "csrc/pvg_ops.cpp"), os.path.join(repo, "csrc/pvg_kern.cu")],
     build_directory=bdir,
     extra_cflags=["-O2"],
     extra_cuda_cflags=["-O3", "-lineinfo"],
     # a GNU build-id note, as distribution toolchains write by default: what provgate
     # compare identifies a mapped library by
     extra_ldflags=["-Wl,--build-id"],
     verbose=True)
print("built", os.path.join(bdir, "_C.so"), flush=True)
