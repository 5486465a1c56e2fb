"""iree-fusions-tune: measure every rewrite of a model on a device; write the decisions.

    iree-fusions-tune MODEL [iree-compile flags...] --device local-task -o decisions.json \\
        [--budget SECONDS] [--resume] [--rounds N] [--max-rounds N] [--repetitions N]
        [--margin 0.02]

MODEL is a catalog model (`iree-fusions-bench --list`) or an .mlir/.mlirbc file (random
inputs are made from its signature). The tuner compiles the model with the plugin and lists
its candidates by key (equal keys are one family, decided together). Then, key by key, it
builds the model with and without that key (all other keys as decided so far) and times both
on DEVICE, alternating, `--rounds` rounds of `--repetitions` repetitions, medians. A key the
passes apply by default stays applied unless it is measured slower: by more than `--margin`
in the medians *and* in enough of the alternating rounds that chance is unlikely (a one-sided
sign test at 5%: 5 of 5 rounds, 7 of 7, 8 of 9, 9 of 11...); a key a pass declines by its cost
rule is applied only when measured faster by the same test (the statistics are
bundle_runner's, shared with iree-fusions-bench and bundles). On a noisy machine a decision
therefore stays with the pass's rule rather than follow one lucky round. A split verdict (the
medians apart beyond the margin, the rounds not agreeing enough) gets `--rounds` more rounds,
up to `--max-rounds`, before it is decided; so does a tuned build that looks slower than stock
in the last step. Where two builds are byte-identical (a key whose change leaves the compiled
program as it was, a tuned build that is stock's program) nothing is timed: the rule stands.
Keys that appear only once another decision changed the IR are measured too.
Last, the tuned build is timed against stock IREE; if it is slower by more than the margin,
the keys that did not show a clear gain are turned off (then all keys), so that the decisions
never make the model slower than stock on this device.

The file records the target (backend and chip, as IREE resolved it), the runtime device, the
tool versions, and per key the decision and the times measured. Compile with it:
`iree-fusions-compile ... --fusions-decisions=decisions.json`; a file can hold the keys of
several models (tune them into one file with `--resume`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata

from ..compiler.decisions import Decision, DecisionSet, load
from ..compiler.files import UserError, check_output
from ..compiler.target import Target
from ..harness import api
from ..harness.reports import pass_summaries
from ..harness.timing import compare_latency
from ..runtime.bundle_runner import (MARGIN, MAX_ROUNDS, clearly_better, ratio_interval,
                                     round_ratios, split_verdict)

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

    def time_pair(self, without: bytes, with_: bytes, undecided=None
                  ) -> tuple[float, float, list[float]]:
        """(ms without, ms with, per-round ratios without/with), alternating rounds.

        `undecided(round_ratios, median_ratio)` says whether the evidence so far is a split
        verdict (medians apart, rounds not agreeing); while it is, `--rounds` more rounds are
        taken, up to `--max-rounds` in all (noisy devices)."""
        t0 = time.time()

        def unsettled(without_rounds: list[float], with_rounds: list[float]) -> bool:
            return undecided(round_ratios(without_rounds, with_rounds),
                             statistics.median(without_rounds) / statistics.median(with_rounds))

        pair = compare_latency(without, with_, self.inputs, function=self.function,
                               device=self.args.device, rounds=self.args.rounds,
                               repetitions=self.args.repetitions,
                               extra_flags=self.args.runtime_flag,
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


def _load_model(args) -> tuple[str, list, str, list[str], str]:
    """(source path, inputs, function, model flags, model name) of MODEL."""
    from ..models.catalog import all_models
    from ..harness.numerics import random_inputs

    models = all_models()
    if args.model in models:
        artifact = models[args.model].build()
        return (artifact.write(args.workdir), artifact.inputs, artifact.function,
                artifact.flags, args.model)
    if not os.path.exists(args.model):
        raise SystemExit(f"{PROG}: error: '{args.model}' is neither a file nor a catalog model "
                         "(iree-fusions-bench --list)")
    with open(args.model, "rb") as f:
        data = f.read()
    return args.model, random_inputs(data, args.function), args.function, [], \
        args.label or os.path.basename(args.model)


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
        source, inputs, function, model_flags, model_name = _load_model(args)
        tuner = Tuner(source, inputs, function, [*model_flags, *flags], args, workdir)
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
        tuner.decided = decided
        config = {k: (d.pass_name, d.apply) for k, d in decided.entries.items()}
        current = tuner.build(config)
        done: set[str] = set(decided.entries)
        print(f"{PROG}: {model_name} on {args.device} ({base.target}): "
              f"{len(current.keys)} key(s)", file=sys.stderr)
        while True:
            pending = [k for k in current.keys if k not in done]
            total = len(done) + len(pending)
            if not pending:
                break
            if args.budget and time.time() - started > args.budget:
                print(f"{PROG}: budget of {args.budget:g}s spent; {len(pending)} key(s) left "
                      "to the passes' rules", file=sys.stderr)
                break
            info = current.keys[pending[0]]
            toggled = tuner.build({**config, info.key: (info.pass_name, not info.applied)})
            apply, evidence, summary = _decide_key(tuner, info, current, toggled, args.margin)
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
    bar; `current` is the build with the key as its rule has it, `toggled` the other one."""
    if toggled.vmfb == current.vmfb:
        # Both compile to the same program: nothing to measure, and noise must not decide.
        return info.applied, {"identical": True, "note": "the builds with and without it are "
                              "byte-identical"}, "same program either way -> rule"
    with_, without = (current, toggled) if info.applied else (toggled, current)

    def against_default(ratios: list[float], ratio: float) -> tuple[list[float], float]:
        """The timings as default / alternative: > 1 favours a change."""
        return _inverted(ratios, ratio) if info.applied else (ratios, ratio)

    ms_without, ms_with, ratios = tuner.time_pair(
        without.vmfb, with_.vmfb, lambda rs, r: split_verdict(*against_default(rs, r), margin))
    ratio = ms_without / ms_with
    apply = info.applied != clearly_better(*against_default(ratios, ratio), margin)
    return apply, {"ms_with": round(ms_with, 5), "ms_without": round(ms_without, 5),
                   "ratio": round(ratio, 4), "round_ratios": [round(r, 3) for r in ratios]}, (
        f"with {ms_with:.4f} ms, without {ms_without:.4f} ms -> {'apply' if apply else 'skip'}")


def _inverted(round_ratios: list[float], median_ratio: float) -> tuple[list[float], float]:
    """The same timings read the other way round (second build over first)."""
    return [1 / r for r in round_ratios], 1 / median_ratio


def _check_against_stock(tuner: Tuner, decided: DecisionSet, config: dict, args,
                         model_name: str) -> None:
    """The promise: tuned is not slower than stock here. If it is, keys without a clear gain
    are turned off, then every key."""
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
        # A tuned build that looks slower than stock gets more rounds before keys go off.
        ms_stock, ms_tuned, ratios = tuner.time_pair(
            stock, build.vmfb, lambda rs, r: split_verdict(*_inverted(rs, r), args.margin))
        ratio = ms_stock / ms_tuned
        low, high, _ = ratio_interval(ratios)
        print(f"{PROG}: {label}: stock {ms_stock:.4f} ms, plugin {ms_tuned:.4f} ms, "
              f"stock/plugin {ratio:.3f} [{low:.2f}, {high:.2f}] over {len(ratios)} rounds",
              file=sys.stderr)
        checks.append({"config": label, "ms_stock": round(ms_stock, 5),
                       "ms_plugin": round(ms_tuned, 5), "ratio": round(ratio, 4)})
        if ratio >= 1 - args.margin or label == "all off":
            _turn_off(decided, cfg, label)
            return


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
                   help="stop measuring new keys after this many seconds (0: no limit)")
    p.add_argument("--fusions", default="all", help="plugin passes (default: all)")
    p.add_argument("--function", default="main", help="entry function (files only)")
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
