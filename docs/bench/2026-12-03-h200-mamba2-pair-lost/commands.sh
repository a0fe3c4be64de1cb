# Device calls, in order (kind nvidia-h200, carry .whl; wheels as in ../2026-12-02-h200-r5-brevo1/commands.sh).
# 2026-12-03 12:50 and 12:53 UTC: "no device machine could be started right now" (91 s and 90 s of device time).
# 2026-12-03 13:04 UTC, code c5f8272 (this folder's gpu.txt, launch.log, load.txt, smi.csv, logs/):
bash docs/bench/hold.sh start 585 1440 findings results=R10-mamba2 scale=mini root=results/mini/runs per_gpu=2 margin=1.05
bash docs/bench/hold.sh poll 585
# an API error left more than 30 s before the next call: the hold was lost with about 150 s of training to go
bash docs/bench/hold.sh poll 290   # a bare machine: "nothing to poll" (exit 3), then given back
