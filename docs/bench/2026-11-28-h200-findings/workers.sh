#!/bin/bash
# One device call: a mini run alone on the GPU with 1 and with 3 loader workers, Depo1 (K = 4,
# N = 15, NoPE + Canon-ABCD with SiLU) and Mano (L = 4, GLA + Canon-ABCD without residual), the
# configs of the findings launch; 600 steps each, one after another; tokens/s of steps 300-600.
set -u; mkdir -p /tmp/w
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WANDB_MODE=disabled
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null
common="train=paper train.warmup_steps=200 train.steps=600 train.eval_every=100000
  train.ckpt_every=100000 train.log_every=50 task.eval_size=64 train.compile=True
  train.batch_size=64 train.lr=0.001 seed=0"
depo1="task=depo1 task.K=4 task.context=512 task.N=15 mixer=nope canon=ABCD model.canon.activation=silu"
mano="task=mano task.context=256 train.weight_decay=0.1 task.L=4 mixer=gla canon=ABCD_nores"
for task in depo1 mano; do for w in 1 3; do
  out=/tmp/w/${task}_w$w
  timeout 200 python3 -m playground.run.train $common ${!task} data.num_workers=$w out_dir=$out \
    > $out.log 2>&1
  echo "$task workers=$w: $(grep -o 'tok/s [0-9,]*' $out/train.log | tail -6 | tr '\n' ' ')"
  cp $out/train.log "$OUT"/${task}_w$w.log 2> /dev/null
done; done
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
