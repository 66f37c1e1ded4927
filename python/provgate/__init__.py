# SPDX-License-Identifier: MIT
"""provgate from Python: proves that a GPU benchmark's number came from the kernel just
modified, built and installed (see provgate(1) and ``provgate --help``).

    import provgate

    report = provgate.certify("provgate.json")          # NotCertified when a link is open
    with provgate.benchmark("provgate.json", out="bench.json") as run:
        run_my_benchmark()                                # exec's before/after checks
    env = dict(os.environ, **provgate.witness_env("/var/tmp/pvg-witness"))
    report = provgate.load_report("bench.json")

Every function runs the provgate of this package's bundle (``provgate.executable()``), so
the checks and reports are the command line's; the ``provgate`` console script and
``python -m provgate`` are that program."""
from ._api import (Benchmark, ConfigError, NotCertified, ProvgateError, benchmark, certify,
                   witness_env)
from ._bundle import bundle_root, executable, witness_library
from ._report import (Artifact, BuildFile, Chain, ConfigRef, ExecInfo, Gate, Host,
                      InstalledFile, Markers, Problem, Process, Report, ReportError, Tool,
                      Witness, load_report, report_from_dict)

try:
    from ._version import __version__
except ImportError:  # the source tree, not a built wheel
    __version__ = "0+unknown"

__all__ = [
    "certify", "benchmark", "witness_env", "load_report", "report_from_dict",
    "executable", "bundle_root", "witness_library",
    "Benchmark", "Report", "Gate", "Problem", "Chain", "BuildFile", "InstalledFile",
    "Process", "Markers", "Witness", "Artifact", "Tool", "Host", "ConfigRef", "ExecInfo",
    "ProvgateError", "ConfigError", "NotCertified", "ReportError", "__version__",
]
