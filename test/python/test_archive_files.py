"""No input or output file ever lost, no traceback (issue 58), for `iree-fusions-compile
--fusions-parameter-archive`: an output that is, or resolves to, an input or another output
is refused before anything is written, with one error line naming both paths; every bad
parameter file (missing, unreadable, of another shape than the input declares) is one
error line and writes nothing; an archive's checksums cover every byte of each source
parameter; an overlay archive deployed without its sources is an error naming them.

The model is the towers lit case read from two external weights
(batch-mlp-towers-parameters.mlir, @parameter_weights); the overlay case is the gathers lit
case returning a parameter nothing stacks (so the module reads its sources)."""

import hashlib
import json
import os
import re
import subprocess

import numpy as np
import pytest

from conftest import CPU_FLAGS, tool
from iree_fusions.compiler.files import OutputError, UserError
from iree_fusions.runtime.archives import (MANIFEST_KEY, ArchiveError, resolve_parameters,
                                           source_entries)
from iree_fusions.runtime.benchmark import runtime_tool
from iree_fusions.runtime.modules import run_module
from iree_fusions.tools import parameter_archive
from support import passes
from support.adversarial import one_error_line, run_tool
from test_parameter_archive import (BIAS, GATHERS, OVERLAY, TOWERS, _case, _inputs, _save,
                                    _tables, _with_bias)

WEIGHTS = {n: np.random.default_rng(3).standard_normal((8, 16)).astype(np.float32)
           for n in ("w0", "w1")}


def _compile(folder, *args) -> subprocess.CompletedProcess:
    """iree-fusions-compile t.mlir with `args`, run in `folder` (paths relative to it)."""
    return run_tool([tool("iree-fusions-compile"), "t.mlir", *CPU_FLAGS, TOWERS, *args],
                    cwd=folder)


def _snapshot(folder) -> dict:
    """Every entry of `folder` (hidden temporary files too): a link's target, or a file's
    inode, size, modification time and digest."""
    out = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.islink(path):
            out[name] = ("link", os.readlink(path))
        elif os.path.isdir(path):
            out[name] = ("folder", sorted(os.listdir(path)))
        else:
            st = os.stat(path)
            with open(path, "rb") as f:
                out[name] = (st.st_ino, st.st_size, st.st_mtime_ns,
                             hashlib.sha256(f.read()).hexdigest())
    return out


@pytest.fixture
def towers(tmp_path):
    """A folder with the towers model t.mlir, its weights w.irpa (a symbolic link, a hard
    link and a linked folder to them beside) and an m.vmfb from an earlier compile."""
    (tmp_path / "t.mlir").write_text(passes.lit_cases("batch-mlp-towers-parameters")
                                     ["parameter_weights"].replace("@parameter_weights",
                                                                   "@main"))
    _save(WEIGHTS, tmp_path / "w.irpa")
    os.symlink("w.irpa", tmp_path / "link.irpa")
    os.link(tmp_path / "w.irpa", tmp_path / "hard.irpa")
    os.symlink(".", tmp_path / "here")
    (tmp_path / "m.vmfb").write_bytes(b"old vmfb")
    return tmp_path


SOURCE = "--fusions-parameters=model=w.irpa"
ARCHIVE = "--fusions-parameter-archive="
REFUSED = {  # case -> (flags, the output named, what it is named as the same file as)
    "archive=source": (["-o", "m.vmfb", SOURCE, ARCHIVE + "w.irpa"], ARCHIVE + "w.irpa",
                       SOURCE),
    "archive=link to source": (["-o", "m.vmfb", SOURCE, ARCHIVE + "link.irpa"],
                               ARCHIVE + "link.irpa", SOURCE),
    "archive=hard link to source": (["-o", "m.vmfb", SOURCE, ARCHIVE + "hard.irpa"],
                                    ARCHIVE + "hard.irpa", SOURCE),
    "archive=input": (["-o", "m.vmfb", SOURCE, ARCHIVE + "t.mlir"], ARCHIVE + "t.mlir",
                      "the input file t.mlir"),
    "archive=-o": (["-o", "m.vmfb", SOURCE, ARCHIVE + "m.vmfb"], ARCHIVE + "m.vmfb",
                   "-o m.vmfb"),
    "new archive=-o": (["-o", "new.vmfb", SOURCE, ARCHIVE + "here/new.vmfb"],
                       ARCHIVE + "here/new.vmfb", "-o new.vmfb"),
    "-o=input": (["-o", "t.mlir"], "-o t.mlir", "the input file t.mlir"),
    "-o=source via a linked folder": (["-o", "here/w.irpa", SOURCE, ARCHIVE + "a.irpa"],
                                      "-o here/w.irpa", SOURCE),
    "report=-o": (["-o", "m.vmfb", "--fusions-report-json=./m.vmfb"],
                  "--fusions-report-json=./m.vmfb", "-o m.vmfb"),
    "counts=source link": (["-o", "m.vmfb", "--fusions-counts-json=link.irpa", SOURCE,
                            ARCHIVE + "a.irpa"], "--fusions-counts-json=link.irpa", SOURCE),
}


@pytest.mark.parametrize("case", REFUSED)
def test_an_output_that_is_an_input_or_another_output_is_refused_writing_nothing(towers,
                                                                                 case):
    flags, output, other = REFUSED[case]
    before = _snapshot(towers)
    res = _compile(towers, *flags)
    line = one_error_line(res.stderr)
    assert res.returncode == 2, res.stderr
    assert f"error: {output} is the same file as {other}: " in line, line
    assert ("would replace that input" if other.endswith(("w.irpa", "t.mlir")) else
            "one output would overwrite the other") in line, line
    assert _snapshot(towers) == before  # nothing created, replaced or modified


def test_outputs_of_their_own_and_devices_written_twice_are_accepted(towers):
    """Two outputs to /dev/null (written where it is, never replaced), and the pair: the
    source left as it was."""
    before = _snapshot(towers)["w.irpa"]
    res = _compile(towers, "-o", "/dev/null", "--fusions-report-json=/dev/null")
    assert res.returncode == 0, res.stderr
    res = _compile(towers, "-o", "m.vmfb", SOURCE, ARCHIVE + "a.irpa")
    assert res.returncode == 0, res.stderr
    assert _snapshot(towers)["w.irpa"] == before
    assert (towers / "m.vmfb").read_bytes() != b"old vmfb" and (towers / "a.irpa").exists()


def _bad_files(folder) -> None:
    """Parameter files a careless user gives: w0 of another shape (8x8: 256 bytes, the model
    reads 512), garbage, an empty file, an archive cut short, a folder."""
    _save({"w0": WEIGHTS["w0"][:, :8].copy(), "w1": WEIGHTS["w1"]}, folder / "shape.irpa")
    (folder / "garbage.irpa").write_bytes(b"not an archive " * 100)
    (folder / "empty.irpa").write_bytes(b"")
    (folder / "cut.irpa").write_bytes((folder / "w.irpa").read_bytes()[:1000])
    os.mkdir(folder / "folder.irpa")


BAD_INPUTS = {  # case -> (flags, exit code, the error line after "error: ")
    "another shape": (["--fusions-parameters=model=shape.irpa", ARCHIVE + "a.irpa"], 1,
                      "--fusions-parameters=model=shape.irpa: parameter 'w0' holds 256 bytes, "
                      "and the module reads 512 (a weight of another shape or element type "
                      "than the input declares)"),
    "another shape, overlay": (["--fusions-parameters=model=shape.irpa",
                                ARCHIVE + "a.irpa", OVERLAY], 1,
                               "--fusions-parameters=model=shape.irpa: parameter 'w0' holds "
                               "256 bytes, and the module reads 512"),
    "missing": (["--fusions-parameters=model=none.irpa", ARCHIVE + "a.irpa"], 2,
                "--fusions-parameters: no file none.irpa (scope 'model')"),
    "garbage": (["--fusions-parameters=model=garbage.irpa", ARCHIVE + "a.irpa"], 2,
                "--fusions-parameters: cannot read garbage.irpa: "),
    "empty": (["--fusions-parameters=model=empty.irpa", ARCHIVE + "a.irpa"], 2,
              "--fusions-parameters: cannot read empty.irpa: "),
    "cut short": (["--fusions-parameters=model=cut.irpa", ARCHIVE + "a.irpa"], 2,
                  "--fusions-parameters: cannot read cut.irpa: "),
    "a folder": (["--fusions-parameters=model=folder.irpa", ARCHIVE + "a.irpa"], 2,
                 "--fusions-parameters: no file folder.irpa"),
    "archive folder missing": ([SOURCE, ARCHIVE + "nowhere/a.irpa"], 1,
                               "cannot open output file 'nowhere/a.irpa': No such file or "
                               "directory"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_a_bad_parameter_file_is_one_error_line_and_writes_nothing(towers, case):
    flags, code, message = BAD_INPUTS[case]
    _bad_files(towers)
    before = _snapshot(towers)
    res = _compile(towers, "-o", "m.vmfb", *flags)
    assert res.returncode == code, res.stderr
    assert one_error_line(res.stderr).startswith(f"iree-fusions-compile: error: {message}")
    assert _snapshot(towers) == before


@pytest.mark.parametrize("error, kind", [
    (IndexError("Error invoking function: OUT_OF_RANGE; parameter `w0` range out of bounds;"
                " while calling import; \n[ 0] bytecode encoder@4:228 -"), UserError),
    (OSError(28, "No space left on device"), OutputError)])
def test_the_encoders_runtime_errors_are_one_line(tmp_path, monkeypatch, error, kind):
    """What the size check before the encoder does not see (the runtime's status, a full
    disk) is still a one-line error, never a traceback."""
    def fail(*args):
        raise error

    monkeypatch.setattr(parameter_archive, "encode_archive", fail)
    plan = parameter_archive.ArchivePlan(
        "a.irpa", {"model": "w.irpa"}, "fusions-000000000000",
        {"sources": [], "mode": "consolidate"}, "consolidate", str(tmp_path / "none.mlir"))
    with pytest.raises(kind) as caught:
        parameter_archive.write_archive(plan, str(tmp_path / "staged"), "iree-compile", [])
    assert "\n" not in str(caught.value) and type(caught.value) is kind
    assert re.search(r"out of bounds; while calling import; \[ 0\]|No space left",
                     str(caught.value))


# ---------------------------------------------------------------- checksums


@pytest.mark.parametrize("at", [4096, 6000, 8191, 12287, 16383])
def test_a_parameter_differing_after_its_first_4_kib_has_another_checksum(tmp_path, at):
    """A 16 KiB parameter whose bytes differ in one byte only, after the first 4 KiB (the
    middle too, not only the last 4 KiB)."""
    data = np.random.default_rng(0).integers(0, 255, 16384, dtype=np.uint8)
    changed = data.copy()
    changed[at] ^= 0x5A
    a, b = ({e["key"]: e for e in source_entries({"m": _save({"w": w, "v": data[:100]},
                                                              tmp_path / name)})}
            for w, name in ((data, "a.irpa"), (changed, "b.irpa")))
    assert a["w"]["bytes"] == b["w"]["bytes"] == 16384
    assert a["w"]["checksum"] != b["w"]["checksum"]
    assert a["v"] == b["v"]  # the same bytes: the same entry


def test_an_archive_made_from_weights_that_differ_after_4_kib_is_stale(towers):
    """End to end: the towers' weights widened to 16 KiB each; weights re-exported with one
    value changed past the first 4 KiB are refused as stale, and compile to another scope."""
    text = (towers / "t.mlir").read_text().replace("x16xf32", "x512xf32")
    (towers / "t.mlir").write_text(text)
    rng = np.random.default_rng(5)
    wide = {n: rng.standard_normal((8, 512)).astype(np.float32) for n in ("w0", "w1")}
    _save(wide, towers / "wide.irpa")
    retrained = {n: w.copy() for n, w in wide.items()}
    retrained["w1"].reshape(-1)[1500] += 1.0  # byte 6000 of 16384
    _save(retrained, towers / "retrained.irpa")
    made = _compile(towers, "-o", "m.vmfb", "--fusions-parameters=model=wide.irpa",
                    ARCHIVE + "a.irpa")
    assert made.returncode == 0, made.stderr
    plugin, archive = str(towers / "m.vmfb"), str(towers / "a.irpa")
    assert resolve_parameters(plugin, {"model": str(towers / "wide.irpa"), "x": archive})
    with pytest.raises(ArchiveError, match=r"a\.irpa is stale: it was made from wide\.irpa, "
                       r"and \S*retrained\.irpa has other contents in 'w1'"):
        resolve_parameters(plugin, {"model": str(towers / "retrained.irpa"), "x": archive})
    again = _compile(towers, "-o", "again.vmfb", "--fusions-parameters=model=retrained.irpa",
                     ARCHIVE + "again.irpa")
    assert again.returncode == 0, again.stderr
    scope = re.compile(r"scope (fusions-[0-9a-f]{12})")
    assert scope.search(again.stderr).group(1) != scope.search(made.stderr).group(1)


def test_a_splat_parameters_checksum_is_of_its_pattern(tmp_path):
    """A splat parameter (a pattern repeated, no bytes in the file) re-exported with another
    pattern of the same size has another checksum; the same pattern, the same one."""
    import iree.runtime as rt

    def entry(name, pattern):
        index = rt.ParameterIndex()
        index.add_splat("z", pattern, 4096)
        index.create_archive_file(str(tmp_path / name))
        (made,) = source_entries({"m": str(tmp_path / name)})
        return made

    zeros, ones, zeros_again = (entry(name, np.array([v], dtype=np.float32))
                                for name, v in (("a.irpa", 0.0), ("b.irpa", 1.0),
                                                ("c.irpa", 0.0)))
    assert zeros["bytes"] == ones["bytes"] == 4096
    assert zeros["checksum"] != ones["checksum"]
    assert zeros == zeros_again


@pytest.mark.parametrize("sampled", [("w0", "w1"), ("w1",)], ids=["every", "one"])
def test_an_archive_with_checksums_of_part_of_each_parameter_is_remade(towers, sampled):
    """A manifest without whole checksums (an earlier version sampled 4 KiB at each end), of
    every parameter or of one (a manifest edited by hand): checking sources against it is an
    error saying to remake it, never a pass nor a KeyError."""
    import iree.runtime as rt

    scope = "fusions-0123456789ab"
    manifest = {"scope": scope, "mode": "overlay", "files": {"model": "w.irpa"},
                "sources": [{"scope": "model", "key": k, "bytes": 512,
                             ("sample" if k in sampled else "checksum"): "0" * 16}
                            for k in ("w0", "w1")]}
    index = rt.ParameterIndex()
    index.add_buffer("parameter0", b"\0" * 64)
    index.add_buffer(MANIFEST_KEY, json.dumps(manifest).encode())
    index.create_archive_file(str(towers / "old.irpa"))
    with pytest.raises(ArchiveError, match=r"old\.irpa was made by an earlier iree-fusions, "
                       r"whose checksums cover part of each parameter only: \S*w\.irpa "
                       "cannot be checked against it"):
        resolve_parameters(b"module reading " + scope.encode(),
                           {"model": str(towers / "w.irpa"), "x": str(towers / "old.irpa")})


# ---------------------------------------------------------------- overlay without sources


def test_an_overlay_archive_without_its_sources_is_an_error_naming_them(tmp_path):
    """The gathers case returning a parameter nothing stacks: its overlay archive holds the
    stacked tables only, so the module reads the source file too. Deployed without it (or
    with it under another scope) the pair is refused, naming the archive and the file;
    IREE's own runner fails too, printing no result; with it, the outputs are stock's."""
    source = _with_bias(_case(tmp_path, "batch-gathers-parameters", "parameter_tables"))
    irpa = _save({**_tables(0), "bias": BIAS}, tmp_path / "tables.irpa")
    plugin, archive = str(tmp_path / "plugin.vmfb"), str(tmp_path / "overlay.irpa")
    flags = [tool("iree-fusions-compile"), source, *CPU_FLAGS]
    made = run_tool([*flags, GATHERS, f"--fusions-parameters=model={irpa}",
                     ARCHIVE + archive, OVERLAY, "-o", plugin])
    assert made.returncode == 0 and "1 parameter(s)" in made.stderr, made.stderr
    inputs = _inputs()
    message = (r"overlay\.irpa is an overlay \(the stacks only\): the module also reads the "
               r"parameter file it was made from, tables\.irpa \(scope 'model'\), which was "
               r"not given \(give it with --parameters=model=FILE\)")
    for given in ({"fusions": archive}, {"weights": irpa, "fusions": archive}):
        with pytest.raises(ArchiveError, match=message):
            run_module(plugin, inputs, "main", "local-sync", given)
        with pytest.raises(ArchiveError, match=message):
            resolve_parameters(plugin, given)
    scope = re.search(r"scope (fusions-[0-9a-f]{12})", made.stderr).group(1)
    paths = []
    for i, x in enumerate(inputs):
        paths.append(str(tmp_path / f"in{i}.npy"))
        np.save(paths[-1], x)
    proc = subprocess.run([runtime_tool("iree-run-module"), f"--module={plugin}",
                           "--device=local-sync", "--function=main",
                           f"--parameters={scope}={archive}",
                           *[f"--input=@{p}" for p in paths]], capture_output=True, text=True)
    assert proc.returncode != 0 and "result[0]" not in proc.stdout, proc.stdout
    assert "NOT_FOUND" in proc.stderr and "'model'" in proc.stderr, proc.stderr
    stock = str(tmp_path / "stock.vmfb")
    assert run_tool([*flags, "--fusions=none", "-o", stock]).returncode == 0
    expected = run_module(stock, inputs, "main", "local-sync", {"model": irpa})
    got = run_module(plugin, inputs, "main", "local-sync", {"model": irpa, "x": archive})
    assert [a.tobytes() for a in expected] == [a.tobytes() for a in got]


def test_a_files_manifest_is_not_one_of_its_parameters(tmp_path):
    """An archive used as a parameter file: its entries are its parameters, without the
    plugin's manifest entry (read apart, as the manifest)."""
    import iree.runtime as rt

    index = rt.ParameterIndex()
    index.add_buffer("w", np.arange(16, dtype=np.float32).tobytes())
    index.add_buffer(MANIFEST_KEY, json.dumps({"scope": "fusions-0123456789ab"}).encode())
    index.create_archive_file(str(tmp_path / "a.irpa"))
    assert [e["key"] for e in source_entries({"m": str(tmp_path / "a.irpa")})] == ["w"]


def test_parameters_in_memory_and_other_formats_pass_through(tmp_path):
    """Sources that are not .irpa files (arrays given in memory, a .safetensors file) are
    handed on as they are: no archive to look for in them."""
    other = tmp_path / "w.safetensors"
    other.write_bytes(b"\0" * 64)
    arrays = {"w": np.zeros(4, np.float32)}
    given = {"model": arrays, "other": str(other)}
    assert resolve_parameters(b"a module reading no archive", given) == given


def _safetensors(arrays: dict, path) -> str:
    """`arrays` (f32) written as a .safetensors file: an 8-byte header length, the JSON header
    (dtype, shape, data offsets of each), the data."""
    header, data, at = {}, b"", 0
    for name, array in arrays.items():
        raw = np.ascontiguousarray(array, np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [at, at + len(raw)]}
        data, at = data + raw, at + len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + data)
    return str(path)


def test_an_archives_sources_may_be_given_as_safetensors(towers):
    """The archive was made from w.irpa; the same weights given as a .safetensors file are
    checked against it (read by IREE's index, their checksums the same): accepted; other
    values in it: stale."""
    made = _compile(towers, "-o", "m.vmfb", SOURCE, ARCHIVE + "a.irpa")
    assert made.returncode == 0, made.stderr
    plugin, archive = str(towers / "m.vmfb"), str(towers / "a.irpa")
    same = _safetensors(WEIGHTS, towers / "w.safetensors")
    assert archive in resolve_parameters(plugin, {"model": same, "x": archive}).values()
    changed = {n: w + 1 for n, w in WEIGHTS.items()}
    other = _safetensors(changed, towers / "other.safetensors")
    with pytest.raises(ArchiveError, match=r"a\.irpa is stale: it was made from w\.irpa, and "
                       r"\S*other\.safetensors has other contents in"):
        resolve_parameters(plugin, {"model": other, "x": archive})
