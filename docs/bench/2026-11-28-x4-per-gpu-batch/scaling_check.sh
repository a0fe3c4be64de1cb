#!/bin/bash
# A third device call: bash scaling_check.sh. `playground-bench scaling` with its rank's-batch
# reference (rank_batch=true, the default) on the Depo1 mini config at 1 and 2 processes: one
# process at batch 64, two at 32 each, one at 32; cap and data parallel's own efficiency.
set -u
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WANDB_MODE=disabled
mkdir -p /tmp/head && tar xf .whl/head.tar -C /tmp/head
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
cd /tmp/head && python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null
playground-bench scaling task=depo1_K4 task.context=512 task.N=15 size=8L512D train=paper \
  train.batch_size=64 train.lr=1e-3 train.warmup_steps=100 canon=ABCD train.compile=true \
  train.compile_mode=reduce-overhead procs=2 steps=250 skip=150 log_every=50 \
  json=$OUT/scaling_check.json 2>&1 | grep -v Warning | tail -5 | tee $OUT/scaling_check.txt
