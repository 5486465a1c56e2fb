"""Adversarial inputs, items 4 and 5: hangs and memory (FIFO inputs, endless split input),
orphans (children that die with their parent, timeouts, reproducers)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time

import pytest

from conftest import CPU_FLAGS, tool
from iree_fusions.harness import api
from iree_fusions.runtime.manifest import FORMAT, BundleError, load_manifest
from iree_fusions.harness.bundle import BundleWriter
from iree_fusions.tools.crash import PluginArgs, describe_crash
from iree_fusions.compiler.decisions import Decider, DecisionsError, DecisionSet, Decision
from iree_fusions.compiler.protocol import PassOptionError
from iree_fusions.compiler.pipeline import PipelineError, parse_options, parse_pipeline
from iree_fusions.compiler.registry import lookup
from iree_fusions.compiler.target import Target
from support.adversarial import (ENTERED, GOOD, HANGING_PASS, LIMIT, SPLIT, add_model,
                                 cli_compile, good, hang_module, no_temp_files, one_error_line,
                                 run_tool, wait_until_entered)


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
    assert cli_compile(good, "--compile-to=input", "-o", ref).returncode == 0
    _feed_fifo(tmp_path / "fifo", GOOD.encode())
    out = tmp_path / "out.mlir"
    res = cli_compile(tmp_path / "fifo", "--compile-to=input", "-o", out)
    assert res.returncode == 0, res.stderr
    # the same module as from the file (a second read of the FIFO would have found it empty)
    assert "arith.addf" in out.read_text() and out.read_text() == ref.read_text()
    # process substitution: a pipe named /dev/fd/N
    res = run_tool(["bash", "-c", f"{tool('iree-fusions-compile')} <(cat {good}) "
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
    res = cli_compile(good, "-o", tmp_path / "m.vmfb", f"--fusions-decisions={tmp_path}/fifo")
    assert res.returncode == 1
    assert "was measured for llvm-cpu:no-such-cpu" in res.stderr


@pytest.mark.parametrize("prog", ["iree-fusions-compile", "iree-fusions-opt"])
def test_item4_endless_split_input_is_bounded(tmp_path, prog):
    """/dev/zero never ends: the tool stops reading at the bound and says so (the message
    names the bound; no timing asserted)."""
    res = run_tool([tool(prog), "/dev/zero", "--split-input-file", "-o", str(tmp_path / "o")])
    assert res.returncode == 2
    assert "'/dev/zero' is larger than 256 MiB" in one_error_line(res.stderr, prog)
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
    wait_until_entered(proc)  # the compile child is inside the hanging pass
    (child,) = _children(proc.pid)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=LIMIT)
    assert proc.returncode == (128 + sig if sig != signal.SIGKILL else -sig)
    assert _gone(child), "the compile child outlived its parent"
    assert "Traceback" not in err and not out.exists()
    if sig != signal.SIGKILL:
        assert err.strip() == f"iree-fusions-compile: interrupted ({sig.name}); no output written"
        no_temp_files(tmp_path)
    else:  # nothing runs on SIGKILL: its temporary file goes with the next write of `out`
        cli_compile(good, "--fusions=none", "-o", out)
        no_temp_files(tmp_path)


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
    res = cli_compile(good, "--fusions-load=support.extra_passes", "--fusions=test-raise",
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
    wait_until_entered(proc)
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
    res = cli_compile(good, "-o", "/dev/null", f"--fusions-decisions={path}")
    assert res.returncode == 2 and message in one_error_line(res.stderr)


def test_item6_split_input_that_is_not_utf8(tmp_path):
    path = tmp_path / "n.mlir"
    path.write_bytes(b"func.func @a() {\n  return\n}\n// -----\n\xff\xfe junk\n")
    res = cli_compile(path, "--split-input-file", "--compile-to=input", "-o", tmp_path / "o")
    assert res.returncode == 1 and "n.mlir:5" in res.stderr
    res = run_tool([tool("iree-fusions-opt"), str(path), "--split-input-file"])
    assert res.returncode == 1 and "@a" in res.stdout


@pytest.mark.parametrize("target, message", [
    ("{dir}", "cannot open output file '{dir}': Is a directory"),
    ("/no/such/dir/r.json", "cannot open output file '/no/such/dir/r.json': No such file"),
])
def test_item6_report_json_that_cannot_be_written(good, tmp_path, target, message):
    target = target.replace("{dir}", str(tmp_path))
    res = cli_compile(good, "-o", tmp_path / "m.vmfb", f"--fusions-report-json={target}")
    assert res.returncode == 1
    assert message.replace("{dir}", str(tmp_path)) in one_error_line(res.stderr)
    assert not (tmp_path / "m.vmfb").exists()


@pytest.mark.parametrize("redirect, message", [(">&-", "it is closed"),
                                               ("> /dev/full", "No space left on device")])
@pytest.mark.parametrize("prog", ["iree-fusions-compile", "iree-fusions-opt"])
def test_item6_stdout_closed_or_full(good, redirect, message, prog):
    flags = " ".join(CPU_FLAGS + ["--fusions=none"]) if prog == "iree-fusions-compile" else ""
    res = run_tool(["bash", "-c", f"{tool(prog)} {good} {flags} -o - {redirect}"])
    assert res.returncode == 1
    assert f"cannot write to stdout: {message}" in one_error_line(res.stderr, prog)


def test_item6_a_broken_stdout_pipe(good):
    proc = subprocess.Popen([tool("iree-fusions-compile"), str(good), *CPU_FLAGS,
                             "--fusions=none", "-o", "-"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.communicate(timeout=LIMIT)[1].decode()
    assert proc.returncode == 1 and "cannot write to stdout: Broken pipe" in \
        one_error_line(err)


def test_item6_a_plugin_module_that_fails_to_import(good, tmp_path, monkeypatch):
    (tmp_path / "broken_passes.py").write_text("x = 1\nraise RuntimeError('not today')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    for prog in ("iree-fusions-compile", "iree-fusions-opt"):
        res = run_tool([tool(prog), str(good), "--fusions-load=broken_passes", "-o", "/dev/null"])
        assert res.returncode == 2
        assert "cannot import 'broken_passes': RuntimeError: not today (broken_passes.py:2)" \
            in one_error_line(res.stderr, prog)


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
    res = run_tool([tool("iree-fusions-tune"), "attention_projection_transpose", "-o",
                str(tmp_path), "--iree-no-such-flag=1"])
    assert res.returncode == 1
    assert f"cannot open output file '{tmp_path}': Is a directory" in \
        one_error_line(res.stderr, "iree-fusions-tune")
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
    res = cli_compile(good, "--fusions=fusions-report", flag, "-o", "/dev/null")
    assert res.returncode == 0 and ("[fusions-report]" in res.stderr) == on


@pytest.mark.parametrize("selection", [",,,", "", "batch-gathers,,"])
def test_item7_an_empty_pass_selection_is_an_error(good, selection):
    res = cli_compile(good, f"--fusions={selection}", "-o", "/dev/null")
    assert res.returncode == 2
    assert one_error_line(res.stderr).startswith("iree-fusions-compile: error: --fusions: ")


def test_item7_a_decision_for_another_pass_is_refused():
    target = Target("local", "llvm-cpu", "x")
    key = "interchange-permuted-consumers-0123456789"
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
    res = cli_compile(good, "--fusions-load=odd_passes", "--fusions=test-hang", "-o", "/dev/null")
    assert res.returncode == 2
    assert "pass 'test-hang': unknown phase 'linalgg' (phases: linalg, flow)" in \
        one_error_line(res.stderr)


def test_item7_flags_of_the_api_win_over_its_default_passes(good):
    assert api.compile_file(str(good)).reports  # default: all passes ran
    out = api.compile_file(str(good), flags=["--fusions=none"])
    assert out.reports == []


def test_item7_a_top_level_plugin_module_is_not_taken_for_a_builtin(good, tmp_path,
                                                                    monkeypatch):
    (tmp_path / "noop_passes.py").write_text(HANGING_PASS.replace("time.sleep(600)", "pass"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    res = cli_compile(good, "--fusions-load=noop_passes", "--fusions=test-hang", "-o", "/dev/null")
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
    res = cli_compile(path, "--split-input-file", "--compile-to=input", "-o", tmp_path / "o")
    assert res.returncode == 1 and f"{path}:6:8: error:" in res.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("bad_dir", ["../../..", "/etc", "a/../../x"])
def test_item7_manifest_paths_stay_inside_the_bundle(tmp_path, bad_dir):
    folder = tmp_path / "b"
    add_model(BundleWriter(str(folder), device="local-task", target=None, fusions="all"), "a", 1)
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
