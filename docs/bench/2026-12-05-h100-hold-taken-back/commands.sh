# Device calls, in order (carry .whl), 2026-12-05 from 09:08 UTC, code: the working tree of this commit's parent
#   plus results/mini/lr_check/fig7_mini/* moved into results/mini/runs/fig7_mini/ (git mv).
# Dry run here first (one GPU, lr 5e-4, two runs a GPU):
#   playground-sweep fig7 scale=mini panels=mano size=8L768D train.lr=5.0e-4 root=results/mini/runs launcher=local \
#     gpus=1 per_gpu=2 deadline=1400 margin=1.0 dry_run=true
#   -> 15 of 15 to do, 0.96 GPU-h (2 a GPU; 1.34 alone); 5 of 15 start by 1,400 s, the last ending at 1,289 s.
# 09:08  kind left out: no machine could be started (158 s of budget: 1,800 -> 1,642)
# 09:17  kind left out (nvidia-h200): none started (90 s)
# 09:21  nvidia-h200: none started (68 s)
# 09:29  nvidia-h200: none started (90 s)
# 09:34  nvidia-h100-x1: a machine, held 497 s at the answer (its start); the probe:
nvidia-smi --query-gpu=name,memory.total --format=csv; cat /proc/uptime; nproc   # H100 80GB HBM3, 81,559 MiB; uptime 30 s
# 09:35  at once, the hold left computed from held_s (1,800 - 497 - ~28):
HOLD_TESTS='-m gpu tests/test_gpu.py' bash docs/bench/hold.sh start 585 1275 fig7 scale=mini panels=mano \
  size=8L768D train.lr=5.0e-4 root=results/mini/runs per_gpu=2 margin=1.15
#   -> about 7.5 min in: "the device machine was taken back for other work before the call finished"; nothing came
#      back (391 s of budget: 1,303 -> 912).
# 09:46  nvidia-h100-x1: none asked for (a recent refusal); 09:50 nvidia-h100-x1: none started (105 s);
# 09:52  nvidia-h200: none started (90 s; 717 s left)
# 10:00-10:43  nvidia-h100-x1 and nvidia-h200 by turns, twelve calls: "no device machine was asked for" (a refusal
#   beside this one, 15 s each; nine) or none started (90 s each; three): 717 -> about 300 s of budget.
# 10:51  nvidia-h200, the GPU tests alone: "too little device-machine time is left to start another machine"
#   (222 s left).
