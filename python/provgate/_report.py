# SPDX-License-Identifier: MIT
"""A typed view of provgate's JSON report (lib/report.schema.json, "provgate.report/1").

Every class keeps what provgate wrote: the typed fields are read from it, ``raw`` holds the
whole object for what has no field here (``evidence``, ``environment``, ...). The report's
64-bit quantities are strings in JSON; here they are ints (None where the report has null).
Reports of older provgate versions lack some fields: those read as None or empty.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Union

__all__ = [
    "Problem", "Gate", "BuildFile", "InstalledFile", "Process", "Markers", "Witness",
    "Artifact", "Chain", "Tool", "Host", "ConfigRef", "ExecInfo", "Report", "load_report",
    "report_from_dict", "ReportError",
]

REPORT_SCHEMA = "provgate.report/1"
#: gate statuses (SPEC §2)
STATUSES = ("pass", "fail", "unverifiable", "blocked", "skipped")


class ReportError(ValueError):
    """The JSON is not a provgate report (wrong schema, or a field of the wrong type)."""


def _obj(v: Any, what: str) -> Dict[str, Any]:
    if not isinstance(v, dict):
        raise ReportError(f"{what}: expected an object, got {type(v).__name__}")
    return v


def _opt_obj(v: Any, what: str) -> Optional[Dict[str, Any]]:
    return None if v is None else _obj(v, what)


def _list(v: Any, what: str) -> List[Any]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise ReportError(f"{what}: expected an array, got {type(v).__name__}")
    return v


def _str(v: Any, what: str) -> Optional[str]:
    if v is None or isinstance(v, str):
        return v
    raise ReportError(f"{what}: expected a string, got {type(v).__name__}")


def _int(v: Any, what: str) -> Optional[int]:
    """An integer, or one of the report's 64-bit quantities written as a decimal string."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise ReportError(f"{what}: expected a number, got a boolean")
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.isdigit():
        return int(v)
    raise ReportError(f"{what}: expected a number, got {v!r}")


def _bool(v: Any, what: str) -> Optional[bool]:
    if v is None or isinstance(v, bool):
        return v
    raise ReportError(f"{what}: expected true or false, got {v!r}")


@dataclass(frozen=True)
class Problem:
    """One problem of a gate: a stable dotted code (``artifact-hash.differs``), what was seen
    and what to do."""
    code: str
    message: str
    hint: Optional[str] = None

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True)
class Gate:
    """One of the seven gates, in the chain's order (SPEC §2)."""
    id: int
    name: str
    status: str  #: pass, fail, unverifiable, blocked or skipped
    summary: str
    problems: List[Problem] = field(default_factory=list)
    evidence: Dict[str, Any] = field(default_factory=dict)
    elapsed_ms: Optional[str] = None

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def __str__(self) -> str:
        return f"gate {self.id} {self.name} {self.status}"


@dataclass(frozen=True)
class BuildFile:
    path: str
    sha256: Optional[str]
    size: Optional[int]


@dataclass(frozen=True)
class InstalledFile:
    path: str
    sha256: Optional[str]
    dev: Optional[int]
    inode: Optional[int]
    size: Optional[int] = None


@dataclass(frozen=True)
class Process:
    """A target process of gate 4, as provgate found it."""
    pid: int
    start_time: Optional[str]
    maps_path: Optional[str]
    installed_path: Optional[str] = None
    host_path: Optional[str] = None
    ns_pid: Optional[int] = None


@dataclass(frozen=True)
class Markers:
    matched: int
    unattributed: int


@dataclass(frozen=True)
class Witness:
    live_files: int
    required_met: int
    required: int
    forbidden_seen: int


@dataclass(frozen=True)
class Artifact:
    name: str
    build: Optional[BuildFile]
    installed: Optional[InstalledFile]
    processes: List[Process] = field(default_factory=list)


@dataclass(frozen=True)
class Chain:
    """The chain's identities: the build and installed artifact (the first one's, with
    several), the processes that map it, what gate 7 counted."""
    build: Optional[BuildFile]
    installed: Optional[InstalledFile]
    processes: List[Process]
    markers: Optional[Markers]
    witness: Optional[Witness] = None
    artifacts: List[Artifact] = field(default_factory=list)


@dataclass(frozen=True)
class Tool:
    name: str
    version: str


@dataclass(frozen=True)
class Host:
    hostname: Optional[str]
    kernel: Optional[str]
    node: Optional[str] = None


@dataclass(frozen=True)
class ConfigRef:
    path: Optional[str]
    sha256: Optional[str]


@dataclass(frozen=True)
class ExecInfo:
    """What became of the command of ``provgate exec`` (the benchmark)."""
    command: List[str]
    ran: bool
    state: Optional[str] = None  #: running (the report written before it) or finished
    outcome: Optional[str] = None  #: not-run, not-started, succeeded or failed
    exit_status: Optional[int] = None
    signal: Optional[int] = None
    started_at: Optional[str] = None
    duration_s: Optional[str] = None
    error: Optional[str] = None


@dataclass(frozen=True)
class Report:
    """A provgate report. ``certified`` is the verdict; in an exec report it also needs the
    benchmark to have run and exited 0, while ``provenance_certified`` is the chain alone."""
    schema: str
    tool: Optional[Tool]
    name: Optional[str]
    phase: str
    started_at: str
    host: Host
    config: ConfigRef
    certified: bool
    provenance_certified: Optional[bool]
    gates: List[Gate]
    chain: Chain
    after: Optional[List[Gate]] = None  #: exec's re-check after the command
    exec: Optional[ExecInfo] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def gate(self, ident: Union[int, str]) -> Gate:
        """The gate with this id (1-7) or name (``artifact-hash``)."""
        for g in self.gates:
            if g.id == ident or g.name == ident:
                return g
        raise KeyError(ident)

    @property
    def not_passed(self) -> List[Gate]:
        """The gates of the certification that were selected and did not pass."""
        return [g for g in self.gates if g.status not in ("pass", "skipped")]

    @property
    def not_passed_after(self) -> List[Gate]:
        """The gates of exec's after-check that were re-checked and did not pass."""
        return [g for g in self.after or [] if g.status not in ("pass", "skipped")]

    @property
    def problems(self) -> List[Problem]:
        """Every problem, of the certification and then of the after-check."""
        return [p for g in list(self.gates) + list(self.after or []) for p in g.problems]


def _problem(v: Any, what: str) -> Problem:
    o = _obj(v, what)
    return Problem(code=_str(o.get("code"), what + ".code") or "",
                   message=_str(o.get("message"), what + ".message") or "",
                   hint=_str(o.get("hint"), what + ".hint"))


def _gates(v: Any, what: str) -> List[Gate]:
    gates = []
    for i, g in enumerate(_list(v, what)):
        w = f"{what}[{i}]"
        o = _obj(g, w)
        status = _str(o.get("status"), w + ".status")
        if status not in STATUSES:
            raise ReportError(f"{w}.status: {status!r} is not a status")
        gid = _int(o.get("id"), w + ".id")
        if gid is None:
            raise ReportError(f"{w}.id: missing")
        gates.append(Gate(
            id=gid, name=_str(o.get("name"), w + ".name") or "", status=status,
            summary=_str(o.get("summary"), w + ".summary") or "",
            problems=[_problem(p, f"{w}.problems[{j}]")
                      for j, p in enumerate(_list(o.get("problems"), w + ".problems"))],
            evidence=_obj(o.get("evidence", {}), w + ".evidence"),
            elapsed_ms=_str(o.get("elapsed_ms"), w + ".elapsed_ms")))
    return gates


def _build(v: Any, what: str) -> Optional[BuildFile]:
    o = _opt_obj(v, what)
    if o is None:
        return None
    return BuildFile(path=_str(o.get("path"), what + ".path") or "",
                     sha256=_str(o.get("sha256"), what + ".sha256"),
                     size=_int(o.get("size"), what + ".size"))


def _installed(v: Any, what: str) -> Optional[InstalledFile]:
    o = _opt_obj(v, what)
    if o is None:
        return None
    return InstalledFile(path=_str(o.get("path"), what + ".path") or "",
                         sha256=_str(o.get("sha256"), what + ".sha256"),
                         dev=_int(o.get("dev"), what + ".dev"),
                         inode=_int(o.get("inode"), what + ".inode"),
                         size=_int(o.get("size"), what + ".size"))


def _processes(v: Any, what: str) -> List[Process]:
    procs = []
    for i, p in enumerate(_list(v, what)):
        w = f"{what}[{i}]"
        o = _opt_obj(p, w)
        if o is None:
            continue
        pid = _int(o.get("pid"), w + ".pid")
        if pid is None:
            raise ReportError(f"{w}.pid: missing")
        procs.append(Process(pid=pid, start_time=_str(o.get("start_time"), w + ".start_time"),
                             maps_path=_str(o.get("maps_path"), w + ".maps_path"),
                             installed_path=_str(o.get("installed_path"), w + ".installed_path"),
                             host_path=_str(o.get("host_path"), w + ".host_path"),
                             ns_pid=_int(o.get("ns_pid"), w + ".ns_pid")))
    return procs


def _chain(v: Any) -> Chain:
    o = _obj(v, "chain")
    m = _opt_obj(o.get("markers"), "chain.markers")
    w = _opt_obj(o.get("witness"), "chain.witness")
    artifacts = []
    for i, a in enumerate(_list(o.get("artifacts"), "chain.artifacts")):
        wa = f"chain.artifacts[{i}]"
        ao = _obj(a, wa)
        artifacts.append(Artifact(name=_str(ao.get("name"), wa + ".name") or "",
                                  build=_build(ao.get("build"), wa + ".build"),
                                  installed=_installed(ao.get("installed"), wa + ".installed"),
                                  processes=_processes(ao.get("processes"), wa + ".processes")))
    return Chain(
        build=_build(o.get("build"), "chain.build"),
        installed=_installed(o.get("installed"), "chain.installed"),
        processes=_processes(o.get("processes"), "chain.processes"),
        markers=None if m is None else Markers(
            matched=_int(m.get("matched"), "chain.markers.matched") or 0,
            unattributed=_int(m.get("unattributed"), "chain.markers.unattributed") or 0),
        witness=None if w is None else Witness(
            live_files=_int(w.get("live_files"), "chain.witness.live_files") or 0,
            required_met=_int(w.get("required_met"), "chain.witness.required_met") or 0,
            required=_int(w.get("required"), "chain.witness.required") or 0,
            forbidden_seen=_int(w.get("forbidden_seen"), "chain.witness.forbidden_seen") or 0),
        artifacts=artifacts)


def _exec(v: Any) -> Optional[ExecInfo]:
    o = _opt_obj(v, "exec")
    if o is None:
        return None
    return ExecInfo(
        command=[_str(c, "exec.command[]") or "" for c in _list(o.get("command"), "exec.command")],
        ran=bool(_bool(o.get("ran"), "exec.ran")),
        state=_str(o.get("state"), "exec.state"),
        outcome=_str(o.get("outcome"), "exec.outcome"),
        exit_status=_int(o.get("exit_status"), "exec.exit_status"),
        signal=_int(o.get("signal"), "exec.signal"),
        started_at=_str(o.get("started_at"), "exec.started_at"),
        duration_s=_str(o.get("duration_s"), "exec.duration_s"),
        error=_str(o.get("error"), "exec.error"))


def report_from_dict(data: Mapping[str, Any]) -> Report:
    """The typed view of a report already parsed from JSON."""
    o = _obj(data, "report")
    if o.get("schema") != REPORT_SCHEMA:
        raise ReportError(f"not a provgate report: schema is {o.get('schema')!r}, "
                          f"not {REPORT_SCHEMA!r}")
    tool = _opt_obj(o.get("tool"), "tool")
    host = _obj(o.get("host", {}), "host")
    cfg = _obj(o.get("config", {}), "config")
    certified = _bool(o.get("certified"), "certified")
    if certified is None:
        raise ReportError("certified: missing")
    after = _opt_obj(o.get("after"), "after")
    return Report(
        schema=REPORT_SCHEMA,
        tool=None if tool is None else Tool(name=_str(tool.get("name"), "tool.name") or "",
                                            version=_str(tool.get("version"), "tool.version") or ""),
        name=_str(o.get("name"), "name"),
        phase=_str(o.get("phase"), "phase") or "",
        started_at=_str(o.get("started_at"), "started_at") or "",
        host=Host(hostname=_str(host.get("hostname"), "host.hostname"),
                  kernel=_str(host.get("kernel"), "host.kernel"),
                  node=_str(host.get("node"), "host.node")),
        config=ConfigRef(path=_str(cfg.get("path"), "config.path"),
                         sha256=_str(cfg.get("sha256"), "config.sha256")),
        certified=certified,
        provenance_certified=_bool(o.get("provenance_certified"), "provenance_certified"),
        gates=_gates(o.get("gates"), "gates"),
        chain=_chain(o.get("chain", {})),
        after=None if after is None else _gates(after.get("gates"), "after.gates"),
        exec=_exec(o.get("exec")),
        raw=dict(o))


def load_report(path: Union[str, "os.PathLike[str]"]) -> Report:
    """Reads a report that provgate wrote (``--json FILE``, ``--out FILE``).

    Raises ``ReportError`` when the file is not a provgate report, ``OSError`` when it cannot
    be read."""
    with open(path, "rb") as f:
        try:
            data = json.load(f)
        except ValueError as e:
            raise ReportError(f"{os.fspath(path)}: not JSON: {e}") from None
    return report_from_dict(data)
