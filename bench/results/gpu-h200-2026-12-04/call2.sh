#!/bin/bash
# Call 2 on the same (warm) GPU machine: the compiler wheel completed from call 1's piece, then
# the tuner on CUDA (before: the passes' rules; after: decisions measured on this GPU) and the
# parameter form (consolidated archive). Results under $OUT.
set -x
W=/tmp/stage/$(basename .whl2/*.part2 .part2)
cat /tmp/stage/$(basename $W).part1 .whl2/$(basename $W).part2 > $W || exit 3
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site2 $W .whl2/*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site2:/tmp/site PATH=/tmp/site2/bin:/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
cd $OUT
B="--device cuda --rounds 5 --max-rounds 7 --budget 10"
M="llama-start_pos-s64 bert-tiny-b1-s64 dlrm-b8"
timeout 90 iree-fusions-bench $M $B --json before.json 2>&1 | tail -14
timeout 140 iree-fusions-bench $M $B --tune --tune-dir dec --json after.json 2>&1 | tail -14
timeout 50 iree-fusions-bench dlrm-b8 dlrm-b64 $B --form params --json params.json 2>&1 | tail -12
echo "call2 done"
# As run: the compiler went to /tmp/site2 (pip --target skips a wheel whose iree/ folder exists in
# the target: the first try of this call installed nothing). The tune step's 140 s ran out after
# llama-start_pos-s64; call 3, on the same machine:
#   export PYTHONPATH=/tmp/site2:/tmp/site PATH=/tmp/site2/bin:/tmp/site/bin:$PATH; cd $OUT
#   timeout 190 iree-fusions-bench bert-tiny-b1-s64 dlrm-b8 $B --tune --tune-dir dec --json after.json
