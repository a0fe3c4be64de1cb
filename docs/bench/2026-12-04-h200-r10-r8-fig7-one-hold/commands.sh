# Device calls, in order (kind nvidia-h200, carry .whl), 2026-12-04, code f525785. The wheels in .whl: as
#   docs/bench/2026-12-04-h200-r10-mamba2-brevo1/commands.sh makes them.
# Dry runs here first (launcher=local gpus=1 deadline=<s> dry_run=true): R10-mamba2 with 1,630 s starts its one run
#   (586 s); R8 with 1,030 s one of six (538 s); fig7 with 480 s one (465 s).
bash docs/bench/hold.sh start 597 1735 findings results=R10-mamba2 scale=mini root=results/mini/runs per_gpu=1 margin=1.0 \
  --then findings results=R8-conv1d,R8-canon scale=mini root=results/mini/runs per_gpu=1 margin=1.0 \
  --then fig7 scale=mini root=results/mini/runs panels=depo1_K4,mano per_gpu=1 margin=1.0
bash docs/bench/hold.sh poll 597   # at once after the answer
bash docs/bench/hold.sh poll 515   # at once; the launches ended inside it (448 s)
# give_back (106 s of budget left). Then, here: tar xzf runs.tgz of the last call (every record since the start), and
#   python docs/bench/2026-11-26-cost-estimate/check.py results/mini/runs > docs/bench/2026-11-26-cost-estimate/check.txt
#   playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
#   playground-report site results/mini/runs out=docs/site findings=sweeps/findings.yaml
#   the fig7_depo1_K4 folder as results/mini/README.md says (heatmap ×2, table, curves, gaps)
