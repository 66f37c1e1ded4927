# SPDX-License-Identifier: MIT
"""The ``provgate`` console script and ``python -m provgate``: the bundle's provgate itself.

The process is replaced (exec) by the bundle's launcher with the same arguments, so the exit
status, signals, stdin/stdout/stderr and the terminal are provgate's own; nothing of this
interpreter stays running."""
from __future__ import annotations

import os
import sys
from typing import List, NoReturn, Optional

from ._bundle import executable


def main(argv: Optional[List[str]] = None) -> NoReturn:
    args = list(sys.argv[1:] if argv is None else argv)
    launcher = executable()
    # argv[0] as typed when it was the console script (ps shows what the user ran); the
    # launcher finds the bundle through /proc/self/exe, not argv[0]
    argv0 = sys.argv[0] if os.path.basename(sys.argv[0]) == "provgate" else launcher
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(launcher, [argv0] + args)
    except OSError as e:
        sys.stderr.write(f"provgate: cannot start {launcher}: {e.strerror}\n")
        sys.exit(3)
