"""Replays a verdict rule on the rounds `verdict_check.py` recorded (no new timing).

    python bench/verdict_replay.py /work/runs/vc30 [--rule bench|wide-same]

Each default run is cut at the first settled prefix of 5, 10, 15, 20, 21 rounds, as
`statistics.alternate` would have stopped it. A default run recorded under another rule
may have stopped earlier than the replayed rule would, and then the replay uses the rounds
it has. The replayed verdict is compared with the same rule's verdict on the 21-round run.

Rules:
- `bench`: `statistics.judge`, the bench's rule.
- `wide-same`: the bench's rule, plus *about the same* for an interval that straddles 1 with
  the median within the margin and the whole interval within twice the margin. A difference
  within twice the margin is settled only after 10 rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence

from iree_fusions.runtime.statistics import MARGIN, MAX_ROUNDS, NOISE, SAME, alternate, judge

Verdict = tuple[str, bool, float, float, float]  # verdict, settled, ratio, low, high


def bench_rule(stock: Sequence[float], plugin: Sequence[float]) -> Verdict:
    j = judge(stock, plugin)
    return j["verdict"], j["settled"], j["ratio"], j["ratio_low"], j["ratio_high"]


def wide_same_rule(stock: Sequence[float], plugin: Sequence[float],
                   margin: float = MARGIN) -> Verdict:
    verdict, settled, ratio, low, high = bench_rule(stock, plugin)
    wide = 2 * margin
    within = 1 / (1 + margin) <= ratio <= 1 + margin
    if verdict == NOISE and within and 1 / (1 + wide) <= low and high <= 1 + wide:
        verdict = SAME
    small = 1 / (1 + wide) <= ratio <= 1 + wide
    settled = verdict == SAME or (verdict != NOISE and not within and
                                     (not small or len(stock) >= 10))
    return verdict, settled, ratio, low, high


RULES: dict[str, Callable[[Sequence[float], Sequence[float]], Verdict]] = {
    "bench": bench_rule, "wide-same": wide_same_rule}


def sequential(row: dict, rule, rounds: int = 5, max_rounds: int = MAX_ROUNDS
               ) -> tuple[Verdict, int]:
    """The verdict a default run would have printed, and after how many rounds: the bench's
    own `statistics.alternate`, fed the recorded figures instead of new timings (the
    budget ignored; never more rounds than were recorded)."""
    recorded = {"stock": iter(row["stock_rounds_ms"]), "plugin": iter(row["plugin_rounds_ms"])}
    stock, plugin = alternate(
        lambda side: next(recorded[side]), rounds=rounds,
        max_rounds=min(max_rounds, len(row["stock_rounds_ms"])),
        unsettled=lambda s, p: not rule(s, p)[1])
    return rule(stock, plugin), len(stock)


def _text(v: Verdict, rounds: int) -> str:
    return f"{v[2]:.2f} [{v[3]:.2f}, {v[4]:.2f}] {v[0]} ({rounds})"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", help="a verdict_check.py --out folder (default-K.json, r21.json)")
    p.add_argument("--rule", choices=sorted(RULES), default="bench")
    args = p.parse_args(argv)
    rule = RULES[args.rule]
    with open(os.path.join(args.folder, "r21.json")) as f:
        reference = {row["model"]: row for row in json.load(f)}
    agree = total = 0
    print("| model | default run (replayed) | 21 rounds | agree |\n| --- | --- | --- | --- |")
    for k in range(10):
        path = os.path.join(args.folder, f"default-{k}.json")
        if not os.path.exists(path):
            break
        with open(path) as f:
            for row in json.load(f):
                if not row.get("stock_rounds_ms"):
                    continue
                mine, rounds = sequential(row, rule)
                ref_row = reference[row["model"]]
                ref = rule(ref_row["stock_rounds_ms"], ref_row["plugin_rounds_ms"])
                same = mine[0] == ref[0]
                agree += same
                total += 1
                ref_text = _text(ref, len(ref_row["stock_rounds_ms"]))
                print(f"| {row['model']} | {_text(mine, rounds)} | {ref_text} | "
                      f"{'yes' if same else 'no'} |")
    print(f"\n{agree} of {total} agree under the '{args.rule}' rule")
    return 0 if agree == total else 1


if __name__ == "__main__":
    sys.exit(main())
