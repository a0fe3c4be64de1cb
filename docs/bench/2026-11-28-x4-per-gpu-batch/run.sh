#!/bin/bash
# One device call on the 4-GPU host: bash run.sh
# How much of data parallel's shortfall at 2 and 4 processes is the smaller batch per GPU: one
# process at the batch that each rank trains on at 2 and 4 processes, side by side with one process
# at the full batch, the jobs of drive.py's scaling phases of 2026-11-28-x4-rope-cell otherwise.
# Phase 1: four jobs at once on GPUs 0-3; phase 2: the full-batch jobs, two at once (as there).
set -u
R=$OUT
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WANDB_MODE=disabled
mkdir -p /tmp/head && tar xf .whl/head.tar -C /tmp/head
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc
  python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > $R/gpu.txt
cd /tmp/head && python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null
DEPO1="task=depo1_K4 task.context=512 task.N=15 train=paper train.warmup_steps=200 train.lr=1e-3
  task.eval_size=64 train.compile=true train.compile_mode=reduce-overhead mixer=rope canon=ABCD
  size=8L512D"
CFG3F="experiment=lano_paper train.lr=1e-3 task.gen_samples=8 task.eval_size=8
  train.save_samples=false"
COMMON="train.steps=500 train.log_every=50 train.eval_every=0 train.ckpt_every=5000
  train.progress=false"
job() {  # NAME GPU JOBS_ON_HOST BASE BATCH
  CUDA_VISIBLE_DEVICES=$2 PLAYGROUND_HOST_RUNS=$3 python3 -m torch.distributed.run \
    --nproc_per_node=1 --master_port=$((29500 + $2)) -m playground.run.train $4 \
    train.batch_size=$5 $COMMON out_dir=/tmp/runs/$1 > $R/$1.log 2>&1
}
job depo1_b16 0 4 "$DEPO1" 16 & job depo1_b32 1 4 "$DEPO1" 32 &
job cfg3f_b24 2 4 "$CFG3F" 24 & job cfg3f_b48 3 4 "$CFG3F" 48 & wait
job depo1_b64 0 2 "$DEPO1" 64 & job cfg3f_b96 1 2 "$CFG3F" 96 & wait
python3 - > $R/per_gpu_batch.jsonl <<'PY'
import json
from pathlib import Path
for run in sorted(Path("/tmp/runs").iterdir()):
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r.get("split") == "train"]
    a = [r for r in rows if r["step"] <= 200][-1]
    later = [r for r in rows if 200 < r["step"] <= 400]
    b = later[-1]
    rate = (b["tokens"] - a["tokens"]) / (b["train_time_s"] - a["train_time_s"])
    print(json.dumps({"job": run.name, "tokens_per_s": round(rate),
                      "intervals": [round(r["tokens_per_s"]) for r in later]}))
PY
cat $R/per_gpu_batch.jsonl
