#!/bin/bash
# Rewrite every report of results/mini that is computed from the run records in results/mini/runs:
# the fig7 panel folders, the findings (with the blocks of README.md and results/mini/README.md
# they update), the results browser (docs/site) and the cost estimate's check. Run from the
# repository root, after new records are added under results/mini/runs; records unchanged, it
# rewrites the same bytes. About 2.5 minutes on 2 cores. New finished records are packed first
# (each metrics.jsonl as metrics.jsonl.gz: `playground-report pack`).
set -euo pipefail
playground-report pack results/mini/runs
for panel in depo1_K4 mano lano brevo1; do
  playground-report panel results/mini/runs/fig7_mini panel=$panel grid=fig7:mini \
    out=results/mini/fig7_$panel > /dev/null
done
playground-report findings results/mini/runs out=results/mini/findings \
  update=README.md,results/mini/README.md | tail -1
playground-report site results/mini/runs out=docs/site findings=sweeps/findings.yaml | tail -1
python docs/bench/2026-11-26-cost-estimate/check.py results/mini/runs \
  > docs/bench/2026-11-26-cost-estimate/check.tmp
mv docs/bench/2026-11-26-cost-estimate/check.tmp docs/bench/2026-11-26-cost-estimate/check.txt
git status --short -- results/mini README.md docs/site docs/bench/2026-11-26-cost-estimate
