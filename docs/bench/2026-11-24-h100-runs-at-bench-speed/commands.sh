# Runs at bench speed, 2026-11-24: one NVIDIA H100 80GB HBM3 (16 cores), torch 2.11.0+cu130, Triton 3.6.0,
# from the repository root with the package installed. speed.sh writes to $OUT.
# usage of speed.sh: bash speed.sh NAME STEPS overrides...  (STEPS: the training run's length; the runs took
# 400-600 steps, and only depo_mini's count, 400, is recorded: run_depo_mini_metrics.jsonl)
export OUT=${OUT:-/tmp/bench-speed}
S=docs/bench/2026-11-24-h100-runs-at-bench-speed/speed.sh
DEPO="task=depo1_K4 task.context=512 task.N=25 size=8L512D train=paper train.batch_size=64 train.compile=true"
bash $S depo_mini 400 $DEPO canon=ABCD
bash $S depo_nocanon "${STEPS:-400}" $DEPO canon=none
bash $S mano_mini "${STEPS:-400}" task=mano task.context=256 task.L=8 size=8L512D train=paper train.batch_size=64 train.compile=true canon=ABCD
bash $S lano_mini "${STEPS:-400}" task=cfg3f size=8L512D train=paper train.batch_size=16 train.compile=true canon=ABCD
# Four runs sharing the GPU as a local sweep runs them (3 loader workers each): 1.70 M tokens/s together
playground-sweep nope scale=mini launcher=local per_gpu=4 train.lr=1e-3 seed=0,1 train.steps=600 train.eval_every=0
