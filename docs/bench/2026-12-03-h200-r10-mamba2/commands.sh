# Device calls, in order (kind nvidia-h200, carry .whl; wheels as in ../2026-12-02-h200-r5-brevo1/commands.sh).
# 2026-12-03 05:27 UTC: "no device machine could be started right now" (91 s of device time).
# 2026-12-03 05:32 UTC, code 15cfaa4 (this folder's gpu.txt, launch.log, load.txt, smi.csv, logs/):
bash docs/bench/hold.sh start 585 1500 findings results=R10-mamba2 scale=mini root=results/mini/runs per_gpu=1 margin=1.15 --then fig7 scale=mini panels=mano size=8L768D root=results/mini/runs per_gpu=3 margin=1.15
bash docs/bench/hold.sh poll 585
# the hold was lost after this answer (an API error left more than 30 s before the next call)
# 2026-12-03 06:02 UTC, a new machine (share2/):
OUT=$OUT WAIT=190 bash docs/bench/2026-12-03-h200-r10-mamba2/share2.sh
