# Device calls, in order, 2026-12-05 from 14:36 UTC, code 96ed0fa (the records' git_sha; the working tree carried
#   .whl, made as docs/bench/2026-12-04-h200-r10-mamba2-brevo1/commands.sh makes them).
# Dry run here, before the hold (one GPU, lr 5e-4, two runs a GPU; the 4 runs of 2026-12-05 12:52 skipped):
#   playground-sweep fig7 scale=mini panels=mano size=8L768D train.lr=5.0e-4 root=results/mini/runs launcher=local \
#     gpus=1 per_gpu=2 deadline=1300 margin=1.15 dry_run=true
#   -> 5 of the 11 left start by the deadline: L = 3 RoPE and NoPE, then L = 4 RoPE¼ + Canon, NoPE + Canon, RoPE.
# 14:36  kind left out (nvidia-h100-x1): a machine at once, 90 s held at the answer; the probe (1,800 -> 1,709 s):
nvidia-smi --query-gpu=name,memory.total,memory.reserved --format=csv; cat /proc/uptime; date -u
#   -> H100 80GB HBM3, 81,559 MiB total, 480 MiB reserved
# 14:36  at once, the hold left min(1,800 - 90, 1,709) - 34, carry .whl (-> 1,118):
HOLD_TESTS='-m gpu tests/test_gpu.py' bash docs/bench/hold.sh start 585 1675 fig7 scale=mini panels=mano \
  size=8L768D train.lr=5.0e-4 root=results/mini/runs per_gpu=2 margin=1.15
bash docs/bench/hold.sh poll 290   # 14:46, at once after the answer (-> 822)
bash docs/bench/hold.sh poll 290   # 14:51 (-> 526)
bash docs/bench/hold.sh poll 290   # 14:56; the launch ended at 14:59:50 inside it (220 s; -> 300)
# give_back (297 s of budget left: too little for a run). Then, here: tar xzf runs.tgz of the last call (repository
#   root); logs.tgz's six run logs into logs/; gpu.txt, gpu_tests.txt, launch.log, load.txt, smi.csv as they came.
#   python docs/bench/2026-11-26-cost-estimate/check.py <a folder with the six runs under fig7_mini/>
#   bash results/mini/regenerate.sh
