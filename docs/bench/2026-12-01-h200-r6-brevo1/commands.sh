# 2026-12-01, nvidia-h200 (the only kind lent). Code: the working tree of commit 5c1b06f (it travels; hold.sh
# copies it to /tmp/head), with .whl carried as in ../2026-11-29-h200-r8-mano/commands.sh.
# What the launches would take, here first:
#   playground-sweep findings results=10,6,7,4,8,9,5 scale=mini root=results/mini/runs per_gpu=6 margin=0.9 \
#     whole=true launcher=local gpus=1 deadline=1529 dry_run=true
#   playground-sweep fig7 scale=mini panels=depo1_K4,mano root=results/mini/runs per_gpu=4 margin=0.9 \
#     whole=true launcher=local gpus=1 deadline=1629 dry_run=true
# One hold, one batch of tool calls (each later call finds the machine warm):
#   run kind=nvidia-h200 carry=[".whl"] timeout_s=600:
#     bash docs/bench/hold.sh start 585 1600 findings results=10,6,7,4,8,9,5 scale=mini root=results/mini/runs per_gpu=6 margin=0.9 whole=true
#   run timeout_s=600: bash docs/bench/hold.sh poll 585
#   run timeout_s=450: bash docs/bench/hold.sh poll 430
# The launch had ended (751 s of device time left); at once, on the same warm machine, a second launch:
#   run carry=[".whl"] timeout_s=600:
#     rm -f /tmp/hold/done; bash docs/bench/hold.sh start 570 690 fig7 scale=mini panels=depo1_K4,mano root=results/mini/runs per_gpu=4 margin=0.9 whole=true
#   give_back
# (hold.sh now does the rm itself and stops the first packer; here both packers ran, so smi.csv and load.txt
# hold two lines per 20 s from the second launch on. With hold.sh's --then, one start does both launches:
#   bash docs/bench/hold.sh start 585 1600 findings results=10,6,7,4,8,9,5 ... whole=true --then fig7 scale=mini ...)
# Then, here: the run records from both runs.tgz into results/mini/runs/, and
#   playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
#   python docs/bench/2026-11-26-cost-estimate/check.py results/mini/runs > docs/bench/2026-11-26-cost-estimate/check.txt
