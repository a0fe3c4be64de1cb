#!/bin/bash
# One device call on a 2-GPU host: bash hold.sh  (carry .whl; .whl/head.tar from commands.sh)
# Installs the code and wheels, runs the data-parallel phases of dp.py, then the fla backend's GPU
# test on GPU 0; everything it writes goes to $OUT as it is written.
set -u
B=docs/bench/2026-11-27-x2-dp-diagnosis
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WANDB_MODE=disabled
mkdir -p /tmp/head && tar xf .whl/head.tar -C /tmp/head
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
python3 -c "import pytest" 2> /dev/null ||
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/test/*.whl
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc
  python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > $OUT/gpu.txt
cd /tmp/head && python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null
# 1: one process at batch 64 and at batch 32 (each alone on a GPU, at once), both profiled
# 2: two processes at batch 64 (32 a rank), profiled; 3: two processes at batch 128 (64 a rank)
timeout 420 python3 $B/dp.py $OUT/dp "w1_b64:0:64:prof;w1_b32:1:32:prof" "w2_b64:0,1:64:prof" \
  "w2_b128:0,1:128"
CUDA_VISIBLE_DEVICES=0 timeout $((590 - SECONDS)) python3 -m pytest -q -m gpu tests/test_kernels.py \
  -k fla_backend -p no:cacheprovider > $OUT/fla_gpu_tests.txt 2>&1
echo "fla test exit $? at t=$SECONDS s" >> $OUT/fla_gpu_tests.txt
rm -rf $OUT/dp/runs/*/checkpoints
tail -3 $OUT/fla_gpu_tests.txt; cat $OUT/dp/dp.jsonl | cut -c1-250
