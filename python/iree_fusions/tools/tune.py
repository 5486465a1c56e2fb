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
slower at any of them; the decisions record the sizes and the times at each. The tuner compiles the model with the plugin and lists
its candidates by key (equal keys are one family, decided together). Then, key by key, it
builds the model with and without that key (all other keys as decided so far) and times both
on DEVICE, alternating, `--rounds` rounds of `--repetitions` repetitions, medians. A key the
passes apply by default stays applied unless it is measured slower: by more than `--margin`
in the medians *and* in enough of the alternating rounds that chance is unlikely (a one-sided
sign test at 5%: 5 of 5 rounds, 7 of 7, 8 of 9, 9 of 11...); a key a pass declines by its cost
rule is applied only when measured faster by the same test (the statistics are
`runtime.statistics`', shared with iree-fusions-bench and bundles). On a noisy machine a decision
therefore stays with the pass's rule rather than follow one lucky round. A split verdict (the
medians apart beyond the margin, the rounds not agreeing enough) gets `--rounds` more rounds,
up to `--max-rounds`, before it is decided; so does a tuned build that looks slower than stock
in the last step. Where two builds are byte-identical (a key whose change leaves the compiled
program as it was, a tuned build that is stock's program) nothing is timed: the rule stands.
Keys that appear only once another decision changed the IR are measured too.
Last, the tuned build is timed against stock IREE at every size; if it is slower by more than
the margin at one, the keys that did not show a clear gain are turned off (then all keys), so
that the decisions never make the model slower than stock on this device. `--budget` bounds
the measuring of keys (checked before each key and each size: a key not measured at every
size keeps its rule); the check against stock runs after it whatever the budget, without
extra rounds once it is spent.

The file records the target (backend and chip, as IREE resolved it), the runtime device, the
tool versions, and per key the decision and the times measured. Compile with it:
`iree-fusions-compile ... --fusions-decisions=decisions.json`; a file can hold the keys of
several models (tune them into one file with `--resume`).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata

from ..compiler.decisions import Decision, DecisionSet, load
from ..compiler.files import UserError, check_output
from ..compiler.target import Target
from ..harness import api, sizes
from ..harness.reports import pass_summaries
from ..harness.timing import compare_latency
from .bench import FORM_CHOICES
from ..runtime.modules import add_parameters_argument, parameter_flags, parse_parameters
from ..runtime.statistics import (MARGIN, MAX_ROUNDS, clearly_better, ratio_interval, round_ratios,
                                  split_verdict)

PROG = "iree-fusions-tune"


@dataclass
class KeyInfo:
    """A family of candidates with one key, as one compile reported it."""

    key: str
    pass_name: str
    applied: bool  # by the configuration that reported it
    count: int = 1
    what: str = ""


@dataclass
class Build:
    vmfb: bytes
    keys: dict[str, KeyInfo]
    target: Target | None


@dataclass
class Tuner:
    source: str
    inputs: list
    function: str
    flags: list[str]
    args: argparse.Namespace
    workdir: str
    decided: DecisionSet | None = None
    builds: dict[tuple, Build] = field(default_factory=dict)
    compile_s: float = 0.0
    timing_s: float = 0.0
    # (label, inputs) per size the dynamic dims are measured at (`sizes.point_label`);
    # empty: one point, `inputs`, for a static program.
    points: list[tuple[str, list]] = field(default_factory=list)
    parameters: dict[str, str] = field(default_factory=dict)  # scope -> file, read at run time
    started: float = field(default_factory=time.time)

    def at_sizes(self) -> list[tuple[str, list]]:
        """(label, inputs) of every size to measure at."""
        return self.points or [("", self.inputs)]

    def over_budget(self) -> bool:
        """Whether `--budget` seconds have passed since the run started."""
        budget = getattr(self.args, "budget", 0)
        return bool(budget) and time.time() - self.started > budget

    # ------------------------------------------------------------ building

    def build(self, config: dict[str, tuple[str, bool]]) -> Build:
        """The plugin build with these decisions (key -> (pass, apply)); cached."""
        frozen = tuple(sorted(config.items()))
        if frozen in self.builds:
            return self.builds[frozen]
        path = os.path.join(self.workdir, f"config{len(self.builds)}.json")
        target = self.decided.target if self.decided is not None else Target("", "", "")
        DecisionSet(target, path, self.args.device, {
            k: Decision(k, p, a, path) for k, (p, a) in config.items()}).save(path)
        t0 = time.time()
        out = api.compile_file(self.source, device=self.args.device, target=self.args.target,
                               flags=self.flags, fusions=self.args.fusions,
                               decisions=path if config else None)
        self.compile_s += time.time() - t0
        built = Build(out.output, _keys(out.reports), _target(out.reports))
        self.builds[frozen] = built
        return built

    def stock(self) -> bytes:
        t0 = time.time()
        out = api.compile_file(self.source, device=self.args.device, target=self.args.target,
                               flags=self.flags, stock=True)
        self.compile_s += time.time() - t0
        return out.output

    def time_pair(self, without: bytes, with_: bytes, undecided=None, inputs=None
                  ) -> tuple[float, float, list[float]]:
        """(ms without, ms with, per-round ratios without/with), alternating rounds, on
        `inputs` (default: the first size's).

        `undecided(round_ratios, median_ratio)` says whether the evidence so far is a split
        verdict (medians apart, rounds not agreeing); while it is, `--rounds` more rounds are
        taken, up to `--max-rounds` in all (noisy devices), unless `--budget` is spent."""
        t0 = time.time()
        undecided = None if self.over_budget() else undecided

        def unsettled(without_rounds: list[float], with_rounds: list[float]) -> bool:
            return undecided(round_ratios(without_rounds, with_rounds),
                             statistics.median(without_rounds) / statistics.median(with_rounds))

        pair = compare_latency(without, with_, self.inputs if inputs is None else inputs,
                               function=self.function,
                               device=self.args.device, rounds=self.args.rounds,
                               repetitions=self.args.repetitions,
                               extra_flags=[*self.args.runtime_flag,
                                            *parameter_flags(self.parameters)],
                               max_rounds=self.args.max_rounds if undecided else None,
                               unsettled=unsettled if undecided else None)
        self.timing_s += time.time() - t0
        return pair.stock_ms, pair.plugin_ms, round_ratios(pair.stock_rounds, pair.plugin_rounds)


def _keys(reports: list[dict]) -> dict[str, KeyInfo]:
    """Every key a compile reports as applied, or as feasible but not applied."""
    out: dict[str, KeyInfo] = {}
    for p in pass_summaries(reports):
        for c in p.changes:
            _add(out, c.key, p.name, True, c.what)
        for s in p.skipped:
            if s.feasible:
                _add(out, s.key, p.name, False, s.reason)
    return out


def _add(out: dict, key: str, pass_name: str, applied: bool, what: str) -> None:
    if key in out:
        out[key].count += 1
        out[key].applied = out[key].applied or applied
    else:
        out[key] = KeyInfo(key, pass_name, applied, 1, what)


def _target(reports: list[dict]) -> Target | None:
    for r in reports:
        if r.get("target"):
            return Target.parse(r["target"])
    return None


# ---------------------------------------------------------------- the run


@dataclass
class Model:
    """What is tuned: the source file, its entry, its compile flags, its name in the file,
    the parameter files it reads, and (label, inputs) per size of its dynamic dims."""

    source: str
    function: str
    flags: list[str]
    name: str
    parameters: dict[str, str]
    points: list[tuple[str, list]]
    sizes: dict[str, list[int]]


def _load_model(args) -> Model:
    """MODEL as the flags say: a catalog model in `--form`, or a file; its sizes bound."""
    from ..models.catalog import FormError, all_models, form_artifact
    from ..harness.numerics import entry_function

    try:
        user_parameters = parse_parameters(args.parameters)
    except ValueError as e:
        raise UserError(str(e)) from None
    models = all_models()
    if args.model in models:
        try:
            artifact = form_artifact(models[args.model], args.form, args.workdir)
        except FormError as e:
            raise UserError(str(e)) from None
        path = artifact.write(args.workdir)
        name = args.model if args.form == "static" else f"{args.model} --form {args.form}"
        return _with_sizes(args, path, artifact.source, artifact.function, artifact.flags,
                           name, {**artifact.parameters, **user_parameters},
                           artifact.inputs, artifact.dynamic_dims, artifact.ranges)
    if not os.path.exists(args.model):
        raise UserError(f"'{args.model}' is neither a file nor a catalog model "
                        "(iree-fusions-bench --list)")
    if args.form != "static":
        raise UserError(f"--form exports a catalog model; {args.model} is a file, tuned as it "
                        "is")
    with open(args.model, "rb") as f:
        data = f.read()
    function = args.function or entry_function(data)
    _check_parameters(args.model, data, user_parameters)
    return _with_sizes(args, args.model, data, function, [], args.label or os.path.basename(
        args.model), user_parameters, None, None, None)


def _with_sizes(args, path: str, data: bytes, function: str, flags: list[str], name: str,
                parameters: dict[str, str], example, names, ranges) -> Model:
    """The Model with its sizes: `--size`, else (a catalog form) the example's spread."""
    dims = sizes.signature_dims(data, function, names)
    chosen = sizes.parse_sizes(args.size)
    if not chosen and dims and example is not None:
        chosen = sizes.default_sizes(dims, example, ranges)
    dims, chosen = sizes.bind_sizes(dims, chosen, name)
    points = [(sizes.point_label(p), sizes.inputs_at(data, function, dims, p, example))
              for p in sizes.size_points(chosen)] if dims else \
        [("", list(example) if example is not None else
          sizes.inputs_at(data, function, [], {}, None))]
    return Model(path, function, flags, name, parameters, points, chosen)


_PARAMETER_SCOPE = re.compile(rb'parameter\.named<"([^"]*)"::')


def _check_parameters(model: str, data: bytes, given: dict[str, str]) -> None:
    """A text file that reads external parameters of a scope no `--parameters` gives is an
    error now, not a runtime failure after the compiles."""
    missing = sorted({m.decode() for m in _PARAMETER_SCOPE.findall(data)} - set(given))
    if missing:
        scope = missing[0]
        raise UserError(f"{model} reads external parameters of scope "
                        f"{', '.join(repr(m) for m in missing)}: give their file with "
                        f"--parameters={scope + '=' if scope else ''}FILE (.irpa, .gguf, "
                        ".safetensors)")


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
        model = _load_model(args)
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
            apply, evidence, summary = _decide_key(tuner, info, current, toggled, args.margin)
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
        _check_against_stock(tuner, decided, config, args, model_name)
        decided.meta["seconds"] = decided.meta.get("seconds", 0) + round(
            time.time() - started, 1)
        decided.save(args.output)
        print(f"{PROG}: wrote {args.output}: {len(decided.entries)} decision(s) "
              f"({sum(not d.apply for d in decided.entries.values())} skip) in "
              f"{time.time() - started:.0f}s (compiles {tuner.compile_s:.0f}s, timing "
              f"{tuner.timing_s:.0f}s)", file=sys.stderr)
        return decided


def _decide_key(tuner: Tuner, info: KeyInfo, current: Build, toggled: Build, margin: float
                ) -> tuple[bool, dict, str]:
    """Whether key `info` is applied, the evidence for the file, and a line for the progress
    bar; `current` is the build with the key as its rule has it, `toggled` the other one.
    Timed at every size: a key measured slower at one is not applied; a key its rule
    declines is applied when measured faster at one and slower at none."""
    if toggled.vmfb == current.vmfb:
        # Both compile to the same program: nothing to measure, and noise must not decide.
        return info.applied, {"identical": True, "note": "the builds with and without it are "
                              "byte-identical"}, "same program either way -> rule"
    with_, without = (current, toggled) if info.applied else (toggled, current)

    def against_default(ratios: list[float], ratio: float) -> tuple[list[float], float]:
        """The timings as default / alternative: > 1 favours a change."""
        return _inverted(ratios, ratio) if info.applied else (ratios, ratio)

    at: dict[str, dict] = {}
    gain = loss = False
    for label, inputs in tuner.at_sizes():
        if at and tuner.over_budget():
            return info.applied, {"undecided": True, "sizes": at}, (
                f"budget spent before {label} -> rule")
        ms_without, ms_with, ratios = tuner.time_pair(
            without.vmfb, with_.vmfb,
            lambda rs, r: split_verdict(*against_default(rs, r), margin), inputs)
        ratio = ms_without / ms_with
        at[label] = {"ms_with": round(ms_with, 5), "ms_without": round(ms_without, 5),
                     "ratio": round(ratio, 4), "round_ratios": [round(r, 3) for r in ratios]}
        gain = gain or clearly_better(ratios, ratio, margin)
        loss = clearly_better(*_inverted(ratios, ratio), margin)
        if loss:  # slower at this size: not applied, whatever the others say
            break
    apply = not loss and (info.applied or gain)
    return apply, _size_evidence(at), _size_summary(at, apply)


def _size_evidence(at: dict[str, dict]) -> dict:
    """The file's evidence for a key: the figures of the size where it fared worst (the
    pass's reason quotes them) and, for a dynamic program, every size's under `sizes`."""
    worst_label = min(at, key=lambda label: at[label]["ratio"])
    evidence = dict(at[worst_label])
    if worst_label:
        evidence.update(size=worst_label, sizes=at)
    return evidence


def _size_summary(at: dict[str, dict], apply: bool) -> str:
    """`with 0.1 ms, without 0.2 ms -> apply`, per size for a dynamic program."""
    parts = [(f"{label}: " if label else "") + f"with {e['ms_with']:.4f} ms, without "
             f"{e['ms_without']:.4f} ms" for label, e in at.items()]
    return f"{'; '.join(parts)} -> {'apply' if apply else 'skip'}"


def _inverted(round_ratios: list[float], median_ratio: float) -> tuple[list[float], float]:
    """The same timings read the other way round (second build over first)."""
    return [1 / r for r in round_ratios], 1 / median_ratio


def _check_against_stock(tuner: Tuner, decided: DecisionSet, config: dict, args,
                         model_name: str) -> None:
    """The promise: tuned is not slower than stock here, at any size. If it is, keys without
    a clear gain (at every size) are turned off, then every key."""
    stock = tuner.stock()
    steps = [("tuned", config)]
    unclear = {k: (p, False) for k, (p, a) in config.items()
               if a and decided.entries[k].evidence.get("ratio", 0) <= 1 + args.margin}
    if unclear:
        steps.append(("without unclear gains", {**config, **unclear}))
    steps.append(("all off", {k: (p, False) for k, (p, _) in config.items()}))
    checks = decided.meta.setdefault("checks", {}).setdefault(model_name, [])
    for label, cfg in steps:
        build = tuner.build(cfg)
        if build.vmfb == stock:
            # Stock's program, byte for byte: not slower by construction, nothing to time.
            print(f"{PROG}: {label}: the same program as stock", file=sys.stderr)
            checks.append({"config": label, "identical_to_stock": True})
            _turn_off(decided, cfg, label)
            return
        if _not_slower_than_stock(tuner, stock, build, label, checks, args.margin) or \
                label == "all off":
            _turn_off(decided, cfg, label)
            return


def _not_slower_than_stock(tuner: Tuner, stock: bytes, build: Build, label: str,
                           checks: list, margin: float) -> bool:
    """Times `build` against stock at each size (a build that looks slower gets the extra
    rounds first); records each; False at the first size where it is slower."""
    for size, inputs in tuner.at_sizes():
        ms_stock, ms_tuned, ratios = tuner.time_pair(
            stock, build.vmfb, lambda rs, r: split_verdict(*_inverted(rs, r), margin), inputs)
        ratio = ms_stock / ms_tuned
        low, high, _ = ratio_interval(ratios)
        at = f" at {size}" if size else ""
        print(f"{PROG}: {label}{at}: stock {ms_stock:.4f} ms, plugin {ms_tuned:.4f} ms, "
              f"stock/plugin {ratio:.3f} [{low:.2f}, {high:.2f}] over {len(ratios)} rounds",
              file=sys.stderr)
        checks.append({"config": label, **({"size": size} if size else {}),
                       "ms_stock": round(ms_stock, 5), "ms_plugin": round(ms_tuned, 5),
                       "ratio": round(ratio, 4)})
        if ratio < 1 - margin:
            return False
    return True


def _turn_off(decided: DecisionSet, cfg: dict, label: str) -> None:
    """Record the keys the stock check's accepted step `cfg` turned off."""
    for k, (p, a) in cfg.items():
        if decided.entries[k].apply != a:
            old = decided.entries[k]
            decided.entries[k] = Decision(k, p, a, old.source, {
                **old.evidence, "note": f"turned off: {label} against stock"})


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
