# 2026-11-29, nvidia-h200 (the only kind lent). Code: the working tree of commit 773c38c with the variant
# nope_canon_ABCD_nores_fixed added to sweeps/probe.yaml (it travels; hold.sh copies it to /tmp/head), with
# .whl carried as in ../2026-11-29-h200-r8-mano/commands.sh.
# What the launch would take, here first:
#   playground-sweep probe scale=mini panels=mano variants=nope_canon_ABCD_nores_fixed root=results/mini/runs \
#     launcher=local gpus=1 per_gpu=3 deadline=470 margin=0.9 dry_run=true
# One call, then give_back (the 611 s of device time left after the Result 8 hold):
#   run kind=nvidia-h200 carry=[".whl"] timeout_s=580:
#     bash docs/bench/hold.sh start 560 575 probe scale=mini panels=mano variants=nope_canon_ABCD_nores_fixed root=results/mini/runs per_gpu=3 margin=0.9
#   give_back
# Then, here: the run records from runs.tgz into results/mini/runs/, the finding R4-nores-fixed in
# sweeps/findings.yaml, and
#   playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
#   python docs/bench/2026-11-26-cost-estimate/check.py results/mini/runs > docs/bench/2026-11-26-cost-estimate/check.txt
