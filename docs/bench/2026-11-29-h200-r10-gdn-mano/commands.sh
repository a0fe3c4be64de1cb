# 2026-11-29, nvidia-h200 (the only kind lent). Code: the working tree of commit b2fef12 (it travels;
# hold.sh copies it to /tmp/head), with .whl carried as in ../2026-11-29-h200-r8-mano/commands.sh.
# What the launch would take, here first:
#   playground-sweep findings results=10,6,7,4,8,9,5 scale=mini root=results/mini/runs per_gpu=6 margin=0.9 \
#     whole=true launcher=local gpus=1 deadline=1529 dry_run=true
# One batch of tool calls (each later call finds the machine warm):
#   run kind=nvidia-h200 carry=[".whl"] timeout_s=600:
#     bash docs/bench/hold.sh start 585 1600 findings results=10,6,7,4,8,9,5 scale=mini root=results/mini/runs per_gpu=6 margin=0.9 whole=true
#   run timeout_s=600: bash docs/bench/hold.sh poll 585
#   run timeout_s=450: bash docs/bench/hold.sh poll 430
# (the launch had ended before the last poll; the machine went back idle 30 s after it)
# Then, here: the run records from runs.tgz into results/mini/runs/, and
#   playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
#   python docs/bench/2026-11-26-cost-estimate/check.py results/mini/runs > docs/bench/2026-11-26-cost-estimate/check.txt
