# 2026-11-29, nvidia-h200 (the only kind lent). Code: commit e10d06b (model.canon.init_current of 24728d0 and
# the variant nope_canon_ABCD_nores_initc1 of sweeps/probe.yaml; it travels, hold.sh copies it to /tmp/head),
# with .whl carried as in ../2026-11-29-h200-r8-mano/commands.sh.
# What the launch would take, here first:
#   playground-sweep probe scale=mini panels=mano variants=nope_canon_ABCD_nores_initc1 root=results/mini/runs \
#     per_gpu=3 margin=0.9 launcher=local gpus=1 deadline=460 dry_run=true
# One call, then give_back (the 659 s of device time left after the R10-gdn hold):
#   run kind=nvidia-h200 carry=[".whl"] timeout_s=600:
#     bash docs/bench/hold.sh start 580 620 probe scale=mini panels=mano variants=nope_canon_ABCD_nores_initc1 root=results/mini/runs per_gpu=3 margin=0.9
#   give_back
# Then, here: the run records from runs.tgz into results/mini/runs/, and
#   playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
#   python docs/bench/2026-11-26-cost-estimate/check.py results/mini/runs > docs/bench/2026-11-26-cost-estimate/check.txt
