"""Weights stacked offline (issue 45, item 1): `--fusions-parameter-archive` makes the module
and the archive of its stacked parameters in one compile (IREE's parameter encoder, run
here), and a module and an archive that do not belong together are an error naming both
files, never a wrong result. Both layouts: `overlay` (the stacks only, the module reads the
sources too) and `consolidate` (the default: every parameter the module reads, the sources
not needed).

The models are lit cases read from external parameters: three gather tables
(batch-gathers-parameters.mlir, @parameter_tables; for the consolidated archive with a
fourth parameter returned as it is, which nothing stacks) and two tower weights
(batch-mlp-towers-parameters.mlir, @parameter_weights)."""

import os
import re
import subprocess

import numpy as np
import pytest

from conftest import CPU_FLAGS, tool
from iree_fusions.runtime.archives import (MANIFEST_KEY, ArchiveError, resolve_parameters,
                                           scopes_read)
from iree_fusions.runtime.benchmark import runtime_tool
from iree_fusions.runtime.modules import run_module
from support import passes

GATHERS = "--fusions=batch-gathers{min-sliced-indices=0 min-pooled-indices=0}"
TOWERS = "--fusions=batch-mlp-towers"


def _tables(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    tables = {name: rng.standard_normal((rows, 4)).astype(np.float32)
              for name, rows in (("t0", 10), ("t1", 20), ("t2", 20))}
    tables["t1"][3, 1], tables["t2"][5, 0], tables["t2"][6, 2] = np.nan, np.inf, -np.inf
    return tables


def _save(arrays: dict, path) -> str:
    import iree.runtime as rt

    rt.save_archive_file(arrays, str(path))
    return str(path)


def _compile(source: str, out, *flags) -> subprocess.CompletedProcess:
    return subprocess.run([tool("iree-fusions-compile"), source, *CPU_FLAGS, *flags,
                           "-o", str(out)], capture_output=True, text=True)


def _case(folder, pass_name: str, case: str) -> str:
    path = folder / f"{case}.mlir"
    path.write_text(passes.lit_cases(pass_name)[case].replace(f"@{case}", "@main"))
    return str(path)


OVERLAY = "--fusions-parameter-archive-mode=overlay"


def _towers(folder) -> tuple[str, str]:
    """The towers case and its two weights' .irpa: (source path, .irpa path)."""
    rng = np.random.default_rng(3)
    weights = {n: rng.standard_normal((8, 16)).astype(np.float32) for n in ("w0", "w1")}
    return (_case(folder, "batch-mlp-towers-parameters", "parameter_weights"),
            _save(weights, folder / "w.irpa"))


@pytest.fixture(scope="module")
def gathers(tmp_path_factory):
    """The gathers case compiled stock and with an overlay archive: a dict of the paths and
    the compile's stderr."""
    folder = tmp_path_factory.mktemp("archive")
    source = _case(folder, "batch-gathers-parameters", "parameter_tables")
    irpa = _save(_tables(0), folder / "tables.irpa")
    archive = folder / "tables.fusions.irpa"
    stock = _compile(source, folder / "stock.vmfb", "--fusions=none")
    assert stock.returncode == 0, stock.stderr
    made = _compile(source, folder / "plugin.vmfb", GATHERS, f"--fusions-parameters=model={irpa}",
                    f"--fusions-parameter-archive={archive}", OVERLAY, "--fusions-report")
    assert made.returncode == 0, made.stderr
    return {"folder": folder, "source": source, "irpa": irpa, "archive": str(archive),
            "stock": str(folder / "stock.vmfb"), "plugin": str(folder / "plugin.vmfb"),
            "stderr": made.stderr}


def _with_bias(source: str) -> str:
    """The gathers case returning a fourth parameter, "model"::"bias", as it is."""
    text = open(source).read()
    text = text.replace("-> (tensor<8x12xf32>) {", "-> (tensor<8x12xf32>, tensor<2x3xf32>) {")
    text = text.replace("  util.return %c2 : tensor<8x12xf32>",
                        '  %bias = flow.tensor.constant #flow.parameter.named<"model"::"bias"> '
                        ": tensor<2x3xf32>\n"
                        "  util.return %c2, %bias : tensor<8x12xf32>, tensor<2x3xf32>")
    assert "model\"::\"bias" in text
    path = source[:-len(".mlir")] + "_bias.mlir"
    with open(path, "w") as f:
        f.write(text)
    return path


BIAS = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    inputs = [rng.integers(0, rows, 8).astype(np.int64) for rows in (10, 20, 20)]
    inputs[1][0], inputs[2][0], inputs[2][1] = 3, 5, 6  # the rows holding NaN, inf, -inf
    return inputs


def test_a_consolidated_archive_holds_every_parameter_and_runs_alone(gathers, tmp_path):
    """The default mode: the stacked tables and the parameter nothing stacks, both
    bit-identical to the sources, in one archive the module reads without the sources; a
    source given anyway is checked and then left out."""
    import iree.runtime as rt

    source = _with_bias(gathers["source"])
    irpa = _save({**_tables(0), "bias": BIAS}, tmp_path / "tables.irpa")
    archive, plugin = str(tmp_path / "all.fusions.irpa"), str(tmp_path / "plugin.vmfb")
    made = _compile(source, plugin, GATHERS, f"--fusions-parameters=model={irpa}",
                    f"--fusions-parameter-archive={archive}")
    assert made.returncode == 0, made.stderr
    scope = re.search(r"scope (fusions-[0-9a-f]{12}), \d+ bytes made offline \(IREE's "
                      r"parameter encoder, consolidated\): every parameter the module reads, "
                      r"from 4 source parameter\(s\) .*; run with --parameters=\1=\S+$",
                      made.stderr.strip())
    assert scope, made.stderr
    index = rt.ParameterIndex()
    index.load(archive)
    data = b"".join(bytes(entry.file_view) for key, entry in index.items()
                    if key != MANIFEST_KEY)
    tables = _tables(0)
    assert np.concatenate([tables["t0"], tables["t1"], tables["t2"]]).tobytes() in data
    assert BIAS.tobytes() in data
    for name in ("t0", "t1", "t2"):  # the originals are not copied: only their stack is
        assert data.count(tables[name].tobytes()) == 1, name
    # A parameter the module reads that no source holds: an error before anything is written.
    nobias = _save(_tables(0), tmp_path / "nobias.irpa")
    res = _compile(source, tmp_path / "x.vmfb", GATHERS, f"--fusions-parameters=model={nobias}",
                   f"--fusions-parameter-archive={tmp_path / 'x.irpa'}")
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert ("the module reads model::bias, which no --fusions-parameters file holds "
            f"(given: model={nobias})") in res.stderr
    assert not os.path.exists(tmp_path / "x.vmfb") and not os.path.exists(tmp_path / "x.irpa")
    stock = str(tmp_path / "stock.vmfb")
    assert _compile(source, stock, "--fusions=none").returncode == 0
    inputs = _inputs()
    expected = run_module(stock, inputs, "main", "local-sync", {"model": irpa})
    got = run_module(plugin, inputs, "main", "local-sync", {"x": archive})
    assert [a.tobytes() for a in expected] == [a.tobytes() for a in got]
    assert np.isnan(got[0]).any() and np.isinf(got[0]).any()
    assert resolve_parameters(plugin, {"model": irpa, "x": archive}) == \
        {scope.group(1): archive}
    # Weights re-exported since: given, they are checked (not silently ignored).
    other = _save({**_tables(7), "bias": BIAS}, tmp_path / "retrained.irpa")
    with pytest.raises(ArchiveError, match=r"all\.fusions\.irpa is stale"):
        run_module(plugin, inputs, "main", "local-sync", {"model": other, "x": archive})
    with pytest.raises(ArchiveError, match="no archive for it was given"):
        run_module(plugin, inputs, "main", "local-sync", {"model": irpa})
    paths = []
    for i, x in enumerate(inputs):
        paths.append(str(tmp_path / f"in{i}.npy"))
        np.save(paths[-1], x)
    outs = [tmp_path / "out0.npy", tmp_path / "out1.npy"]
    proc = subprocess.run([runtime_tool("iree-run-module"), f"--module={plugin}",
                           "--device=local-sync", "--function=main",
                           f"--parameters={scope.group(1)}={archive}",
                           *[f"--input=@{p}" for p in paths],
                           *[f"--output=@{out}" for out in outs]],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert [np.load(out).tobytes() for out in outs] == [a.tobytes() for a in expected]


def test_the_archive_holds_the_stacked_tables_and_the_module_reads_them(gathers):
    import iree.runtime as rt

    scope = re.search(r"scope (fusions-[0-9a-f]{12}), 1 parameter\(s\), 832 bytes made "
                      r"offline \(IREE's parameter encoder: the stacks the report says are "
                      r"built at load\) from model::t0, model::t1, model::t2; run with "
                      r"--parameters=model=\S+ --parameters=\1=\S+",
                      gathers["stderr"])
    assert scope, gathers["stderr"]
    with open(gathers["plugin"], "rb") as f:
        assert scopes_read(f.read()) == {scope.group(1)}
    # The tables are stacked in the archive, not at load: no load-time stack is left.
    assert "stacked once at load from 3 parameter table(s)" in gathers["stderr"]
    index = rt.ParameterIndex()
    index.load(gathers["archive"])
    data = {key: bytes(entry.file_view) for key, entry in index.items() if key != MANIFEST_KEY}
    tables = _tables(0)
    (packed,) = data.values()  # the encoder's one parameter, 64-byte aligned slices
    stacked = np.concatenate([tables["t0"], tables["t1"], tables["t2"]]).tobytes()
    assert len(packed) == 832 and packed[:800] == stacked  # bit-identical to the originals


def test_the_pair_runs_bit_identical_to_stock_in_python_and_iree_run_module(gathers, tmp_path):
    inputs = _inputs()
    expected = run_module(gathers["stock"], inputs, "main", "local-sync",
                          {"model": gathers["irpa"]})
    # The archive may be given under any scope: its manifest names the one the module reads.
    got = run_module(gathers["plugin"], inputs, "main", "local-sync",
                     {"model": gathers["irpa"], "fusions": gathers["archive"]})
    assert expected[0].tobytes() == got[0].tobytes()
    assert np.isnan(got[0]).any() and np.isinf(got[0]).any()  # the NaN / inf rows were read
    flags = resolve_parameters(gathers["plugin"], {"model": gathers["irpa"],
                                                   "x": gathers["archive"]})
    paths = []
    for i, x in enumerate(inputs):
        paths.append(str(tmp_path / f"in{i}.npy"))
        np.save(paths[-1], x)
    out = tmp_path / "out.npy"
    proc = subprocess.run([runtime_tool("iree-run-module"), f"--module={gathers['plugin']}",
                           "--device=local-sync", "--function=main",
                           *[f"--parameters={s}={p}" for s, p in flags.items()],
                           *[f"--input=@{p}" for p in paths], f"--output=@{out}"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert np.load(out).tobytes() == expected[0].tobytes()


def test_a_missing_stale_or_foreign_archive_is_an_error_naming_the_files(gathers, tmp_path):
    inputs = _inputs()
    with pytest.raises(ArchiveError, match=r"plugin\.vmfb reads weights made offline from "
                       r"parameter scope fusions-[0-9a-f]{12}, and no archive"):
        run_module(gathers["plugin"], inputs, "main", "local-sync", {"model": gathers["irpa"]})
    # Other weights of the same names and sizes (a re-export): stale.
    other = _save(_tables(7), tmp_path / "retrained.irpa")
    with pytest.raises(ArchiveError, match=r"tables\.fusions\.irpa is stale: it was made from "
                       r"tables\.irpa, and \S*retrained\.irpa has other contents in 't0'"):
        run_module(gathers["plugin"], inputs, "main", "local-sync",
                   {"model": other, "fusions": gathers["archive"]})
    smaller = _save({**_tables(0), "t2": _tables(0)["t2"][:10]}, tmp_path / "smaller.irpa")
    with pytest.raises(ArchiveError, match="has another size of 't2'"):
        run_module(gathers["plugin"], inputs, "main", "local-sync",
                   {"model": smaller, "fusions": gathers["archive"]})
    # An archive of another compile (the towers case) for this module.
    towers, weights = _towers(tmp_path)
    made = _compile(towers, tmp_path / "towers.vmfb", TOWERS,
                    f"--fusions-parameters=model={weights}",
                    f"--fusions-parameter-archive={tmp_path / 'w.fusions.irpa'}")
    assert made.returncode == 0, made.stderr
    with pytest.raises(ArchiveError, match=r"w\.fusions\.irpa was made by another compile"):
        run_module(gathers["plugin"], inputs, "main", "local-sync",
                   {"model": gathers["irpa"], "fusions": str(tmp_path / "w.fusions.irpa")})
    # The towers pair itself: stacked (and transposed) offline, bit-identical to stock.
    assert "2 parameter(s)" not in made.stderr and "bytes made offline" in made.stderr
    x = [np.random.default_rng(4).standard_normal((4, 16)).astype(np.float32)]
    stock = _compile(towers, tmp_path / "towers_stock.vmfb", "--fusions=none")
    assert stock.returncode == 0, stock.stderr
    expected = run_module(str(tmp_path / "towers_stock.vmfb"), x, "main", "local-sync",
                          {"model": weights})
    got = run_module(str(tmp_path / "towers.vmfb"), x, "main", "local-sync",
                     {"model": weights, "fusions": str(tmp_path / "w.fusions.irpa")})
    assert [a.tobytes() for a in expected] == [a.tobytes() for a in got]


def test_the_same_compile_gives_the_same_scope_and_usage_errors_are_clear(gathers, tmp_path):
    again = _compile(gathers["source"], tmp_path / "again.vmfb", GATHERS,
                     f"--fusions-parameters=model={gathers['irpa']}",
                     f"--fusions-parameter-archive={tmp_path / 'again.irpa'}", OVERLAY)
    assert again.returncode == 0, again.stderr
    scope = re.compile(r"scope (fusions-[0-9a-f]{12})")
    assert scope.search(again.stderr).group(1) == scope.search(gathers["stderr"]).group(1)
    # The other layout is another module: another scope.
    other = _compile(gathers["source"], tmp_path / "other.vmfb", GATHERS,
                     f"--fusions-parameters=model={gathers['irpa']}",
                     f"--fusions-parameter-archive={tmp_path / 'other.irpa'}")
    assert other.returncode == 0, other.stderr
    assert scope.search(other.stderr).group(1) != scope.search(gathers["stderr"]).group(1)
    for flags, message in (
            ([f"--fusions-parameter-archive={tmp_path / 'a.irpa'}"],
             "needs the parameter files the module reads"),
            ([f"--fusions-parameters=model={gathers['irpa']}"],
             "--fusions-parameters is read with --fusions-parameter-archive"),
            ([f"--fusions-parameters=model={tmp_path / 'none.irpa'}",
              f"--fusions-parameter-archive={tmp_path / 'a.irpa'}"], "no file"),
            ([OVERLAY], "--fusions-parameter-archive-mode is read with "
                        "--fusions-parameter-archive"),
            ([f"--fusions-parameters=model={gathers['irpa']}",
              f"--fusions-parameter-archive={tmp_path / 'a.irpa'}",
              "--fusions-parameter-archive-mode=copy"],
             "--fusions-parameter-archive-mode is one of consolidate, overlay, not 'copy'")):
        res = _compile(gathers["source"], tmp_path / "x.vmfb", GATHERS, *flags)
        assert res.returncode == 2 and message in res.stderr, res.stderr
        assert not os.path.exists(tmp_path / "x.vmfb") and not os.path.exists(tmp_path / "a.irpa")


def test_the_bench_compiles_and_runs_the_pair(tmp_path):
    """iree-fusions-bench --parameter-archive: the plugin's build reads its archive (towers
    stacked offline: fewer dispatches than stock, same outputs)."""
    towers, weights = _towers(tmp_path)
    rows_path = tmp_path / "rows.json"
    res = subprocess.run([tool("iree-fusions-bench"), towers, f"--parameters=model={weights}",
                          TOWERS, "--parameter-archive", "--rounds=1", "--max-rounds=1",
                          "--repetitions=2", f"--json={rows_path}"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr + res.stdout
    import json

    (row,) = json.loads(rows_path.read_text())
    assert row["ok"] and row["max_abs"] == 0.0, row
    assert row["archive_bytes"] > 0 and row["plugin_dispatches"] < row["stock_dispatches"], row
    assert row["plugin_resident_mib"] is not None and row["plugin_load_ms"] > 0, row


def test_a_bundle_holds_the_pair_and_runs_it(tmp_path):
    """--parameter-archive --export: the bundle holds the consolidated archive beside the
    source (which stock reads), and `--from` runs both sides with the outputs equal."""
    towers, weights = _towers(tmp_path)
    folder = tmp_path / "bundle"
    res = subprocess.run([tool("iree-fusions-bench"), towers, f"--parameters=model={weights}",
                          TOWERS, "--parameter-archive", "--export", str(folder)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr + res.stdout
    shipped = [name for _, _, names in os.walk(folder) for name in names
               if name.endswith(".irpa")]
    assert len(shipped) == 2, shipped
    rows_path = tmp_path / "rows.json"
    res = subprocess.run([tool("iree-fusions-bench"), "--from", str(folder), "--rounds=1",
                          "--max-rounds=1", "--repetitions=2", f"--json={rows_path}"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr + res.stdout
    import json

    (row,) = json.loads(rows_path.read_text())
    assert row["ok"] and row["max_abs"] == 0.0, row
