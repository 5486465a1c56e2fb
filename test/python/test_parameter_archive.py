"""Weights stacked offline (issue 45, item 1): `--fusions-parameter-archive` makes the module
and the archive of its stacked parameters in one compile (IREE's parameter encoder, run
here), and a module and an archive that do not belong together are an error naming both
files, never a wrong result.

The models are lit cases read from external parameters: three gather tables
(batch-gathers-parameters.mlir, @parameter_tables) and two tower weights
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


@pytest.fixture(scope="module")
def gathers(tmp_path_factory):
    """The gathers case compiled stock and with an archive: a dict of the paths and the
    compile's stderr."""
    folder = tmp_path_factory.mktemp("archive")
    source = _case(folder, "batch-gathers-parameters", "parameter_tables")
    irpa = _save(_tables(0), folder / "tables.irpa")
    archive = folder / "tables.fusions.irpa"
    stock = _compile(source, folder / "stock.vmfb", "--fusions=none")
    assert stock.returncode == 0, stock.stderr
    made = _compile(source, folder / "plugin.vmfb", GATHERS, f"--fusions-parameters=model={irpa}",
                    f"--fusions-parameter-archive={archive}", "--fusions-report")
    assert made.returncode == 0, made.stderr
    return {"folder": folder, "source": source, "irpa": irpa, "archive": str(archive),
            "stock": str(folder / "stock.vmfb"), "plugin": str(folder / "plugin.vmfb"),
            "stderr": made.stderr}


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    inputs = [rng.integers(0, rows, 8).astype(np.int64) for rows in (10, 20, 20)]
    inputs[1][0], inputs[2][0], inputs[2][1] = 3, 5, 6  # the rows holding NaN, inf, -inf
    return inputs


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
    towers = _case(tmp_path, "batch-mlp-towers-parameters", "parameter_weights")
    rng = np.random.default_rng(3)
    weights = _save({n: rng.standard_normal((8, 16)).astype(np.float32) for n in ("w0", "w1")},
                    tmp_path / "w.irpa")
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
                     f"--fusions-parameter-archive={tmp_path / 'again.irpa'}")
    assert again.returncode == 0, again.stderr
    scope = re.compile(r"scope (fusions-[0-9a-f]{12})")
    assert scope.search(again.stderr).group(1) == scope.search(gathers["stderr"]).group(1)
    for flags, message in (
            ([f"--fusions-parameter-archive={tmp_path / 'a.irpa'}"],
             "needs the parameter files the module reads"),
            ([f"--fusions-parameters=model={gathers['irpa']}"],
             "--fusions-parameters is read with --fusions-parameter-archive"),
            ([f"--fusions-parameters=model={tmp_path / 'none.irpa'}",
              f"--fusions-parameter-archive={tmp_path / 'a.irpa'}"], "no file")):
        res = _compile(gathers["source"], tmp_path / "x.vmfb", GATHERS, *flags)
        assert res.returncode == 2 and message in res.stderr, res.stderr
        assert not os.path.exists(tmp_path / "x.vmfb") and not os.path.exists(tmp_path / "a.irpa")


def test_the_bench_compiles_and_runs_the_pair(tmp_path):
    """iree-fusions-bench --parameter-archive: the plugin's build reads its archive (towers
    stacked offline: fewer dispatches than stock, same outputs)."""
    towers = _case(tmp_path, "batch-mlp-towers-parameters", "parameter_weights")
    rng = np.random.default_rng(3)
    weights = _save({n: rng.standard_normal((8, 16)).astype(np.float32) for n in ("w0", "w1")},
                    tmp_path / "w.irpa")
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
