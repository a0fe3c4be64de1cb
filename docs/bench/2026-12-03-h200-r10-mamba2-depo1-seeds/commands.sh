# Device calls, in order (kind nvidia-h200, carry .whl; wheels as in ../2026-12-02-h200-r5-brevo1/commands.sh).
# Dry run here first (code 5578bdf): the same command with gpus=1 deadline=1367 dry_run=true starts 2 of 5 runs.
# 2026-12-03 15:36 UTC, code 5578bdf (this folder's gpu.txt, launch.log, load.txt, smi.csv, logs/):
bash docs/bench/hold.sh start 585 1440 findings results=R10-mamba2 scale=mini root=results/mini/runs per_gpu=2 margin=1.05
bash docs/bench/hold.sh poll 585
bash docs/bench/hold.sh poll 240   # the launch ended at 15:59:32 UTC; runs.tgz unpacked into results/mini/runs/
# then, on the same machine, the graph-break log of ../2026-12-03-h200-mamba2-one-graph/ (graph_breaks_before.txt)
