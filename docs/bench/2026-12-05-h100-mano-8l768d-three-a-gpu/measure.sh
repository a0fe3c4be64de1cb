#!/bin/bash
# Three Mano 8L768D runs (RoPE + Canon-ABCD, L = 5, lr 5e-4, the fig7 mini recipe; seeds 0-2) started together on
# one GPU, then the third killed: tokens/s of each at three a GPU, then of the two left at two a GPU, on the same
# machine in one call. Run from the repository root on the device: bash <this> [SECONDS_THREE] [SECONDS_TWO]
# (defaults 95, 45); what it measured goes to $OUT (metrics.jsonl of each run, the row counts at the kill, smi.csv).
set -u
three=${1:-95} two=${2:-45} out=${OUT:-/tmp/out}
mkdir -p "$out" /tmp/three
export PYTHONUNBUFFERED=1 WANDB_MODE=disabled
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$out/gpu.txt"
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,power.draw --format=csv,noheader -l 5 > "$out/smi.csv" &
smi=$!
for seed in 0 1 2; do
  setsid playground-train train=paper train.steps=5000 train.warmup_steps=200 train.eval_every=1000 \
    train.ckpt_every=1000 train.log_every=50 task.eval_size=512 train.compile=True task=mano task.context=256 \
    train.batch_size=64 train.weight_decay=0.1 train.steps=10000 train.eval_every=2000 train.ckpt_every=2000 \
    task.L=5 mixer=rope canon=ABCD panel=mano variant=llama_rope_canon size=8L768D train.lr=5.0e-4 seed=$seed \
    out_dir=/tmp/three/s$seed > "$out/s$seed.log" 2>&1 &
  echo $! > /tmp/three/pid$seed
done
sleep "$three"
kill -9 -- -"$(cat /tmp/three/pid2)"
for seed in 0 1 2; do echo "s$seed $(cat /tmp/three/s$seed/metrics.jsonl 2> /dev/null | wc -l)"; done > "$out/rows_at_kill.txt"
copy() { for seed in 0 1 2; do cp /tmp/three/s$seed/metrics.jsonl "$out/s$seed.metrics.jsonl" 2> /dev/null; done; }
copy  # what the three measured comes back even if the call ends early
sleep "$two"
kill -9 -- -"$(cat /tmp/three/pid0)" -"$(cat /tmp/three/pid1)"; kill $smi
copy
cat "$out/rows_at_kill.txt"
python3 - "$out" << 'PY'
import json, statistics, sys
out = sys.argv[1]
cut = dict(line.split() for line in open(f"{out}/rows_at_kill.txt"))
for s in ("s0", "s1", "s2"):
    try:
        rows = [json.loads(l) for l in open(f"{out}/{s}.metrics.jsonl") if '"train"' in l]
    except FileNotFoundError:
        rows = []
    k = int(cut[s])
    a = [r["tokens_per_s"] for r in rows[:k] if r["step"] > 200]
    b = [r["tokens_per_s"] for r in rows[k + 1:]]
    print(s, "three:", len(a), round(statistics.median(a)) if a else None,
          "two:", len(b), round(statistics.median(b)) if b else None)
PY
