# SPDX-License-Identifier: MIT
"""Where the wheel's bundle lies: provgate/_bundle/, the relocatable bundle of
``meson compile bundle`` (bin/provgate, its static launcher; libexec/provgate/, provgate with
its own loader and libraries; lib/provgate/libprovgate-witness.so; share/man, share/provgate)."""
from __future__ import annotations

import os

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bundle")


def bundle_root() -> str:
    """The bundle's root folder inside the installed package."""
    return _ROOT


def executable() -> str:
    """The bundle's ``bin/provgate``: the static launcher that starts provgate with the
    bundle's loader and libraries, whatever the host's glibc."""
    return os.path.join(_ROOT, "bin", "provgate")


def witness_library() -> str:
    """The bundle's dispatch witness, ``libprovgate-witness.so`` (glibc 2.17 or newer)."""
    return os.path.join(_ROOT, "lib", "provgate", "libprovgate-witness.so")
