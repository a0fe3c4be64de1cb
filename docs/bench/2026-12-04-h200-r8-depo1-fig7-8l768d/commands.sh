# Device calls, in order (kind nvidia-h200, carry .whl), 2026-12-04, code 3c4c05a. The wheels in .whl: as
#   docs/bench/2026-12-04-h200-r10-mamba2-brevo1/commands.sh makes them.
# Dry run here first: findings results=R8-conv1d,R8-canon ... gpus=1 deadline=1675 dry_run=true: two of five runs start,
#   the last ending at 1,075 s at their estimates (538 s each).
# Two calls for a machine got none (each cost ≈ 90 s of the budget: 1,800 → 1,619 s); the third, ~15 min after the
#   first, started one, hence 1,545 s of hold for the launches (the budget left less ≈ 75 s):
bash docs/bench/hold.sh start 597 1545 findings results=R8-conv1d,R8-canon scale=mini root=results/mini/runs per_gpu=1 margin=1.0 \
  --then fig7 scale=mini root=results/mini/runs panels=depo1_K4,mano per_gpu=1 margin=1.0
bash docs/bench/hold.sh poll 597   # at once after the answer
bash docs/bench/hold.sh poll 290   # at once; the launches ended inside it (184 s)
# give_back (123 s of budget left). Then, here: tar xzf runs.tgz of the last call (every record since the start), and
#   python docs/bench/2026-11-26-cost-estimate/check.py results/mini/runs > docs/bench/2026-11-26-cost-estimate/check.txt
#   playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
#   playground-report site results/mini/runs out=docs/site findings=sweeps/findings.yaml
#   the fig7_depo1_K4 folder as results/mini/README.md says (heatmap ×2, table, curves, gaps)
