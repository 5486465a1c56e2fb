"""Re-check a never-slower row below 0.98: are the stock, tuned and default .vmfb byte-identical
(sha256 of the compiled output, same flags), and stock vs tuned over 21 alternating rounds.

    python bench/recheck_losers.py local-task zoo-bart-b1 zoo-two-tower-b4
    RT_FLAGS=--task_topology_max_group_count=1 python bench/recheck_losers.py local-task MODEL
    HASH_ONLY=1 python bench/recheck_losers.py local-task MODEL     # identity only, no timing

The tuned build follows the file bench/never_slower.py wrote for that model and device
(`--decisions-dir`, default /tmp/ns/dec here: DECISIONS_DIR overrides).
"""

import hashlib
import json
import os
import sys
import tempfile

from iree_fusions.harness import api
from iree_fusions.models.catalog import all_models
from iree_fusions.harness.timing import compare_latency


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:10]


def main() -> None:
    device, names = sys.argv[1], sys.argv[2:]
    folder = os.environ.get("DECISIONS_DIR", "/tmp/ns/dec")
    flags = os.environ.get("RT_FLAGS", "").split()
    for name in names:
        a = all_models()[name].build()
        with tempfile.TemporaryDirectory() as d:
            p = a.write(d, "m")
            stock = api.compile_file(p, device=device, flags=a.flags, stock=True).output
            tuned = api.compile_file(p, device=device, flags=a.flags,
                                     decisions=os.path.join(folder, f"{name}-{device}.json")).output
            default = api.compile_file(p, device=device, flags=a.flags).output
        row = {"model": name, "device": device, "stock_sha": sha(stock), "tuned_sha": sha(tuned),
               "default_sha": sha(default)}
        if not os.environ.get("HASH_ONLY"):
            pair = compare_latency(stock, tuned, a.inputs, function=a.function, device=device,
                                   rounds=21, repetitions=20, extra_flags=flags)
            row.update(stock_ms=round(pair.stock_ms, 5), tuned_ms=round(pair.plugin_ms, 5),
                       ratio=round(pair.ratio, 4), flags=" ".join(flags))
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
