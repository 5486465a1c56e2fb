#!/bin/bash
# Call 2 on the GPU machine: install the carried wheels, then the tuner on CUDA (before/after)
# and the parameter form with the tuned decisions. Results under $OUT.
set -x
W=$(ls /tmp/stage/iree_base_compiler-*.whl.part1 | sed 's/.part1$//')
cat /tmp/stage/$(basename $W).part1 .whl/$(basename $W).part2 > $W
PY=/opt/torch/.venv/bin/python3
$PY -m pip install -q --no-index --no-deps --target /tmp/site $W .whl/iree_base_runtime-*.whl .whl/iree_fusions-*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
head -1 /tmp/site/bin/iree-fusions-bench
nvidia-smi -L; nproc
M="$*"
B="--device cuda --rounds 5 --max-rounds 9 --budget 15"
cd $OUT
iree-fusions-bench $M $B --json before.json 2>&1 | tail -12
iree-fusions-bench $M $B --tune --tune-dir dec --json after.json 2>&1 | tail -12
iree-fusions-bench $M $B --form params --decisions dec/cuda-default.json --json params.json 2>&1 | tail -12
ls -R dec | head
