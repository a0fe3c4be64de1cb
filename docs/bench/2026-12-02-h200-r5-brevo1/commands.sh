# 2026-12-02, nvidia-h200 (the only kind lent). Code: the working tree of commit 38235d6 with the dry run's wording
# change of this record's commit (it travels; hold.sh copies it to /tmp/head), with .whl carried as in
# ../2026-11-29-h200-r8-mano/commands.sh (mamba_ssm 2.3.2.post1 built here with MAMBA_FORCE_BUILD=TRUE
# MAMBA_SKIP_CUDA_BUILD=TRUE, `pip wheel --no-deps --no-build-isolation` from the project's venv, which has torch).
# What the two launches would take, here first:
#   playground-sweep findings results=10,6,7,4,8,9,5 scale=mini root=results/mini/runs per_gpu=6 margin=1.15 \
#     whole=true launcher=local gpus=1 deadline=1428 dry_run=true
#   playground-sweep fig7 scale=mini panels=mano size=8L512D root=results/mini/runs per_gpu=6 margin=1.15 \
#     launcher=local gpus=1 deadline=660 dry_run=true
# One hold, the two launches queued in one start (the second with the deadline left when the first ends), the
# mamba_ssm GPU tests beside them:
#   run kind=nvidia-h200 carry=[".whl"] timeout_s=600:
#     HOLD_TESTS='-m gpu tests/test_mixers_gpu.py -k mamba_ssm' bash docs/bench/hold.sh start 585 1500 findings results=10,6,7,4,8,9,5 scale=mini root=results/mini/runs per_gpu=6 margin=1.15 whole=true --then fig7 scale=mini panels=mano size=8L512D root=results/mini/runs per_gpu=6 margin=1.15
#   run timeout_s=600: bash docs/bench/hold.sh poll 585
#   run timeout_s=320: bash docs/bench/hold.sh poll 290
#   give_back
# (The first `run` of the day was refused, "no device machine could be started right now", costing 91 s of the
# 1,800 s; the same call ~8 minutes later started the machine.)
# Then, here: the run records of the last runs.tgz into results/mini/runs/ (tar xzf runs.tgz -C .), and
#   python docs/bench/2026-11-26-cost-estimate/check.py results/mini/runs > docs/bench/2026-11-26-cost-estimate/check.txt
#   playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
#   playground-report site results/mini/runs out=docs/site findings=sweeps/findings.yaml
#   playground-report heatmap results/mini/runs/fig7_mini panel=mano agg=mean grid=fig7:mini vs_paper=7 out=results/mini/fig7_mano
#   playground-report table|curves results/mini/runs/fig7_mini panel=mano out=results/mini/fig7_mano
#   playground-report gaps results/mini/runs/fig7_mini panel=mano grid=fig7:mini out=results/mini/fig7_mano
