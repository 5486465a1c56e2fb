"""iree-fusions-tune: measure every rewrite of a model on a device; write the decisions.

    iree-fusions-tune MODEL [iree-compile flags...] --device local-task -o decisions.json \\
        [--form FORM] [--size NAME=N,N,...] [--parameters [SCOPE=]FILE] [--budget SECONDS]
        [--resume] [--rounds N] [--max-rounds N] [--repetitions N] [--margin 0.02]

MODEL is a catalog model (`iree-fusions-bench --list`), in the form users deploy with
`--form` (dynamic-batch, dynamic-seq, params, onnx, ...), or an .mlir/.mlirbc file (an ONNX
import with --iree-input-type=onnx; random inputs are made from its signature, its external
weights read from `--parameters`, as iree-run-module takes them).

Dynamic dims are measured at the sizes `--size NAME=N,N,...` names (repeatable; a catalog
form's dims are named `batch` / `seq`; a file's take the one name given, or `argI.dimJ`); by
default a catalog form at its example's size, half and double it. A file with dynamic dims
needs `--size`. Every timing below is taken at every size (the same two builds: equal keys
are compiled and measured once per size), and a key is applied only where it is not measured
slower at any of them; the decisions record the sizes and the times at each. The tuner
compiles the model with the plugin and lists its candidates by key (equal keys are one
family, decided together). Then, key by key, it builds the model with and without that key
(all other keys as decided so far) and times both on DEVICE, alternating, `--rounds` rounds
of `--repetitions` repetitions, medians. A key the passes apply by default stays applied
unless it is measured slower: by more than `--margin` in the medians *and* in enough of the
alternating rounds that chance is unlikely (a one-sided sign test at 5%: 5 of 5 rounds, 7 of
7, 8 of 9, 9 of 11...); a key a pass declines by its cost rule is applied only when measured
faster by the same test (the statistics are `runtime.statistics`', shared with
iree-fusions-bench and bundles). On a noisy machine a decision therefore stays with the
pass's rule rather than follow one lucky round. A split verdict (the medians apart beyond
the margin, the rounds not agreeing enough) gets `--rounds` more rounds, up to
`--max-rounds`, before it is decided; so does a tuned build that looks slower than stock in
the last step. Where two builds are byte-identical (a key whose change leaves the compiled
program as it was, a tuned build that is stock's program) nothing is timed: the rule stands.
Keys that appear only once another decision changed the IR are measured too. Last, the tuned
build is timed against stock IREE at every size; if it is slower by more than the margin at
one, the keys that did not show a clear gain are turned off (then all keys), so that the
decisions never make the model slower than stock on this device. `--budget` bounds the
measuring of keys (checked before each key and each size: a key not measured at every size
keeps its rule); the check against stock runs after it whatever the budget, without extra
rounds once it is spent.

The file records the target (backend and chip, as IREE resolved it), the runtime device, the
tool versions, and per key the decision and the times measured. Compile with it:
`iree-fusions-compile ... --fusions-decisions=decisions.json`; a file can hold the keys of
several models (tune them into one file with `--resume`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from importlib import metadata

from ..compiler.decisions import Decision, DecisionSet, load
from ..compiler.files import UserError, check_output
from ..harness import api, sizes
from ..models.form_names import FORM_CHOICES
from ..runtime.modules import add_parameters_argument
from ..runtime.statistics import MARGIN, MAX_ROUNDS
from .tune_measure import PROG, Build, KeyInfo, Tuner, check_against_stock, decide_key
from .tune_model import Model, load_model

# The tuner for scripts and tests: its entry points, and the types of its measuring
# (tune_measure.py) and of what it tunes (tune_model.py).
__all__ = ["Build", "KeyInfo", "Model", "Tuner", "main", "tune"]


def _progress(done: int, total: int, started: float, msg: str) -> None:
    width = 24
    filled = int(width * done / max(total, 1))
    bar = "#" * filled + "." * (width - filled)
    print(f"[{bar}] {done}/{total} keys {time.time() - started:5.0f}s  {msg}",
          file=sys.stderr, flush=True)


def tune(args, flags: list[str]) -> DecisionSet:
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="iree-fusions-tune-") as workdir:
        args.workdir = workdir
        model = load_model(args)
        model_name = model.name
        tuner = Tuner(model.source, model.points[0][1], model.function,
                      [*model.flags, *flags], args, workdir,
                      points=model.points if model.sizes else [],
                      parameters=model.parameters, started=started)
        base = tuner.build({})
        if base.target is None:
            raise SystemExit(f"{PROG}: error: the compile reported no target (no plugin pass "
                             "ran?)")
        decided = DecisionSet(base.target, os.path.abspath(args.output), args.device, meta={
            "tools": _versions(), "margin": args.margin})
        if args.resume and os.path.exists(args.output):
            previous = load(args.output)
            if previous.target != base.target:
                raise SystemExit(f"{PROG}: error: {args.output} holds decisions for "
                                 f"{previous.target}, this model compiles for {base.target}")
            decided.entries.update(previous.entries)
            for what in ("checks", "sizes"):  # the other models' records stay in the file
                decided.meta.setdefault(what, {}).update(previous.meta.get(what, {}))
        tuner.decided = decided
        config = {k: (d.pass_name, d.apply) for k, d in decided.entries.items()}
        current = tuner.build(config)
        done: set[str] = set(decided.entries)
        if model.sizes:
            decided.meta.setdefault("sizes", {})[model_name] = model.sizes
        at = f" at {', '.join(label for label, _ in model.points)}" if model.sizes else ""
        print(f"{PROG}: {model_name} on {args.device} ({base.target}): "
              f"{len(current.keys)} key(s){at}", file=sys.stderr)
        while True:
            pending = [k for k in current.keys if k not in done]
            total = len(done) + len(pending)
            if not pending:
                break
            if tuner.over_budget():
                print(f"{PROG}: budget of {args.budget:g}s spent; {len(pending)} key(s) left "
                      "to the passes' rules", file=sys.stderr)
                break
            info = current.keys[pending[0]]
            toggled = tuner.build({**config, info.key: (info.pass_name, not info.applied)})
            apply, evidence, summary = decide_key(tuner, info, current, toggled, args.margin)
            if evidence.get("undecided"):  # the budget ran out between its sizes
                _progress(len(done), total, started, f"{info.key}: {summary}")
                break
            config[info.key] = (info.pass_name, apply)
            decided.entries[info.key] = Decision(info.key, info.pass_name, apply, decided.source, {
                "model": model_name, "default": info.applied, "candidates": info.count,
                **evidence, "what": info.what})
            done.add(info.key)
            if apply != info.applied:
                current = toggled
            decided.save(args.output)
            _progress(len(done), total, started,
                      f"{info.key} ({info.pass_name}, x{info.count}): {summary}")
        check_against_stock(tuner, decided, config, args, model_name)
        decided.meta["seconds"] = decided.meta.get("seconds", 0) + round(
            time.time() - started, 1)
        decided.save(args.output)
        print(f"{PROG}: wrote {args.output}: {len(decided.entries)} decision(s) "
              f"({sum(not d.apply for d in decided.entries.values())} skip) in "
              f"{time.time() - started:.0f}s (compiles {tuner.compile_s:.0f}s, timing "
              f"{tuner.timing_s:.0f}s)", file=sys.stderr)
        return decided


def _versions() -> dict[str, str]:
    out = {}
    for dist in ("iree-fusions", "iree-base-compiler", "iree-base-runtime"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "?"
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.strip().splitlines()[0],
                                epilog="Other arguments are iree-compile flags for both builds.")
    p.add_argument("model", help="catalog model name or .mlir/.mlirbc file")
    p.add_argument("--device", default="local-task", choices=sorted(api.DEVICE_FLAGS),
                   help="runtime device to measure on (selects the compile target too)")
    p.add_argument("--target", help="compile target chip/CPU (default: host / sm_80 / gfx942 / "
                   "rdna3; Vulkan on NVIDIA: ampere)")
    p.add_argument("-o", "--output", required=True, help="decisions file to write")
    p.add_argument("--resume", action="store_true",
                   help="keep the decisions already in the output file, measure the rest")
    p.add_argument("--budget", type=float, default=0.0,
                   help="stop measuring keys after this many seconds, checked before each key "
                   "and each size (0: no limit); the check against stock still runs")
    p.add_argument("--form", default="static", choices=FORM_CHOICES, metavar="FORM",
                   help="a catalog model's form (default: static): dynamic-batch, dynamic-seq, "
                   "params, onnx, onnx-params, and their combinations (iree-fusions-bench "
                   "--form)")
    p.add_argument(sizes.SIZE_FLAG, action="append", default=[], metavar="NAME=N,N,...",
                   help="sizes to measure a dynamic dim at (repeatable), e.g. --size "
                   "batch=1,8,64; a file's dims all take the one name given, or name one "
                   "argI.dimJ (default for a catalog form: the example's size, half and "
                   "double it; a file with dynamic dims needs it)")
    add_parameters_argument(p)
    p.add_argument("--fusions", default="all", help="plugin passes (default: all)")
    p.add_argument("--function", help="entry function (files only; default: main, else the "
                   "first public function)")
    p.add_argument("--label", help="the model's name in the decisions file (files only)")
    p.add_argument("--rounds", type=int, default=7,
                   help="alternating timing rounds per key (a default changes only when "
                   "5 of 5, 7 of 7, 8 of 9... rounds agree)")
    p.add_argument("--max-rounds", type=int, default=MAX_ROUNDS,
                   help="when the medians differ beyond the margin but the rounds split, "
                   "take --rounds more, up to this many in all (default %(default)s; "
                   "= --rounds: never)")
    p.add_argument("--repetitions", type=int, default=10, help="repetitions per round")
    p.add_argument("--margin", type=float, default=MARGIN,
                   help="noise margin: a change of the default needs this relative difference")
    p.add_argument("--runtime-flag", action="append", default=[],
                   help="extra iree-benchmark-module flag (repeatable)")
    return p


def main(argv: list[str] | None = None) -> int:
    args, flags = _parser().parse_known_args(argv)
    unknown = [f for f in flags if not f.startswith("--")]
    if unknown:
        print(f"{PROG}: error: unexpected argument(s) {' '.join(unknown)} (write compiler "
              "flags as --flag=value)", file=sys.stderr)
        return 2
    try:
        check_output(args.output)  # a file it cannot write fails now, not after the timing
        tune(args, flags)
    except (UserError, api.CompilerToolError, RuntimeError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; {args.output} holds the decisions made before",
              file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
