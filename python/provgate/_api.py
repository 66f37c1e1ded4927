# SPDX-License-Identifier: MIT
"""provgate's verbs from Python: each runs the bundle's provgate and reads what it wrote, so
the checks, the report and the exit statuses are the command line's (provgate(1))."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from types import TracebackType
from typing import Dict, IO, List, Optional, Sequence, Type, Union

from ._bundle import executable
from ._report import Gate, Problem, Report, ReportError, load_report, report_from_dict

PathLike = Union[str, "os.PathLike[str]"]

# provgate's exit statuses (SPEC §2)
EXIT_NOT_CERTIFIED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


class ProvgateError(Exception):
    """provgate could not do what was asked: a bad config or option (exit status 2), an
    internal error (3), a report that could not be read. ``stderr`` is what it said."""

    def __init__(self, message: str, exit_status: Optional[int] = None, stderr: str = ""):
        super().__init__(message)
        self.exit_status = exit_status
        self.stderr = stderr


class ConfigError(ProvgateError):
    """The config or an option was refused (exit status 2): an unknown key, a bad value, an
    unreadable file, a report file that cannot be written."""


class NotCertified(ProvgateError):
    """The chain did not close (exit status 1), or, for ``benchmark``, the re-check after the
    block failed or the block did not complete.

    ``report`` is the whole report; ``gates`` the gates of the certification that did not
    pass, ``after_gates`` those of the re-check after the benchmark, ``problems`` every
    problem of both, in the chain's order."""

    def __init__(self, report: Report, stderr: str = "", exit_status: Optional[int] = 1):
        self.report = report
        self.gates: List[Gate] = report.not_passed
        self.after_gates: List[Gate] = report.not_passed_after
        self.problems: List[Problem] = report.problems
        super().__init__(_not_certified_text(report), exit_status, stderr)


def _not_certified_text(report: Report) -> str:
    parts = []
    for when, gates in (("", report.not_passed), ("after the benchmark: ", report.not_passed_after)):
        for g in gates:
            codes = ", ".join(p.code for p in g.problems)
            parts.append(f"{when}gate {g.id} {g.name} {g.status}" + (f" ({codes})" if codes else ""))
    ex = report.exec
    if ex is not None and ex.outcome not in (None, "succeeded") and report.provenance_certified:
        parts.append(f"the benchmark {ex.outcome}" +
                     (f" (exit status {ex.exit_status})" if ex.exit_status is not None else ""))
    return "not certified: " + ("; ".join(parts) if parts else "no gate passed")


def _config_args(config: Optional[PathLike]) -> List[str]:
    return [] if config is None else ["-c", os.fspath(config)]


def _failed(verb: str, rc: int, stderr: str) -> ProvgateError:
    text = stderr.strip() or f"provgate {verb} exited with status {rc}"
    if rc == EXIT_USAGE:
        return ConfigError(text, rc, stderr)
    if rc < 0:
        return ProvgateError(f"provgate {verb} was killed by signal {-rc}", rc, stderr)
    return ProvgateError(text, rc, stderr)


def certify(config: Optional[PathLike] = None, *, out: Optional[PathLike] = None,
            junit: Optional[PathLike] = None, keep_going: bool = False,
            args: Sequence[str] = (), cwd: Optional[PathLike] = None,
            env: Optional[Dict[str, str]] = None) -> Report:
    """``provgate certify``: all seven gates, live. Returns the report when certified.

    ``config`` is the provgate.json (default: ``$PROVGATE_CONFIG``, else ./provgate.json);
    ``out`` and ``junit`` keep the JSON and JUnit reports as files; ``args`` adds command-line
    options (``["--pid", "4242"]``).

    Raises ``NotCertified`` (with the report, the gates that did not pass and their
    problems) when a link did not close, ``ConfigError`` for a config or option provgate
    refused and ``ProvgateError`` for anything else."""
    cmd = [executable(), "certify", "--no-color", "-q"] + _config_args(config)
    cmd += ["--json", os.fspath(out) if out is not None else "-"]
    if junit is not None:
        cmd += ["--junit", os.fspath(junit)]
    if keep_going:
        cmd.append("--keep-going")
    cmd += list(args)
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, cwd=cwd, env=env)
    stderr = p.stderr.decode("utf-8", "replace")
    if p.returncode not in (0, EXIT_NOT_CERTIFIED):
        raise _failed("certify", p.returncode, stderr)
    try:
        if out is not None:
            report = load_report(out if cwd is None or os.path.isabs(out)
                                 else os.path.join(cwd, out))
        else:
            report = report_from_dict(json.loads(p.stdout.decode("utf-8")))
    except (OSError, ValueError) as e:
        raise ProvgateError(f"provgate certify exited {p.returncode} without a readable "
                            f"report: {e}", p.returncode, stderr) from None
    if p.returncode == EXIT_NOT_CERTIFIED or not report.certified:
        raise NotCertified(report, stderr, p.returncode)
    return report


_EXPORT = re.compile(r"^  export ([A-Za-z_][A-Za-z0-9_]*)=(.*?)(?: +# (?:CUDA|ROCm))?$")


def witness_env(dir: PathLike, config: Optional[PathLike] = None) -> Dict[str, str]:
    """The variables that start a service with the dispatch witness writing to ``dir``:
    PROVGATE_WITNESS_DIR and CUDA_INJECTION64_PATH and/or HSA_TOOLS_LIB naming the bundle's
    libprovgate-witness.so (what ``provgate exec --witness DIR`` prints; both loaders when
    neither ``config``'s witness.api nor its arch says which).

    ``os.environ | witness_env(d)`` is the environment to start the service with. Without
    ``config`` no provgate.json is read. Raises ``ConfigError`` for a bad config."""
    d = os.path.abspath(os.fspath(dir))
    env = dict(os.environ)
    tmp = None
    if config is None:
        # exec --witness reads ./provgate.json or $PROVGATE_CONFIG when there is one
        env.pop("PROVGATE_CONFIG", None)
        tmp = tempfile.mkdtemp(prefix="provgate-witness-env.")
    try:
        p = subprocess.run([executable(), "exec", "--no-color", "--witness", d]
                           + _config_args(config), stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp, env=env)
    finally:
        if tmp is not None:
            os.rmdir(tmp)
    stderr = p.stderr.decode("utf-8", "replace")
    # 1: a live service was not started with them; the variables are printed all the same
    if p.returncode not in (0, EXIT_NOT_CERTIFIED):
        raise _failed("exec --witness", p.returncode, stderr)
    found: Dict[str, str] = {}
    for line in p.stdout.decode("utf-8", "surrogateescape").splitlines():
        m = _EXPORT.match(line)
        if m:
            found[m.group(1)] = m.group(2)
    if "PROVGATE_WITNESS_DIR" not in found or len(found) < 2:
        raise ProvgateError("provgate exec --witness printed no variables", p.returncode, stderr)
    return found


class Benchmark:
    """``provgate exec`` around a block of Python code; see ``benchmark``.

    After ``__enter__``: ``before`` is the report written before the block ran (exec.state
    "running", never certified). After the block: ``report`` is the final report, with
    ``after`` (the re-check) and ``exec`` (the block's outcome), and ``exit_status`` is
    provgate exec's exit status."""

    def __init__(self, config: Optional[PathLike], out: Optional[PathLike],
                 junit: Optional[PathLike], run_anyway: bool, keep_going: bool, quiet: bool,
                 args: Sequence[str], label: Optional[Sequence[str]]):
        self.config = config
        self._tmpdir: Optional[str] = None
        self._keep_out = out is not None
        self.out = os.path.abspath(os.fspath(out)) if out is not None else ""
        self._junit = junit
        self._run_anyway = run_anyway
        self._keep_going = keep_going
        self._quiet = quiet
        self._args = list(args)
        self._label = list(label) if label else ([sys.argv[0] or "python"] + sys.argv[1:])
        self._proc: Optional[subprocess.Popen] = None  # type: ignore[type-arg]
        self._status_w = -1
        self._stderr: Optional[IO[bytes]] = None
        self.before: Optional[Report] = None
        self.report: Optional[Report] = None
        self.exit_status: Optional[int] = None

    @property
    def pid(self) -> Optional[int]:
        """provgate exec's process id (signals sent to it reach this process)."""
        return None if self._proc is None else self._proc.pid

    def _stderr_text(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        text = self._stderr.read().decode("utf-8", "replace")
        self._stderr.close()
        self._stderr = None
        if text and not self._quiet:
            sys.stderr.write(text)
            sys.stderr.flush()
        return text

    def _load(self) -> Optional[Report]:
        try:
            return load_report(self.out)
        except (OSError, ReportError):
            return None

    def _close_status(self) -> None:
        if self._status_w >= 0:
            os.close(self._status_w)
            self._status_w = -1

    def _cleanup(self) -> None:
        self._close_status()
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __enter__(self) -> "Benchmark":
        if not self.out:
            self._tmpdir = tempfile.mkdtemp(prefix="provgate-benchmark.")
            self.out = os.path.join(self._tmpdir, "report.json")
        cmd = [executable(), "exec", "--no-color", "--out", self.out] + _config_args(self.config)
        if self._junit is not None:
            cmd += ["--junit", os.fspath(self._junit)]
        if self._run_anyway:
            cmd.append("--run-anyway")
        if self._keep_going:
            cmd.append("--keep-going")
        if self._quiet:
            cmd.append("-q")
        cmd += self._args
        # exec's command: a waiter that stands for this block (provgate._block)
        started_r, started_w = os.pipe()
        status_r, self._status_w = os.pipe()
        block = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_block.py")
        cmd += ["--", sys.executable, "-I", block, "--pid", str(os.getpid()),
                "--fds", f"{status_r},{started_w}", "--"] + self._label
        self._stderr = tempfile.TemporaryFile()
        try:
            # its own session: a ^C at the terminal reaches this process (the block) only;
            # signals sent to provgate reach the block through the waiter
            self._proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL if self._quiet else None, stderr=self._stderr,
                pass_fds=(status_r, started_w), start_new_session=True)
        except BaseException:
            os.close(started_r)
            self._cleanup()
            raise
        finally:
            os.close(status_r)
            os.close(started_w)
        try:
            # a line from the waiter, or the end when provgate exits without running it
            # (provgate holds the pipe open as long as it runs: no read to the end)
            with os.fdopen(started_r, "rb", buffering=0) as f:
                started = f.readline() == b"started\n"
        except BaseException:
            self._proc.terminate()
            self._proc.wait()
            self._stderr_text()
            self._cleanup()
            raise
        if not started:
            # exec did not run the command: not certified, or it could not write the report
            rc = self._proc.wait()
            self.exit_status = rc
            stderr = self._stderr_text()
            self.report = self._load()
            self._cleanup()
            if rc == EXIT_NOT_CERTIFIED and self.report is not None:
                raise NotCertified(self.report, stderr, rc)
            raise _failed("exec", rc, stderr)
        self.before = self._load()
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> bool:
        assert self._proc is not None
        # the block's outcome is the command's exit status: 0, 130 for ^C, the code of a
        # sys.exit(), else 1
        if exc_type is None:
            status = 0
        elif isinstance(exc, KeyboardInterrupt):
            status = 130
        elif isinstance(exc, SystemExit) and isinstance(exc.code, int):
            status = exc.code & 0xFF
        else:
            status = 1
        try:
            os.write(self._status_w, b"%d\n" % status)
        except OSError:
            pass  # provgate is gone: its status says why
        self._close_status()
        rc = self._proc.wait()
        self.exit_status = rc
        stderr = self._stderr_text()
        self.report = self._load()
        self._cleanup()
        if exc_type is not None:
            return False  # the block's own exception; the report is in .report
        if self.report is None:
            raise ProvgateError(f"provgate exec exited {rc} without a readable report "
                                f"{self.out}", rc, stderr)
        if rc == 0 and self.report.certified:
            return False
        ex = self.report.exec
        if rc < 0 or (rc in (EXIT_USAGE, EXIT_INTERNAL) and
                      not (ex is not None and ex.exit_status == rc)):
            raise _failed("exec", rc, stderr)  # provgate's own failure, not the block's
        raise NotCertified(self.report, stderr, rc)


def benchmark(config: Optional[PathLike] = None, *, out: Optional[PathLike] = None,
              junit: Optional[PathLike] = None, run_anyway: bool = False,
              keep_going: bool = False, quiet: bool = False, args: Sequence[str] = (),
              label: Optional[Sequence[str]] = None) -> Benchmark:
    """``provgate exec`` around a block of Python benchmark code::

        with provgate.benchmark("provgate.json", out="report.json") as run:
            results = run_my_benchmark()
        print(run.report.certified)

    On entry provgate certifies (all seven gates) and writes ``out`` ("state": "running");
    the block runs only when the chain is certified (``NotCertified`` is raised otherwise,
    unless ``run_anyway``). After the block it re-checks gates 3, 4, 5 and 7 and writes the
    final report, exactly as ``provgate exec -- CMD`` does: exec's command is a small waiter
    (provgate/_block.py, its argv ends with ``label``, default ``sys.argv``) that stands for
    the block and exits with the block's status (0; 130 for KeyboardInterrupt; a
    ``SystemExit`` code; else 1). Signals sent to provgate reach this process.

    On leaving, ``NotCertified`` is raised when the re-check failed; an exception of the
    block itself propagates unchanged, with the report (never certified) in ``run.report``.
    Without ``out`` the report lives in a temporary folder, removed at the end."""
    return Benchmark(config, out, junit, run_anyway, keep_going, quiet, args, label)
