#!/bin/bash
# A second device call: bash profile.sh. The Depo1 mini step (the scaling jobs' config, CUDA
# graphs) at batch 16, 32 and 64 on one GPU each, at once, under the PyTorch profiler
# (`playground-bench profile`, fixed data: the model's step alone): is the per-step cost that
# does not shrink with the batch the GPU's kernels or the host?
set -u
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WANDB_MODE=disabled
mkdir -p /tmp/head && tar xf .whl/head.tar -C /tmp/head
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
cd /tmp/head && python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu_profile.txt
for i in 0 1 2; do B=$((16 << i))
  CUDA_VISIBLE_DEVICES=$i playground-bench profile task=depo1_K4 task.context=512 task.N=15 \
    train=paper train.lr=1e-3 mixer=rope canon=ABCD size=8L512D train.batch_size=$B \
    train.compile=true train.compile_mode=reduce-overhead steps=30 warmup=10 top=25 \
    json=$OUT/profile_b$B.json > $OUT/profile_b$B.txt 2>&1 &
done; wait
head -3 $OUT/profile_b*.txt
