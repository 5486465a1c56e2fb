"""iree-fusions-tune's measuring: the builds (cached by their decisions), the alternating
timings, the decision for one key at every size, and the last check of the tuned build
against stock IREE (`tune.py` has the run over the keys and the command line)."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, field

from ..compiler.decisions import Decision, DecisionSet
from ..compiler.target import Target
from ..harness import api
from ..harness.bounds import judge_outputs
from ..harness.reports import pass_summaries
from ..harness.timing import compare_latency
from ..runtime.modules import parameter_flags
from ..runtime.statistics import clearly_better, ratio_interval, round_ratios, split_verdict

PROG = "iree-fusions-tune"
ATOL, RTOL = 1e-5, 1e-4  # outputs no pass's bound covers: as iree-fusions-bench's defaults


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
        built = Build(out.output, keys_of_reports(out.reports), _target(out.reports))
        self.builds[frozen] = built
        return built

    def stock(self) -> bytes:
        t0 = time.time()
        out = api.compile_file(self.source, device=self.args.device, target=self.args.target,
                               flags=self.flags, stock=True)
        self.compile_s += time.time() - t0
        return out.output

    def outputs_ok(self, stock: bytes, build: Build) -> tuple[bool, str]:
        """Whether `build`'s outputs are stock's at every size, judged by the bound of what
        its passes changed (`harness.bounds.judge_outputs`, as the bench judges): (ok, the
        bound, or where they differ)."""
        with open(self.source, "rb") as f:
            source = f.read()
        changed = {info.pass_name for info in build.keys.values() if info.applied}
        bound = ""
        for size, inputs in self.at_sizes():
            want, got = (api.run(vmfb, inputs, self.function, self.args.device,
                                 self.parameters or None) for vmfb in (stock, build.vmfb))
            ok, bound = judge_outputs(want, got, changed, source, inputs, self.function,
                                      ATOL, RTOL)
            if not ok:
                return False, f"{bound}{f', at {size}' if size else ''}"
        return True, bound

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


def keys_of_reports(reports: list[dict]) -> dict[str, KeyInfo]:
    """Every key a compile reports as applied, or as feasible but not applied, and the key
    of each form a change could take instead (`report.Choice`: chosen or not)."""
    out: dict[str, KeyInfo] = {}
    for p in pass_summaries(reports):
        for c in p.changes:
            _add(out, c.key, p.name, True, c.what)
        for c in p.choices:
            _add(out, c.key, p.name, c.chosen, c.what)
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


def decide_key(tuner: Tuner, info: KeyInfo, current: Build, toggled: Build, margin: float
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


def check_against_stock(tuner: Tuner, decided: DecisionSet, config: dict, args,
                        model_name: str) -> None:
    """The promise: tuned is not slower than stock here, at any size, and its outputs are
    stock's within the bound of what changed. If it is slower, or its outputs differ, keys
    without a clear gain (at every size) are turned off, then every key."""
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
        ok, bound = tuner.outputs_ok(stock, build)
        if not ok:
            print(f"{PROG}: {label}: outputs differ from stock's ({bound}): not kept",
                  file=sys.stderr)
            checks.append({"config": label, "outputs": "differ", "bound": bound})
            if label == "all off":
                _turn_off(decided, cfg, label)
                return
            continue
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
