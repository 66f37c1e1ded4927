# SPDX-License-Identifier: MIT
"""``python -m provgate ARGS...`` is ``provgate ARGS...``."""
from ._cli import main

if __name__ == "__main__":
    main()
