"""The one place where alternating timings become a verdict: iree-fusions-bench, bundles
(`run_bundle.py`) and iree-fusions-tune all decide with these functions (`judge`: the bench's
and the bundles' verdict; `clearly_better`, `split_verdict`: the tuner's rule), and take
their rounds with `alternate`."""

from __future__ import annotations

import argparse
import math
import statistics  # the standard library's (absolute import)
import time
from collections.abc import Callable, Sequence

from .manifest import ROW_KEYS


SIGN_LEVEL = 0.05  # the one-sided sign test's level
# Relative: an interval within this far of 1 is the bench's "about the same"; the tuner's
# `clearly_better` needs the medians this far apart.
MARGIN = 0.02
MAX_ROUNDS = 21  # an unsettled verdict gets more rounds up to this many
BUDGET_S = 60.0  # ... and while a model's timing has taken less than this
FASTER, SLOWER, SAME, NOISE = "faster", "slower", "about the same", "within noise"


def rounds_needed(n: int, level: float = SIGN_LEVEL) -> int:
    """The fewest of n rounds that must agree for a one-sided sign test at `level` (more
    than n when n rounds cannot reach it: 5 of 5, 7 of 7, 8 of 9, 9 of 11, 15 of 21)."""
    tail = 0.0
    for k in range(n, -1, -1):
        tail += math.comb(n, k) / 2 ** n
        if tail > level:
            return k + 1
    return 0


def clearly_better(round_ratios: Sequence[float], median_ratio: float,
                   margin: float = MARGIN, level: float = SIGN_LEVEL) -> bool:
    """Whether the second build beats the first (ratios: first/second time, per round and
    of the medians): by more than `margin` in the medians and in enough rounds (sign test)."""
    wins = sum(r > 1 for r in round_ratios)
    return median_ratio > 1 + margin and wins >= rounds_needed(len(round_ratios), level)


def split_verdict(round_ratios: Sequence[float], median_ratio: float,
                  margin: float = MARGIN) -> bool:
    """The medians favour the second build beyond `margin`, but too few rounds agree to say
    so: more rounds may settle it."""
    return median_ratio > 1 + margin and not clearly_better(round_ratios, median_ratio, margin)


def round_ratios(first_rounds: Sequence[float], second_rounds: Sequence[float]
                 ) -> list[float]:
    """first/second per round (rounds where either time is not positive are left out)."""
    return [a / b for a, b in zip(first_rounds, second_rounds) if a > 0 and b > 0]


def ratio_interval(round_ratios: Sequence[float], level: float = SIGN_LEVEL
                   ) -> tuple[float, float, float]:
    """(low, high, confidence): a distribution-free confidence interval of the median
    per-round ratio, by order statistics. With c = rounds_needed(n), low is the (n+1-c)-th
    smallest ratio and high the c-th: low > 1 exactly when c rounds favour the second build,
    i.e. when the one-sided sign test at `level` does, so each bound is that test and the
    interval covers with 1 - 2 P(Binomial(n, 1/2) >= c) >= 1 - 2 level (e.g. 94% of 5
    rounds, 92% of 21). Fewer than 5 rounds cannot reach that: their range, with its lower
    confidence (0 for one round)."""
    ratios = sorted(round_ratios)
    n = len(ratios)
    if n == 0:
        return math.nan, math.nan, 0.0
    c = min(rounds_needed(n, level), n)
    tail = sum(math.comb(n, k) for k in range(c, n + 1)) / 2 ** n
    return ratios[n - c], ratios[c - 1], max(0.0, 1 - 2 * tail)


def judge(stock_rounds: Sequence[float], plugin_rounds: Sequence[float],
          margin: float = MARGIN, level: float = SIGN_LEVEL) -> dict:
    """The verdict on alternating rounds (each side's figure per round, paired by round).

    ratio: the median of the per-round stock/plugin ratios (> 1: the plugin is faster), the
    point its interval is about (the ratio of the two medians, taken from different rounds,
    can lie outside it when the machine's speed drifts); ratio_low, ratio_high,
    ratio_confidence: `ratio_interval` of the per-round ratios. The verdict says what that
    interval shows, once it has its full confidence (>= 1 - 2 level: 5 rounds or more):

    - SAME ("about the same"): the whole interval lies within the margin,
      1/(1+margin) <= low and high <= 1+margin (before the two below: a consistent 1%
      difference is the same for the bench's purpose);
    - FASTER: low > 1, the interval lies above 1, which is the one-sided sign test at
      `level` (`ratio_interval`); SLOWER: high < 1. However small the difference, as long as
      the interval reaches beyond the margin;
    - NOISE ("within noise"): anything else, i.e. the interval straddles 1 and reaches
      beyond the margin (or there are too few rounds for its confidence): undecided.

    settled: SAME, and FASTER or SLOWER whose median lies beyond the margin. A smaller
    difference (median within the margin) is called on the evidence of all the rounds the
    budget allows, not settled early: at equal speeds all 5 of 5 rounds fall on one side 1
    time in 16, and a 1-2% drift between runs would then decide the first run's verdict.
    `alternate` takes more rounds while a verdict is not settled. `clearly_better` and
    `split_verdict`, the tuner's rule, are not this one."""
    stock_ms = statistics.median(stock_rounds) if stock_rounds else math.nan
    plugin_ms = statistics.median(plugin_rounds) if plugin_rounds else math.nan
    ratios = round_ratios(stock_rounds, plugin_rounds)
    if ratios:
        ratio = statistics.median(ratios)
    else:
        ratio = stock_ms / plugin_ms if plugin_ms > 0 else math.inf
    low, high, confidence = ratio_interval(ratios, level)
    within = 1 / (1 + margin) <= ratio <= 1 + margin  # the median: a small difference
    if confidence < 1 - 2 * level:  # too few rounds (none: low and high are NaN)
        verdict = NOISE
    elif 1 / (1 + margin) <= low and high <= 1 + margin:
        verdict = SAME
    elif low > 1:
        verdict = FASTER
    elif high < 1:
        verdict = SLOWER
    else:
        verdict = NOISE
    return {"stock_ms": stock_ms, "plugin_ms": plugin_ms, "ratio": ratio, "ratio_low": low,
            "ratio_high": high, "ratio_confidence": confidence, "verdict": verdict,
            "settled": verdict == SAME or (verdict != NOISE and not within),
            "rounds": len(ratios), "margin": margin,
            "stock_rounds_ms": list(stock_rounds), "plugin_rounds_ms": list(plugin_rounds)}


def timing_fields(judgement: dict) -> dict:
    """The part of a `judge` result that goes into a result row."""
    return {k: v for k, v in judgement.items() if k in ROW_KEYS}


def timing_plan(rounds: int, repetitions: int, max_rounds: int) -> str:
    """What a timing does, for progress lines: `5 rounds x 10 reps, up to 21 if unsettled`."""
    more = f", up to {max_rounds} if unsettled" if max_rounds > rounds else ""
    return f"{rounds} rounds x {repetitions} reps{more}"


def add_timing_arguments(p: argparse.ArgumentParser) -> None:
    """The timing options of iree-fusions-bench and run_bundle.py."""
    p.add_argument("--rounds", type=int, default=5,
                   help="alternating timing rounds (0: none); the verdict may take more")
    p.add_argument("--max-rounds", type=int, default=MAX_ROUNDS,
                   help="while a verdict is unsettled, take --rounds more rounds, up to this "
                   "many (default %(default)s; = --rounds: never more)")
    p.add_argument("--budget", type=float, default=BUDGET_S, metavar="SECONDS",
                   help="no further rounds once a model's timing took this long "
                   "(default %(default)g)")
    p.add_argument("--margin", type=float, default=MARGIN,
                   help="an interval of the ratio within this far of 1 is 'about the same' "
                   "(default %(default)g)")
    p.add_argument("--repetitions", type=int, default=10, help="repetitions per round")


def alternate(time_side: Callable[[str], float], *, rounds: int = 5,
              max_rounds: int | None = None, budget_s: float | None = None,
              unsettled: Callable[[list[float], list[float]], bool] | None = None
              ) -> tuple[list[float], list[float]]:
    """Alternating rounds of stock and plugin: (stock's figures, plugin's), one per round.

    `time_side(side)` ("stock" or "plugin") times one side once (e.g. its median
    repetition); stock goes first on even rounds, plugin on odd ones, so a drift of the
    machine touches both. After `rounds` rounds, while `unsettled(stock, plugin)` (default:
    `judge` says the verdict is not settled), `rounds` more are taken, up to `max_rounds` in
    all (default `rounds`: never more) and only while fewer than `budget_s` seconds went."""
    max_rounds = rounds if max_rounds is None else max_rounds
    unsettled = unsettled or (lambda s, p: not judge(s, p)["settled"])
    times: dict[str, list[float]] = {"stock": [], "plugin": []}
    started = time.monotonic()
    goal = rounds
    while True:
        for r in range(len(times["stock"]), goal):
            for side in (("stock", "plugin") if r % 2 == 0 else ("plugin", "stock")):
                times[side].append(time_side(side))
        if (goal >= max_rounds or rounds <= 0
                or (budget_s is not None and time.monotonic() - started >= budget_s)
                or not unsettled(times["stock"], times["plugin"])):
            return times["stock"], times["plugin"]
        goal = min(goal + rounds, max_rounds)
