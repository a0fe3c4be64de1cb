#!/bin/bash
# Two Mamba2 + Canon-AB Depo1 (N = 15, K = 4) 8L512D runs at once on one GPU for WAIT seconds (default 200):
# their tokens/s a run against the run alone (397k over steps 200-1,000, README.md beside this file), and the GPU's
# utilisation. Run from the repository root on the device: bash docs/bench/2026-12-03-h200-r10-mamba2/share2.sh
set -u
OUT=${OUT:-/tmp/share2}; WAIT=${WAIT:-200}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null
export PYTHONUNBUFFERED=1 WANDB_MODE=disabled
args="train=paper train.warmup_steps=200 train.log_every=50 task.eval_size=512 train.compile=True task=depo1 task.K=4
  task.context=512 train.batch_size=64 train.steps=10000 train.eval_every=2000 train.ckpt_every=100000
  train.length_scales=[1,2,4] task.N=15 model=mamba2 mixer=mamba2_noconv1d canon=AB_nores
  train.compile_mode=reduce-overhead size=8L512D train.lr=0.001"
for s in 1 2; do
  setsid nohup python3 -m playground.run.train $args seed=$s out_dir=/tmp/share2_s$s > "$OUT/run_s$s.log" 2>&1 &
done
for i in $(seq 1 $((WAIT / 10))); do
  sleep 10; nvidia-smi --query-gpu=utilization.gpu,memory.used,power.draw --format=csv,noheader >> "$OUT/smi.csv"
done
pkill -f playground.run.train; sleep 3
for s in 1 2; do echo "s$s: $(grep '^step' "$OUT/run_s$s.log" | tail -4 | tr '\n' ' ')"; done
echo "smi: $(cut -d, -f1 "$OUT/smi.csv" | tr '\n' ' ')"
