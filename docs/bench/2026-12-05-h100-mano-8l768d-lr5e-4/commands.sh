# Device calls, in order, 2026-12-05 from 12:26 UTC, code c8af344 (the records' git_sha; the working tree carried
#   .whl, made as docs/bench/2026-12-04-h200-r10-mamba2-brevo1/commands.sh makes them).
# Dry run here first (one GPU, lr 5e-4, two runs a GPU):
#   playground-sweep fig7 scale=mini panels=mano size=8L768D train.lr=5.0e-4 root=results/mini/runs launcher=local \
#     gpus=1 per_gpu=2 deadline=1400 margin=1.0 dry_run=true
#   -> 15 of 15 to do, 0.96 GPU-h (2 a GPU; 1.34 alone).
# 12:26  kind left out (nvidia-h200): no machine could be started; nvidia-h100-x1: none asked for (a recent refusal)
#   (1,800 -> 1,619 s of budget)
# 12:37  nvidia-h200: none started (90 s); nvidia-h100-x1: none asked for (15 s) (-> 1,514)
# 12:49  nvidia-h100-x1: none asked for (a recent refusal)
# 12:50  nvidia-h100-x1: a machine, held 362 s at the answer (its start); the probe (-> 1,408):
nvidia-smi --query-gpu=name,memory.total --format=csv; cat /proc/uptime; date -u   # H100 80GB HBM3, 81,559 MiB
# 12:52  at once, the hold left computed from held_s (1,800 - 362 - ~48), carry .whl (-> 815):
HOLD_TESTS='-m gpu tests/test_gpu.py' bash docs/bench/hold.sh start 585 1390 fig7 scale=mini panels=mano \
  size=8L768D train.lr=5.0e-4 root=results/mini/runs per_gpu=2 margin=1.15
bash docs/bench/hold.sh poll 290   # 13:02, at once after the answer (-> 519)
bash docs/bench/hold.sh poll 290   # 13:07; the launch ended at 13:11:18 inside it (268 s; -> 243)
# give_back (240 s of budget left). Then, here: tar xzf runs.tgz of the last call (repository root); logs.tgz's run
#   logs into logs/; gpu.txt, gpu_tests.txt, launch.log, load.txt, smi.csv as they came.
#   python docs/bench/2026-11-26-cost-estimate/check.py <a folder with the four runs under fig7_mini/>
#   bash results/mini/regenerate.sh
