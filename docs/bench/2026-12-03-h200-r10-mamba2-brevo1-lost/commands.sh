# Device calls, in order (kind nvidia-h200, carry .whl; wheels as in ../2026-12-02-h200-r5-brevo1/commands.sh).
# Dry run here first (code 662cd1d): the same command with gpus=1 deadline=1428 dry_run=true starts 2 of 3 runs,
# the last ending at 1,172 s estimated.
# 2026-12-03 18:26 UTC, code 662cd1d (this folder's gpu.txt, launch.log, load.txt, smi.csv, logs/; the test beside it:
# ../2026-12-03-h200-mamba2-cudagraphs/gpu_tests_before.txt):
HOLD_TESTS='-m gpu tests/test_mixers_gpu.py -k "cuda_graphs and mamba2"' bash docs/bench/hold.sh start 585 1440 findings results=R10-mamba2 scale=mini root=results/mini/runs per_gpu=1 margin=1.15
bash docs/bench/hold.sh poll 585   # made at once after the answer above: "bare machine: nothing to poll" (exit 3)
