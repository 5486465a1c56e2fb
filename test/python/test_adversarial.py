"""What a careless or unlucky user does to the tools (issue 20, items 2-7): nothing lost,
no wrong result, no hang, no orphan process, no traceback. Each test names its item."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import numpy as np
import pytest

from conftest import CPU_FLAGS, HERE, tool
from iree_fusions.harness import api
from iree_fusions.runtime.manifest import FORMAT, BundleError, load_manifest
from iree_fusions.compiler import files
from iree_fusions.tools import shim
from iree_fusions.tools import shim_folder as shim_files  # (a fixture is named shim_folder)
from iree_fusions.harness.bundle import BundleWriter
from iree_fusions.tools.crash import PluginArgs, describe_crash
from iree_fusions.compiler.decisions import Decider, DecisionsError, DecisionSet, Decision
from iree_fusions.compiler.pass_base import PassOptionError
from iree_fusions.compiler.pipeline import PipelineError, parse_options, parse_pipeline
from iree_fusions.compiler.registry import lookup
from iree_fusions.compiler.target import Target

GOOD = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
BAD = "func.func @main() {\n  %0 = foo.bar : i32\n}\n"
# Line 6 of the file is line 2 of the second chunk.
SPLIT = "func.func @a() {\n  return\n}\n// -----\nfunc.func @b() {\n  %0 = foo.bar : i32\n}\n"
HANGING_PASS = """
import sys
import time
from dataclasses import dataclass
from iree_fusions.compiler.pass_base import FusionPass
from iree_fusions.compiler.registry import register

@register
@dataclass(frozen=True)
class Hang(FusionPass):
    name = "test-hang"
    phase = "linalg"
    description = "sleeps (a pass that never returns)"

    def run(self, module, ctx):
        print(ENTERED, file=sys.stderr, flush=True)  # the test waits for this line
        time.sleep(600)
""".replace("ENTERED", repr("test-hang: entered"))
ENTERED = "test-hang: entered"
# A guard against a hang, not a speed check: no test asserts how long a command took (a loaded
# machine may be slow); a command that never ends fails its test after this long.
LIMIT = 600


def _run(cmd, **kw):
    kw.setdefault("timeout", LIMIT)
    res = subprocess.run(cmd, capture_output=True, text=True, errors="replace", **kw)
    assert "Traceback" not in res.stderr, res.stderr
    return res


def _compile(*args, **kw):
    return _run([tool("iree-fusions-compile"), *map(str, args), *CPU_FLAGS], **kw)


def _one_error_line(stderr: str, prog: str = "iree-fusions-compile") -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), stderr
    return lines[0]


def _no_temp_files(folder) -> None:
    left = [n for n in os.listdir(folder) if n.endswith(".tmp") or n.startswith(".partial-")]
    assert not left, left


@pytest.fixture
def good(tmp_path):
    p = tmp_path / "good.mlir"
    p.write_text(GOOD)
    return p


@pytest.fixture
def bad(tmp_path):
    p = tmp_path / "bad.mlir"
    p.write_text(BAD)
    return p


@pytest.fixture
def hang_module(tmp_path, monkeypatch):
    """A top-level module registering `test-hang`, importable by the tools started from the
    test; its name is the test's own (`hang_pass_<hex>`), so a process whose command line
    names it is one of this test's."""
    name = f"hang_pass_{uuid.uuid4().hex[:12]}"
    (tmp_path / f"{name}.py").write_text(HANGING_PASS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(tmp_path), HERE, *filter(None, [os.environ.get("PYTHONPATH")])]))
    return name


def _wait_until_entered(proc: subprocess.Popen) -> None:
    """Reads the tool's stderr up to the hanging pass's own line: the compile child is then
    inside the pass (an event, not a sleep)."""
    for line in proc.stderr:
        if line.strip() == ENTERED:
            return
    raise AssertionError(f"the tool ended before the pass ran (exit {proc.wait()})")


# ---------------------------------------------------------------- item 2: data loss


def test_item2_failed_opt_leaves_the_output_as_it_was(bad, tmp_path):
    out = tmp_path / "existing.txt"
    out.write_text("precious")
    res = _run([tool("iree-fusions-opt"), str(bad), "-p", "cse", "-o", str(out)])
    assert res.returncode == 1 and out.read_text() == "precious"
    _no_temp_files(tmp_path)


def test_item2_editing_in_place_with_a_failing_pass_keeps_the_input(good, support_on_path):
    res = _run([tool("iree-fusions-opt"), str(good), "--fusions-load=support.extra_passes",
                "-p", "test-raise", "-o", str(good)])
    assert res.returncode == 1 and "deliberate failure" in res.stderr
    assert good.read_text() == GOOD
    # and a pipeline that works replaces the file whole, keeping its mode
    good.chmod(0o640)
    res = _run([tool("iree-fusions-opt"), str(good), "-p", "cse", "-o", str(good)])
    assert res.returncode == 0 and "arith.addf" in good.read_text()
    assert good.stat().st_mode & 0o777 == 0o640


def test_item2_failed_compile_writes_no_output_and_no_report(bad, good, tmp_path):
    out, report = tmp_path / "m.vmfb", tmp_path / "old.json"
    out.write_bytes(b"old vmfb")
    report.write_text("[1]")
    res = _compile(bad, "-o", out, f"--fusions-report-json={report}")
    assert res.returncode == 1
    assert out.read_bytes() == b"old vmfb" and report.read_text() == "[1]"
    # A compile that fails after IREE wrote the .vmfb (the report cannot be written) leaves
    # no new output either.
    res = _compile(good, "-o", tmp_path / "new.vmfb", "--fusions=none",
                   "--fusions-report-json=/dev/full")
    assert res.returncode == 1
    assert "cannot write output file '/dev/full': No space left on device" in \
        _one_error_line(res.stderr)
    assert not (tmp_path / "new.vmfb").exists()
    _no_temp_files(tmp_path)


def test_item2_output_set_replaces_whole_files_only():
    """The writer itself: links are followed, modes kept, and an exception leaves every
    target as it was (leftovers of killed runs: test_outputs.py)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        real, link = os.path.join(d, "real"), os.path.join(d, "link")
        with open(real, "w") as f:
            f.write("old")
        os.chmod(real, 0o600)
        os.symlink(real, link)
        with pytest.raises(RuntimeError):
            with files.OutputSet() as outs:
                outs.write(link, "new")
                raise RuntimeError("the command failed")
        assert open(real).read() == "old"
        files.write_file(link, "new")
        assert os.path.islink(link) and open(real).read() == "new"
        assert os.stat(real).st_mode & 0o777 == 0o600
        assert sorted(os.listdir(d)) == ["link", "real"]


def _add(writer: BundleWriter, name: str, tag: int) -> None:
    writer.add(name, inputs=[np.full(3, tag, np.float32)], stock_vmfb=b"S%d" % tag,
               plugin_vmfb=b"P%d" % tag, stock={"dispatches": 2}, plugin={"dispatches": 1})


def _on_disk(folder) -> dict:
    """The manifest's models, each checked complete on disk: name -> the stock .vmfb."""
    manifest = load_manifest(str(folder))
    out = {}
    for m in manifest["models"]:
        here = folder / m["dir"]
        for name in [*m["inputs"], m["stock"]["vmfb"], m["plugin"]["vmfb"]]:
            assert (here / name).is_file(), (m, name)
        out[m["name"]] = (here / m["stock"]["vmfb"]).read_bytes()
    return out


def test_item2_exporting_into_a_bundle_keeps_its_other_models(tmp_path, monkeypatch):
    folder = tmp_path / "b"
    w = BundleWriter(str(folder), device="local-task", target=None, fusions="all")
    _add(w, "a", 1)
    _add(w, "b", 2)
    # A second export of one model: the other stays; the model is replaced in place.
    w2 = BundleWriter(str(folder), device="local-task", target=None, fusions="all")
    _add(w2, "a", 3)
    assert _on_disk(folder) == {"a": b"S3", "b": b"S2"}
    # Interrupted while writing a model: the manifest still lists what is on disk.
    w3 = BundleWriter(str(folder), device="local-task", target=None, fusions="all")

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _add(w3, "b", 4)
    monkeypatch.undo()
    assert _on_disk(folder) == {"a": b"S3", "b": b"S2"}
    _no_temp_files(folder)
    # only listed model folders remain
    listed = {m["dir"] for m in load_manifest(str(folder))["models"]}
    assert {p.name for p in folder.iterdir() if p.is_dir()} == listed


def test_item2_an_export_refuses_a_folder_it_would_spoil(tmp_path):
    other = tmp_path / "home"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(BundleError, match="not empty and holds no bundle"):
        BundleWriter(str(other), device="local-task", target=None, fusions="all")
    folder = tmp_path / "b"
    _add(BundleWriter(str(folder), device="local-task", target=None, fusions="all"), "a", 1)
    with pytest.raises(BundleError, match="holds a bundle for device local-task"):
        BundleWriter(str(folder), device="cuda", target=None, fusions="all")


def test_item2_an_empty_bundle_is_an_error(tmp_path):
    folder = tmp_path / "b"
    w = BundleWriter(str(folder), device="local-task", target=None, fusions="all")
    assert not folder.exists()  # an export that adds nothing writes nothing
    _add(w, "a", 1)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["models"] = []
    (folder / "manifest.json").write_text(json.dumps(manifest))
    res = _run([tool("iree-fusions-bench"), "--from", str(folder), "--rounds=0"])
    assert res.returncode == 2
    assert "the bundle holds no models" in _one_error_line(res.stderr, "iree-fusions-bench")
    res = _run([sys.executable, str(folder / "run_bundle.py"), "--rounds=0"])
    assert res.returncode == 2 and "holds no models" in res.stderr


# ---------------------------------------------------------------- item 3: the shim


@pytest.fixture
def shim_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(shim.ENV_DIR, str(tmp_path / "shim"))
    return shim.shim_dir()


@pytest.mark.parametrize("args", [["--version"], ["--iree-hal-list-target-backends"],
                                  ["--compile-mode=hal-executable", "{good}", "-o", "/dev/null"]])
def test_item3_hand_off_to_iree_compile_never_finds_the_shim(shim_folder, good, args):
    env = {**os.environ, "IREE_TOOL_PATH": shim_folder}
    res = subprocess.run([tool("iree-fusions-compile"), *[a.replace("{good}", str(good))
                                                          for a in args]],
                         capture_output=True, text=True, env=env, timeout=LIMIT)
    assert "Traceback" not in res.stderr and "called by itself" not in res.stderr
    if args[0] != "--compile-mode=hal-executable":  # (that mode rejects a plain module)
        assert res.returncode == 0 and res.stdout.strip()
    assert shim.real_iree_compile().endswith(os.path.join("_mlir_libs", "iree-compile"))


def test_item3_stock_compiles_of_the_api_bypass_the_shim(shim_folder, good, monkeypatch):
    plain = api.compile_file(str(good), stock=True).output
    monkeypatch.setenv("IREE_TOOL_PATH", shim_folder)
    assert api.compile_file(str(good), stock=True).output == plain
    assert api.compile_file(str(good), stock=True).command[0] == shim.real_iree_compile()


def test_item3_the_shim_folder_appears_complete(tmp_path, monkeypatch):
    """The script is written before the folder exists under its name (a compile looking it up
    meanwhile finds no folder, never an empty one); a stale script is replaced in place."""
    folder = tmp_path / "shim"
    monkeypatch.setenv(shim.ENV_DIR, str(folder))
    seen = []
    real_write = shim_files._write_script
    monkeypatch.setattr(shim_files, "_write_script",
                        lambda where, text: (seen.append(folder.exists()),
                                             real_write(where, text)))
    assert shim.shim_dir() == str(folder)
    assert seen == [False] and os.access(folder / "iree-compile", os.X_OK)
    (folder / "iree-compile").write_text("#!/bin/sh\nexit 1\n")
    assert shim.shim_dir() == str(folder)
    assert (folder / "iree-compile").read_text() == shim.script_text()
    assert sorted(os.listdir(tmp_path)) == ["shim"]  # no temporary folder left


def test_item3_bad_shim_flags_are_one_error_line(monkeypatch, capsys):
    monkeypatch.setenv(shim.ENV_FLAGS, '--fusions-report "unterminated')
    monkeypatch.setenv(shim.ENV_PASSES, "all")
    assert shim.main(["x.mlir"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("iree-compile (iree-fusions shim): error: IREE_FUSIONS_FLAGS: No "
                          "closing quotation")
    monkeypatch.setenv("IREE_FUSIONS_IN_SHIM", "1")  # entered from itself: stops at once
    monkeypatch.delenv(shim.ENV_FLAGS)
    assert shim.main(["x.mlir"]) == 2
    assert "called by itself" in capsys.readouterr().err


# ---------------------------------------------------------------- item 4: hangs, memory


def _feed_fifo(path, data: bytes) -> threading.Thread:
    os.mkfifo(path)

    def write():
        with open(path, "wb") as f:
            f.write(data)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


def test_item4_a_fifo_input_is_read_once(tmp_path, good):
    ref = tmp_path / "ref.mlir"
    assert _compile(good, "--compile-to=input", "-o", ref).returncode == 0
    _feed_fifo(tmp_path / "fifo", GOOD.encode())
    out = tmp_path / "out.mlir"
    res = _compile(tmp_path / "fifo", "--compile-to=input", "-o", out)
    assert res.returncode == 0, res.stderr
    # the same module as from the file (a second read of the FIFO would have found it empty)
    assert "arith.addf" in out.read_text() and out.read_text() == ref.read_text()
    # process substitution: a pipe named /dev/fd/N
    res = _run(["bash", "-c", f"{tool('iree-fusions-compile')} <(cat {good}) "
                f"{' '.join(CPU_FLAGS)} --compile-to=input -o {tmp_path / 'p.mlir'}"])
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "p.mlir").read_text() == ref.read_text()


def test_item4_a_fifo_decisions_file_is_read_once(tmp_path, good):
    """Checked before the compile and used by its child: one read (a second open of the
    FIFO would wait for a writer forever)."""
    data = {"format": "iree-fusions-decisions/1",
            "target": {"device": "local", "backend": "llvm-cpu", "chip": "no-such-cpu"},
            "decisions": {}}
    _feed_fifo(tmp_path / "fifo", json.dumps(data).encode())
    res = _compile(good, "-o", tmp_path / "m.vmfb", f"--fusions-decisions={tmp_path}/fifo")
    assert res.returncode == 1
    assert "was measured for llvm-cpu:no-such-cpu" in res.stderr


@pytest.mark.parametrize("prog", ["iree-fusions-compile", "iree-fusions-opt"])
def test_item4_endless_split_input_is_bounded(tmp_path, prog):
    """/dev/zero never ends: the tool stops reading at the bound and says so (the message
    names the bound; no timing asserted)."""
    res = _run([tool(prog), "/dev/zero", "--split-input-file", "-o", str(tmp_path / "o")])
    assert res.returncode == 2
    assert "'/dev/zero' is larger than 256 MiB" in _one_error_line(res.stderr, prog)
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- item 5: orphans


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _gone(pid: int, within: float = LIMIT) -> bool:
    """Whether `pid` ends (polled; `within` only guards against waiting forever)."""
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie not yet reaped by init counts as gone
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[1].startswith("Z"):
                    return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_item5_the_compile_child_dies_with_its_parent(sig, hang_module, good, tmp_path):
    out = tmp_path / "m.vmfb"
    proc = subprocess.Popen([tool("iree-fusions-compile"), str(good), *CPU_FLAGS, "-o", str(out),
                             f"--fusions-load={hang_module}", "--fusions=test-hang"],
                            stderr=subprocess.PIPE, text=True)
    _wait_until_entered(proc)  # the compile child is inside the hanging pass
    (child,) = _children(proc.pid)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=LIMIT)
    assert proc.returncode == (128 + sig if sig != signal.SIGKILL else -sig)
    assert _gone(child), "the compile child outlived its parent"
    assert "Traceback" not in err and not out.exists()
    if sig != signal.SIGKILL:
        assert err.strip() == f"iree-fusions-compile: interrupted ({sig.name}); no output written"
        _no_temp_files(tmp_path)
    else:  # nothing runs on SIGKILL: its temporary file goes with the next write of `out`
        _compile(good, "--fusions=none", "-o", out)
        _no_temp_files(tmp_path)


def test_item5_compile_timeout_stops_every_process(hang_module, good):
    """The pass never returns, so the compile always runs past its timeout (the API's own
    feature under test); afterwards no process of this test is left: the processes are
    found by the module name only this test's command lines hold (not machine-wide)."""
    with pytest.raises(api.CompileTimeout, match="timed out after 3 s") as raised:
        api.compile_file(str(good), fusions="test-hang", timeout=3,
                         flags=[f"--fusions-load={hang_module}"])
    assert ENTERED in str(raised.value)  # it was stopped inside the pass
    mine = [pid for pid in _pids_naming(f"--fusions-load={hang_module}") if _alive(pid)]
    assert not mine, "a compile process outlived the timeout"


def _pids_naming(text: str) -> list[int]:
    """The processes whose command line holds `text`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    """Running, not a zombie: gone within LIMIT counts as gone (a killed process may take a
    moment to be reaped)."""
    return not _gone(pid)


def test_item5_a_failing_pass_keeps_a_reproducer_only_where_it_says_so(
        good, support_on_path, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    out = api.compile_file(str(good), fusions="test-raise",
                           flags=["--fusions-load=support.extra_passes"])
    assert "pass 'test-raise' failed and was skipped" in out.stderr
    assert "iree-fusions-compile with the same flags saves the IR" in out.stderr
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".mlirbc")]
    # The command line tool saves it and says where; the command keeps --fusions-load.
    res = _compile(good, "--fusions-load=support.extra_passes", "--fusions=test-raise",
                   "-o", tmp_path / "m.vmfb", env={**os.environ, "TMPDIR": str(tmp_path)})
    (saved,) = [n for n in os.listdir(tmp_path) if n.endswith(".mlirbc")]
    assert f"reproduce with: iree-fusions-opt {tmp_path / saved} " \
        "--fusions-load=support.extra_passes -p test-raise" in res.stderr
    assert f"kept in {tmp_path / saved}" in res.stderr


def test_item5_ctrl_c_is_one_line(good, hang_module, tmp_path):
    """Ctrl-C reaches the whole process group: the parent and its compile child."""
    proc = subprocess.Popen([tool("iree-fusions-compile"), str(good), *CPU_FLAGS, "-o",
                             str(tmp_path / "m.vmfb"), f"--fusions-load={hang_module}",
                             "--fusions=test-hang"], stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    _wait_until_entered(proc)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=LIMIT)
    assert proc.returncode == 130
    assert err.strip() == "iree-fusions-compile: interrupted (SIGINT); no output written"


# ---------------------------------------------------------------- item 6: one-line errors


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe{}", "is not UTF-8 text"),
    (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    (b"[]", "is not an iree-fusions decisions file"),
])
def test_item6_bad_decisions_files(good, tmp_path, content, message):
    path = tmp_path / "d.json"
    path.write_bytes(content)
    res = _compile(good, "-o", "/dev/null", f"--fusions-decisions={path}")
    assert res.returncode == 2 and message in _one_error_line(res.stderr)


def test_item6_split_input_that_is_not_utf8(tmp_path):
    path = tmp_path / "n.mlir"
    path.write_bytes(b"func.func @a() {\n  return\n}\n// -----\n\xff\xfe junk\n")
    res = _compile(path, "--split-input-file", "--compile-to=input", "-o", tmp_path / "o")
    assert res.returncode == 1 and "n.mlir:5" in res.stderr
    res = _run([tool("iree-fusions-opt"), str(path), "--split-input-file"])
    assert res.returncode == 1 and "@a" in res.stdout


@pytest.mark.parametrize("target, message", [
    ("{dir}", "cannot open output file '{dir}': Is a directory"),
    ("/no/such/dir/r.json", "cannot open output file '/no/such/dir/r.json': No such file"),
])
def test_item6_report_json_that_cannot_be_written(good, tmp_path, target, message):
    target = target.replace("{dir}", str(tmp_path))
    res = _compile(good, "-o", tmp_path / "m.vmfb", f"--fusions-report-json={target}")
    assert res.returncode == 1
    assert message.replace("{dir}", str(tmp_path)) in _one_error_line(res.stderr)
    assert not (tmp_path / "m.vmfb").exists()


@pytest.mark.parametrize("redirect, message", [(">&-", "it is closed"),
                                               ("> /dev/full", "No space left on device")])
@pytest.mark.parametrize("prog", ["iree-fusions-compile", "iree-fusions-opt"])
def test_item6_stdout_closed_or_full(good, redirect, message, prog):
    flags = " ".join(CPU_FLAGS + ["--fusions=none"]) if prog == "iree-fusions-compile" else ""
    res = _run(["bash", "-c", f"{tool(prog)} {good} {flags} -o - {redirect}"])
    assert res.returncode == 1
    assert f"cannot write to stdout: {message}" in _one_error_line(res.stderr, prog)


def test_item6_a_broken_stdout_pipe(good):
    proc = subprocess.Popen([tool("iree-fusions-compile"), str(good), *CPU_FLAGS,
                             "--fusions=none", "-o", "-"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.communicate(timeout=LIMIT)[1].decode()
    assert proc.returncode == 1 and "cannot write to stdout: Broken pipe" in \
        _one_error_line(err)


def test_item6_a_plugin_module_that_fails_to_import(good, tmp_path, monkeypatch):
    (tmp_path / "broken_passes.py").write_text("x = 1\nraise RuntimeError('not today')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    for prog in ("iree-fusions-compile", "iree-fusions-opt"):
        res = _run([tool(prog), str(good), "--fusions-load=broken_passes", "-o", "/dev/null"])
        assert res.returncode == 2
        assert "cannot import 'broken_passes': RuntimeError: not today (broken_passes.py:2)" \
            in _one_error_line(res.stderr, prog)


@pytest.mark.parametrize("manifest, message", [
    ([], "unknown format"),
    ({"format": FORMAT, "models": {}}, "'models' must be a list"),
    ({"format": FORMAT, "models": [7]}, "models[0] must be an object"),
    ({"format": FORMAT, "models": [{"name": "m"}]}, "'dir' must be a str"),
    ({"format": FORMAT, "device": 3, "models": []}, "'device' must be a str"),
])
def test_item6_manifests_of_the_wrong_shape(tmp_path, manifest, message):
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match=message.replace("[", r"\[")):
        load_manifest(str(tmp_path))


def test_item6_tune_to_a_folder_fails_before_any_work(tmp_path):
    """The output is checked before anything is compiled: a compiler flag that fails every
    compile would have been the error otherwise (no timing asserted)."""
    res = _run([tool("iree-fusions-tune"), "attention_projection_transpose", "-o",
                str(tmp_path), "--iree-no-such-flag=1"])
    assert res.returncode == 1
    assert f"cannot open output file '{tmp_path}': Is a directory" in \
        _one_error_line(res.stderr, "iree-fusions-tune")
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- item 7: wrong behaviour


@pytest.mark.parametrize("element, message", [
    ("batch-gathers{min-group-size=-1}", "option 'min-group-size' must be >= 0, got '-1'"),
    ("forward-factory-ops{ops-per-byte=nan}", "'ops-per-byte' must be a finite number"),
    ("forward-factory-ops{ops-per-byte=inf}", "'ops-per-byte' must be a finite number"),
    ("batch-gathers{min-group-size=2 min-group-size=3}", "given twice"),
    ("batch-gathers{min-group-size=}", "has no value"),
    ("batch-gathers,,cse", "empty pass name"),
    (",,,", "empty pass name"),
])
def test_item7_options_and_pipelines_are_validated(element, message):
    with pytest.raises(PipelineError, match=message.replace("(", r"\(").replace("{", r"\{")):
        parse_pipeline(element)


def test_item7_option_ranges_and_spaces():
    (step,) = parse_pipeline("batch-gathers{ min-group-size = 3  cross-table=false }")
    assert step.plugin.min_group_size == 3 and step.plugin.cross_table is False
    assert parse_options('a = "x y" b={c=1 d} e') == {"a": "x y", "b": "{c=1 d}", "e": "true"}
    # a signed option (default 0) keeps negative values
    (step,) = parse_pipeline("batch-mlp-towers{min-net-dispatches=-10}")
    assert step.plugin.min_net_dispatches == -10
    towers = lookup("batch-mlp-towers").load()
    assert "min-layers=int (default 1, >= 1)" in "\n".join(towers.option_help())  # declared
    with pytest.raises(PassOptionError, match="must be >= 0"):
        lookup("batch-gathers").load().from_options({"min-pooled-indices": "-5"})


@pytest.mark.parametrize("flag, on", [("--fusions-report", True), ("--fusions-report=false", False),
                                      ("--fusions-report=0", False)])
def test_item7_plugin_flags_take_boolean_values(good, flag, on):
    res = _compile(good, "--fusions=fusions-report", flag, "-o", "/dev/null")
    assert res.returncode == 0 and ("[fusions-report]" in res.stderr) == on


@pytest.mark.parametrize("selection", [",,,", "", "batch-gathers,,"])
def test_item7_an_empty_pass_selection_is_an_error(good, selection):
    res = _compile(good, f"--fusions={selection}", "-o", "/dev/null")
    assert res.returncode == 2
    assert _one_error_line(res.stderr).startswith("iree-fusions-compile: error: --fusions: ")


def test_item7_a_decision_for_another_pass_is_refused():
    target = Target("local", "llvm-cpu", "x")
    key = "interchange-0123456789"
    file = DecisionSet(target, "d.json", entries={key: Decision(key, "batch-gathers", True,
                                                                 "d.json")})
    decider = Decider(target, [file])
    assert decider.lookup(key, "batch-gathers").apply
    with pytest.raises(DecisionsError, match="names pass 'batch-gathers', but the key is one "
                                             "of 'interchange-permuted-consumers'"):
        decider.lookup(key, "interchange-permuted-consumers")


def test_item7_a_pass_with_an_unknown_phase_is_refused_at_registration(good, tmp_path,
                                                                       monkeypatch):
    (tmp_path / "odd_passes.py").write_text(HANGING_PASS.replace('"linalg"', '"linalgg"'))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    res = _compile(good, "--fusions-load=odd_passes", "--fusions=test-hang", "-o", "/dev/null")
    assert res.returncode == 2
    assert "pass 'test-hang': unknown phase 'linalgg' (phases: linalg, flow)" in \
        _one_error_line(res.stderr)


def test_item7_flags_of_the_api_win_over_its_default_passes(good):
    assert api.compile_file(str(good)).reports  # default: all passes ran
    out = api.compile_file(str(good), flags=["--fusions=none"])
    assert out.reports == []


def test_item7_a_top_level_plugin_module_is_not_taken_for_a_builtin(good, tmp_path,
                                                                    monkeypatch):
    (tmp_path / "noop_passes.py").write_text(HANGING_PASS.replace("time.sleep(600)", "pass"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    res = _compile(good, "--fusions-load=noop_passes", "--fusions=test-hang", "-o", "/dev/null")
    assert res.returncode == 0, res.stderr


def test_item7_crash_reproducers_keep_the_plugin_flags():
    plugin = PluginArgs({"global-optimization": ["batch-gathers{min-group-size=3}"],
                         "dispatch-creation": ["test-mark-flow"]}, ["support.extra_passes"],
                        "d.json")
    text = describe_crash(signal.SIGSEGV, ["parse", "iree start dispatch-creation",
                                           "plugin dispatch-creation test-mark-flow"],
                          ["m.mlir"], "prog")
    assert "--fusions-load" not in text  # without PluginArgs: the old form
    text = describe_crash(signal.SIGSEGV, ["parse", "iree start global-optimization",
                                           "plugin global-optimization batch-gathers",
                                           "iree global-optimization dispatch-creation",
                                           "plugin dispatch-creation test-mark-flow"],
                          ["m.mlir"], "prog", plugin)
    # the IR before the failing hook: the earlier hook's passes, with their options
    assert ("prog m.mlir '--fusions=batch-gathers{min-group-size=3}' "
            "--fusions-load=support.extra_passes --fusions-decisions=d.json "
            "--compile-to=dispatch-creation") in text
    assert "iree-fusions-opt repro.mlirbc --fusions-load=support.extra_passes -p " \
        "test-mark-flow" in text
    text = describe_crash(signal.SIGSEGV, ["parse", "plugin global-optimization batch-gathers",
                                           "changed", "iree global-optimization end"],
                          ["m.mlir"], "prog", plugin)
    assert "--fusions=batch-gathers{min-group-size=3},test-mark-flow" not in text
    assert "'--fusions=batch-gathers{min-group-size=3}' --fusions-load" in text
    killed = describe_crash(signal.SIGKILL, ["parse"], ["m.mlir"], "prog", plugin)
    assert "killed (SIGKILL)" in killed and "not a crash" in killed


def test_item7_split_input_errors_cite_the_files_lines(tmp_path):
    path = tmp_path / "split.mlir"
    path.write_text(SPLIT)
    res = _compile(path, "--split-input-file", "--compile-to=input", "-o", tmp_path / "o")
    assert res.returncode == 1 and f"{path}:6:8: error:" in res.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("bad_dir", ["../../..", "/etc", "a/../../x"])
def test_item7_manifest_paths_stay_inside_the_bundle(tmp_path, bad_dir):
    folder = tmp_path / "b"
    _add(BundleWriter(str(folder), device="local-task", target=None, fusions="all"), "a", 1)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["models"][0]["dir"] = bad_dir
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="not a path inside the bundle"):
        load_manifest(str(folder))
    manifest["models"][0]["dir"] = "a"
    manifest["models"][0]["stock"]["vmfb"] = "/tmp/evil.vmfb"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="stock.vmfb: '/tmp/evil.vmfb'"):
        load_manifest(str(folder))
    manifest["models"][0]["stock"]["vmfb"] = "stock.vmfb"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    os.symlink(tmp_path, folder / "out")  # a link leading out of the bundle
    manifest["models"][0]["dir"] = "out"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="leads outside the bundle"):
        load_manifest(str(folder))
