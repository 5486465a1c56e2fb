"""What a careless or unlucky user does to the tools (issue 20, items 2-7): nothing lost,
no wrong result, no hang, no orphan process, no traceback. Each test names its item."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import tool
from iree_fusions.harness import api
from iree_fusions.runtime.manifest import BundleError, load_manifest
from iree_fusions.compiler import files
from iree_fusions.tools import shim
from iree_fusions.tools import shim_folder as shim_files  # (a fixture is named shim_folder)
from iree_fusions.harness.bundle import RUNTIME_DIR, BundleWriter
from support.adversarial import (GOOD, LIMIT, add_model, cli_compile, good, no_temp_files,
                                 one_error_line, run_tool)


BAD = "func.func @main() {\n  %0 = foo.bar : i32\n}\n"


@pytest.fixture
def bad(tmp_path):
    p = tmp_path / "bad.mlir"
    p.write_text(BAD)
    return p


# ---------------------------------------------------------------- item 2: data loss


def test_item2_failed_opt_leaves_the_output_as_it_was(bad, tmp_path):
    out = tmp_path / "existing.txt"
    out.write_text("precious")
    res = run_tool([tool("iree-fusions-opt"), str(bad), "-p", "cse", "-o", str(out)])
    assert res.returncode == 1 and out.read_text() == "precious"
    no_temp_files(tmp_path)


def test_item2_editing_in_place_with_a_failing_pass_keeps_the_input(good, support_on_path):
    res = run_tool([tool("iree-fusions-opt"), str(good), "--fusions-load=support.extra_passes",
                "-p", "test-raise", "-o", str(good)])
    assert res.returncode == 1 and "deliberate failure" in res.stderr
    assert good.read_text() == GOOD
    # and a pipeline that works replaces the file whole, keeping its mode
    good.chmod(0o640)
    res = run_tool([tool("iree-fusions-opt"), str(good), "-p", "cse", "-o", str(good)])
    assert res.returncode == 0 and "arith.addf" in good.read_text()
    assert good.stat().st_mode & 0o777 == 0o640


def test_item2_failed_compile_writes_no_output_and_no_report(bad, good, tmp_path):
    out, report = tmp_path / "m.vmfb", tmp_path / "old.json"
    out.write_bytes(b"old vmfb")
    report.write_text("[1]")
    res = cli_compile(bad, "-o", out, f"--fusions-report-json={report}")
    assert res.returncode == 1
    assert out.read_bytes() == b"old vmfb" and report.read_text() == "[1]"
    # A compile that fails after IREE wrote the .vmfb (the report cannot be written) leaves
    # no new output either.
    res = cli_compile(good, "-o", tmp_path / "new.vmfb", "--fusions=none",
                   "--fusions-report-json=/dev/full")
    assert res.returncode == 1
    assert "cannot write output file '/dev/full': No space left on device" in \
        one_error_line(res.stderr)
    assert not (tmp_path / "new.vmfb").exists()
    no_temp_files(tmp_path)


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
    add_model(w, "a", 1)
    add_model(w, "b", 2)
    # A second export of one model: the other stays; the model is replaced in place.
    w2 = BundleWriter(str(folder), device="local-task", target=None, fusions="all")
    add_model(w2, "a", 3)
    assert _on_disk(folder) == {"a": b"S3", "b": b"S2"}
    # Interrupted while writing a model: the manifest still lists what is on disk.
    w3 = BundleWriter(str(folder), device="local-task", target=None, fusions="all")

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        add_model(w3, "b", 4)
    monkeypatch.undo()
    assert _on_disk(folder) == {"a": b"S3", "b": b"S2"}
    no_temp_files(folder)
    # only listed model folders remain (beside the runtime package the bundle runs with)
    listed = {m["dir"] for m in load_manifest(str(folder))["models"]}
    assert {p.name for p in folder.iterdir() if p.is_dir()} == listed | {RUNTIME_DIR}


def test_item2_an_export_refuses_a_folder_it_would_spoil(tmp_path):
    other = tmp_path / "home"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(BundleError, match="not empty and holds no bundle"):
        BundleWriter(str(other), device="local-task", target=None, fusions="all")
    folder = tmp_path / "b"
    add_model(BundleWriter(str(folder), device="local-task", target=None, fusions="all"), "a", 1)
    with pytest.raises(BundleError, match="holds a bundle for device local-task"):
        BundleWriter(str(folder), device="cuda", target=None, fusions="all")


def test_item2_an_empty_bundle_is_an_error(tmp_path):
    folder = tmp_path / "b"
    w = BundleWriter(str(folder), device="local-task", target=None, fusions="all")
    assert not folder.exists()  # an export that adds nothing writes nothing
    add_model(w, "a", 1)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["models"] = []
    (folder / "manifest.json").write_text(json.dumps(manifest))
    res = run_tool([tool("iree-fusions-bench"), "--from", str(folder), "--rounds=0"])
    assert res.returncode == 2
    assert "the bundle holds no models" in one_error_line(res.stderr, "iree-fusions-bench")
    res = run_tool([sys.executable, str(folder / "run_bundle.py"), "--rounds=0"])
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
