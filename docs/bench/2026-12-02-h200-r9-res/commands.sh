# 2026-12-02, nvidia-h200 (the only kind lent). Code: the working tree of commit 98cc2e5 (it travels; hold.sh
# copies it to /tmp/head), with .whl carried as in ../2026-11-29-h200-r8-mano/commands.sh.
# What the launches would take, here first:
#   playground-sweep findings results=10,6,7,4,8,9,5 scale=mini root=results/mini/runs per_gpu=6 margin=1.15 \
#     whole=true launcher=local gpus=1 deadline=1428 dry_run=true
#   playground-sweep fig7 scale=mini panels=mano root=results/mini/runs per_gpu=4 margin=1.15 \
#     launcher=local gpus=1 deadline=420 dry_run=true
# One hold, two sweeps queued in one start, the GPU tests beside the first:
#   run kind=nvidia-h200 carry=[".whl"] timeout_s=600:
#     HOLD_TESTS='-m gpu tests/test_gpu.py -k "tiny_run_trains_on_cuda or deterministic"' bash docs/bench/hold.sh start 585 1500 findings results=10,6,7,4,8,9,5 scale=mini root=results/mini/runs per_gpu=6 margin=1.15 whole=true --then fig7 scale=mini panels=mano root=results/mini/runs per_gpu=4 margin=1.15
#   run timeout_s=600: bash docs/bench/hold.sh poll 585
#   run timeout_s=330: bash docs/bench/hold.sh poll 290
#   give_back
# Then, here: the run records of the last poll's runs.tgz into results/mini/runs/ (tar xzf runs.tgz -C .), and
#   python docs/bench/2026-11-26-cost-estimate/check.py results/mini/runs > docs/bench/2026-11-26-cost-estimate/check.txt
#   playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
#   playground-report site results/mini/runs out=docs/site findings=sweeps/findings.yaml
