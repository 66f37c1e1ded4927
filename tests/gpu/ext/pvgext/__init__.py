# SPDX-License-Identifier: MIT
"""Python side of the test extension (installed by copying pvgext/ into the site folder)."""
import torch  # noqa: F401  (loads libc10/libtorch before _C)

from . import _C

KERNEL_VERSION = 2


def rowscale(x, s):
    return _C.rowscale(x, float(s))
