# Device calls, in order (kind nvidia-h200, carry .whl; wheels as in ../2026-12-02-h200-r5-brevo1/commands.sh).
# 2026-12-02 19:08 UTC, hold lost (>30 s between calls) at step ~6,550 of the Mamba2 run:
bash docs/bench/hold.sh start 585 1500 findings results=R10-mamba2 scale=mini root=results/mini/runs per_gpu=1 margin=1.15 --then fig7 scale=mini panels=mano size=8L512D root=results/mini/runs per_gpu=2 margin=1.15
# 2026-12-02 19:27 UTC: finished the two Mano 8L512D runs (records in results/mini/runs/fig7_mini); lost during launch 2:
bash docs/bench/hold.sh start 585 960 fig7 scale=mini panels=mano size=8L512D root=results/mini/runs per_gpu=2 margin=1.15 --then fig7 scale=mini panels=mano size=8L768D root=results/mini/runs per_gpu=4 margin=1.15
# 2026-12-03 00:59 UTC, lost after its first call:
bash docs/bench/hold.sh start 585 1500 findings results=R10-mamba2 scale=mini root=results/mini/runs per_gpu=1 margin=1.15 --then fig7 scale=mini panels=mano size=8L768D root=results/mini/runs per_gpu=2 margin=1.15
# 2026-12-03 02:22 UTC (this folder's gpu.txt, launch.log, load.txt, smi.csv, logs/); lost after its first call:
bash docs/bench/hold.sh start 585 1040 findings results=R10-mamba2 scale=mini root=results/mini/runs per_gpu=1 margin=1.15 --then fig7 scale=mini panels=mano size=8L768D root=results/mini/runs per_gpu=2 margin=1.15
