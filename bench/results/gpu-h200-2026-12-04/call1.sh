#!/bin/bash
# Call 1 on the GPU machine (runtime only): the sharktank LLM exports staged here by
# `bench/gpu_llm.py stage` (.gpu/llm.tar.xz), timed and profiled by `bench/gpu_llm.py run`.
# Also leaves the compiler wheel's first piece in /tmp/stage for call 2.
set -x
mkdir -p /tmp/stage && cp .whl1/*.part1 /tmp/stage/
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl1/iree_base_runtime-*.whl
export PYTHONPATH=/tmp/site:$PWD/python PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
python3 -c "import tarfile; tarfile.open('.whl1/llm-stage.tar.xz').extractall('/tmp')"
nvidia-smi -L; nproc; python3 -c "import numpy, iree.runtime; print(numpy.__version__)"
S=${LLM_SECONDS:-270}
timeout $S python3 bench/gpu_llm.py run /tmp/llm --device cuda \
    --models llama-gqa-32,toy-llama,llama3-8b-2l,toy-deepseek,llama-mha-hd128 \
    --seq-lens 128 --rounds 5 --max-rounds 5 --budget 8 --deadline $((S - 45)) --profile \
    --json $OUT/llm.json 2>&1 | tee $OUT/llm.log
echo "call1 done"
