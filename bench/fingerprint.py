"""Fingerprints what the plugin produces for catalog models, to prove a refactor changes nothing.

    python bench/fingerprint.py [MODEL ...] [--all] -o before.json
    python bench/fingerprint.py --all -o after.json --compare before.json

Per model: sha256 of the model source, of the plugin's `.vmfb` at default options and of its
`--compile-to=flow` IR (printed without locations), stock and plugin dispatch counts, and
sha256 of the plugin build's outputs on the model's inputs (local-task). `--compare` prints
the models whose flow IR, dispatch counts or outputs differ from an earlier file (exit 1 if
any); a vmfb or source that differs alone is reported apart (PyTorch exports carry the paths
of the Python files that built them as locations, and the vmfb keeps them as debug info).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from iree_fusions.harness import api
from iree_fusions.compiler.counting import count_flow_ir
from iree_fusions.models.catalog import all_models


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def load_artifact(name: str, cache: str | None):
    """The model's artifact, built once into `cache` (so two code versions compile the
    very same source bytes) or built now."""
    path = os.path.join(cache, f"{name}.pkl") if cache else None
    if path and os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    artifact = all_models()[name].build()
    if path:
        os.makedirs(cache, exist_ok=True)
        with open(path, "wb") as f:
            pickle.dump(artifact, f)
    return artifact


def fingerprint(name: str, fusions: str, device: str, cache: str | None = None) -> dict:
    artifact = load_artifact(name, cache)
    # A fixed path: text sources carry their file name into the vmfb's debug locations.
    tmp = os.path.join(tempfile.gettempdir(), "iree-fusions-fingerprint", name)
    os.makedirs(tmp, exist_ok=True)
    try:
        path = artifact.write(tmp)
        jobs = {"vmfb": dict(fusions=fusions), "flow": dict(fusions=fusions, compile_to="flow"),
                "stock_flow": dict(stock=True, compile_to="flow")}
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {k: pool.submit(api.compile_file, path, device=device,
                                      flags=artifact.flags, **kw) for k, kw in jobs.items()}
            outs = {k: f.result() for k, f in futures.items()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results = api.run(outs["vmfb"].output, artifact.inputs, artifact.function, device)
    out_hash = hashlib.sha256()
    for r in results:
        out_hash.update(r.tobytes())
    return {
        "source": _sha(artifact.source),
        "vmfb": _sha(outs["vmfb"].output),
        "flow": _sha(outs["flow"].output),
        "outputs": out_hash.hexdigest()[:16],
        "stock_dispatches": count_flow_ir(outs["stock_flow"].output).total_dispatches,
        "plugin_dispatches": count_flow_ir(outs["flow"].output).total_dispatches,
        "changes": sum(len(r.get("changes", [])) for r in outs["vmfb"].reports),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("models", nargs="*")
    p.add_argument("--all", action="store_true", help="every model of iree-fusions-bench --list")
    p.add_argument("--fusions", default="all")
    p.add_argument("--device", default="local-task")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--compare", help="an earlier output of this script")
    p.add_argument("--artifacts", help="cache built models here (pickles) and reuse them: "
                   "two code versions then compile the same source bytes")
    args = p.parse_args(argv)
    names = list(all_models()) if args.all else args.models
    table: dict[str, dict] = {}
    if os.path.exists(args.output):  # resume
        with open(args.output) as f:
            table = json.load(f)
    for i, name in enumerate(names, 1):
        if name in table:
            continue
        t0 = time.time()
        try:
            table[name] = fingerprint(name, args.fusions, args.device, args.artifacts)
        except Exception as e:  # recorded: a failure is a fingerprint too
            table[name] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
        print(f"[{i}/{len(names)}] {name} {time.time() - t0:.0f}s {table[name]}", flush=True)
        with open(args.output, "w") as f:
            json.dump(table, f, indent=1, sort_keys=True)
    if not args.compare:
        return 0
    with open(args.compare) as f:
        before = json.load(f)
    differ = 0
    for name in names:
        a, b = before.get(name), table.get(name)
        if a is None:
            continue
        if a == b:
            print(f"same      {name}")
            continue
        fields = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        bad = any(k not in ("vmfb", "source") for k in fields)
        differ += bad
        print(f"{'DIFFERS' if bad else 'same-ir'} {name}: " +
              ", ".join(f"{k} {a.get(k)} -> {b.get(k)}" for k in fields))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
