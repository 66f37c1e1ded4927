# SPDX-License-Identifier: MIT
"""The installed wheel's Python API against the demo's live chain (tests/demo/scenario.sh).

Run by tests/scenario/t-wheel.sh with the interpreter of a venv the wheel was installed
into (Debian 12's Python 3.11 on the host and in a container, Debian 11's Python 3.9 in a container):
    PVG_DEMO_CONFIG=.../provgate.json PVG_VERSION=0.1.0 VENV/bin/python -m pytest THIS_FILE
The chain is certified at the start. The tests run in the file's order: the last ones break
a link (the installed file changes) and need it broken, so it is broken once, on purpose,
by the benchmark test that shows the re-check catching it.
"""
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import provgate

CONFIG = os.environ["PVG_DEMO_CONFIG"]
DEMO = os.path.dirname(CONFIG)
VERSION = os.environ["PVG_VERSION"]
with open(CONFIG) as _f:
    INSTALLED = os.path.join(DEMO, json.load(_f)["install"]["artifact"])


def engine_pid():
    with open(os.path.join(DEMO, "run", "engine.pid")) as f:
        return int(f.read())


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def cli(*args, cwd=None):
    return subprocess.run([provgate.executable()] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, cwd=cwd)


# ---- the package as installed ----------------------------------------------------------------

def test_package_is_the_installed_wheel():
    assert provgate.__version__ == VERSION
    here = os.path.dirname(provgate.__file__)
    assert os.path.basename(os.path.dirname(here)) == "site-packages"
    assert provgate.bundle_root() == os.path.join(here, "_bundle")
    assert os.access(provgate.executable(), os.X_OK)
    assert os.path.isfile(os.path.join(here, "py.typed"))


def test_console_script_and_module_are_the_bundles_provgate():
    script = os.path.join(os.path.dirname(sys.executable), "provgate")
    for argv in ([script], [sys.executable, "-m", "provgate"]):
        p = subprocess.run(argv + ["--version"], stdout=subprocess.PIPE, universal_newlines=True)
        assert p.returncode == 0
        assert p.stdout.splitlines()[0] == "provgate " + VERSION
        assert "running from the bundle at " + provgate.bundle_root() in p.stdout
        # the exit status passes through: 2 for a config that cannot be read
        p = subprocess.run(argv + ["certify", "-c", "/nonexistent/provgate.json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        assert p.returncode == 2, p.stderr
        assert "/nonexistent/provgate.json" in p.stderr


# ---- certify and reports ---------------------------------------------------------------------

def test_certify_returns_the_typed_report():
    r = provgate.certify(CONFIG)
    assert isinstance(r, provgate.Report)
    assert r.certified is True and r.provenance_certified is True
    assert r.phase == "live" and r.tool is not None and r.tool.version == VERSION
    assert [(g.id, g.name, g.status) for g in r.gates] == [
        (1, "build-log", "pass"), (2, "install-scope", "pass"), (3, "artifact-hash", "pass"),
        (4, "process-maps", "pass"), (5, "stale-service", "pass"), (6, "code-object", "pass"),
        (7, "dispatch-marker", "pass")]
    assert all(isinstance(g, provgate.Gate) and g.problems == [] for g in r.gates)
    assert r.gate("artifact-hash") is r.gates[2] and r.gate(7).name == "dispatch-marker"
    inst = r.chain.installed
    assert inst is not None and os.path.samefile(inst.path, INSTALLED)
    st = os.stat(INSTALLED)
    assert (inst.sha256, inst.inode, inst.dev) == (sha256(INSTALLED), st.st_ino, st.st_dev)
    assert r.chain.build is not None and r.chain.build.size == st.st_size
    assert engine_pid() in [p.pid for p in r.chain.processes]
    assert r.chain.markers is not None and r.chain.markers.matched >= 1
    assert r.after is None and r.exec is None
    assert r.config.sha256 == sha256(CONFIG)


def test_certify_out_file_reads_back_the_same(tmp_path):
    out = tmp_path / "r.json"
    junit = tmp_path / "r.xml"
    r = provgate.certify(CONFIG, out=out, junit=junit)
    assert junit.read_text().lstrip().startswith("<?xml")
    again = provgate.load_report(out)
    assert again == r
    with open(out) as f:
        assert again.raw == json.load(f)


def test_load_report_refuses_what_is_not_a_report(tmp_path):
    (tmp_path / "other.json").write_text('{"schema": "provgate.compare/1"}')
    with pytest.raises(provgate.ReportError, match="provgate.compare/1"):
        provgate.load_report(tmp_path / "other.json")
    (tmp_path / "cut.json").write_text('{"schema": "provgate.report/1", "gates": [')
    with pytest.raises(provgate.ReportError, match="not JSON"):
        provgate.load_report(tmp_path / "cut.json")
    (tmp_path / "bad.json").write_text(
        '{"schema": "provgate.report/1", "certified": "yes", "gates": []}')
    with pytest.raises(provgate.ReportError, match="certified"):
        provgate.load_report(tmp_path / "bad.json")


def test_config_provgate_refuses_is_a_config_error(tmp_path):
    with open(CONFIG) as f:
        cfg = json.load(f)
    cfg["servcie"] = cfg.pop("service")
    bad = tmp_path / "provgate.json"
    bad.write_text(json.dumps(cfg))
    with pytest.raises(provgate.ConfigError) as e:
        provgate.certify(bad)
    assert e.value.exit_status == 2
    assert "servcie" in str(e.value)


def test_witness_env_is_what_exec_witness_prints(tmp_path):
    env = provgate.witness_env(tmp_path)
    lib = provgate.witness_library()
    assert os.path.isfile(lib)
    assert env == {"PROVGATE_WITNESS_DIR": str(tmp_path), "CUDA_INJECTION64_PATH": lib,
                   "HSA_TOOLS_LIB": lib}
    # (in a folder without a provgate.json, as witness_env without a config)
    printed = cli("exec", "--witness", str(tmp_path), cwd=str(tmp_path)).stdout
    for k, v in env.items():
        assert "export %s=%s" % (k, v) in printed
    # the demo's arch (gfx90a) says ROCm: HSA_TOOLS_LIB alone
    assert provgate.witness_env(tmp_path, config=CONFIG) == {
        "PROVGATE_WITNESS_DIR": str(tmp_path), "HSA_TOOLS_LIB": lib}


# ---- benchmark(): exec around Python code ------------------------------------------------------

def shape(rep):
    """What a report is made of, without the values that differ between two runs."""
    return {"keys": sorted(rep.raw), "exec": sorted(rep.raw["exec"]),
            "gates": [(g.id, g.status) for g in rep.gates],
            "after": [(g.id, g.status) for g in rep.after or []],
            "after_selected": rep.raw["after"]["selected_gates"],
            "verdict": (rep.certified, rep.provenance_certified, rep.exec.outcome,
                        rep.exec.exit_status)}


def test_benchmark_writes_the_report_exec_writes(tmp_path):
    out = tmp_path / "bench.json"
    ran = []
    with provgate.benchmark(CONFIG, out=out, label=["my-bench", "--n", "3"]) as run:
        # the block runs after the certification, whose report is already written
        assert run.before is not None and run.before.exec.state == "running"
        assert run.before.certified is False  # never, while the benchmark runs
        assert [g.status for g in run.before.gates] == ["pass"] * 7
        assert provgate.load_report(out).exec.state == "running"
        ran.append(True)
    assert ran == [True]
    rep = run.report
    assert rep is not None and rep.certified and run.exit_status == 0
    assert rep.exec.state == "finished" and rep.exec.outcome == "succeeded" and rep.exec.ran
    assert rep.exec.command[-4:] == ["--", "my-bench", "--n", "3"]
    assert [(g.id, g.status) for g in rep.after if g.status != "skipped"] == [
        (3, "pass"), (4, "pass"), (5, "pass"), (7, "pass")]
    assert provgate.load_report(out) == rep
    # provgate exec -- CMD on the same chain: the same report
    cmd_out = tmp_path / "cmd.json"
    p = cli("exec", "-c", CONFIG, "--out", str(cmd_out), "--", "true")
    assert p.returncode == 0, p.stdout + p.stderr
    assert shape(provgate.load_report(cmd_out)) == shape(rep)


def test_benchmark_keeps_the_exception_of_the_block(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with provgate.benchmark(CONFIG, quiet=True) as run:
            1 / 0
    rep = run.report
    assert rep is not None and not rep.certified and rep.provenance_certified
    assert (rep.exec.outcome, rep.exec.exit_status, run.exit_status) == ("failed", 1, 1)
    assert [g.status for g in rep.after if g.status != "skipped"] == ["pass"] * 4
    # without out, the report's temporary folder is gone
    assert not os.path.exists(run.out)


def test_benchmark_signals_sent_to_provgate_reach_the_block():
    got = []
    old = signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
    try:
        with provgate.benchmark(CONFIG, quiet=True) as run:
            os.kill(run.pid, signal.SIGUSR1)
            deadline = time.monotonic() + 10
            while not got and time.monotonic() < deadline:
                time.sleep(0.01)
    finally:
        signal.signal(signal.SIGUSR1, old)
    assert got == [signal.SIGUSR1]
    assert run.report is not None and run.report.certified


# ---- a broken link (from here on the chain stays broken) ---------------------------------------

def test_benchmark_recheck_catches_the_installed_file_changed_during_the_block(tmp_path):
    before = sha256(INSTALLED)
    with pytest.raises(provgate.NotCertified) as e:
        with provgate.benchmark(CONFIG, out=tmp_path / "b.json", quiet=True):
            with open(INSTALLED, "ab") as f:  # in place: same inode, other bytes
                f.write(b"\0")
    assert sha256(INSTALLED) != before
    nc = e.value
    assert nc.gates == [] and nc.report.provenance_certified is False
    assert nc.report.exec.outcome == "succeeded" and nc.exit_status == 1
    failed = {g.name: g for g in nc.after_gates}
    assert failed["artifact-hash"].status == "fail"
    assert any(p.code.startswith("artifact-hash.") for p in failed["artifact-hash"].problems)
    assert "after the benchmark: gate 3 artifact-hash fail" in str(nc)


def test_certify_raises_not_certified_with_the_failing_gates():
    with pytest.raises(provgate.NotCertified) as e:
        provgate.certify(CONFIG)
    nc = e.value
    assert nc.report.certified is False and nc.exit_status == 1
    assert nc.gates[0].id == 3 and nc.gates[0].status == "fail"
    assert [g.status for g in nc.gates[1:]] == ["blocked"] * (len(nc.gates) - 1)
    assert nc.problems and all(p.code.startswith("artifact-hash.") for p in nc.problems)
    assert str(nc).startswith("not certified: gate 3 artifact-hash fail (artifact-hash.")


def test_benchmark_does_not_run_the_block_on_a_broken_chain(tmp_path):
    ran = []
    with pytest.raises(provgate.NotCertified) as e:
        with provgate.benchmark(CONFIG, out=tmp_path / "b.json", quiet=True):
            ran.append(True)
    assert ran == []
    assert e.value.report.exec.outcome == "not-run"
    assert e.value.gates[0].name == "artifact-hash"
