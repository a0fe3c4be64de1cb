# The device calls of this record (kind nvidia-h200: one H200, 16 cores; the only kind lent at the start).
# Hold 1, issued as ONE batch of tool calls (docs/paper_cell.md says why):
#   run kind=nvidia-h200 carry=[".whl"] timeout_s=600:
#       bash docs/bench/2026-11-28-h200-findings/hold.sh start 585 1450 findings_hold1.yaml 6 0.9
#   run timeout_s=600: bash docs/bench/2026-11-28-h200-findings/hold.sh poll 585
#   run timeout_s=360: bash docs/bench/2026-11-28-h200-findings/hold.sh poll 330
#   give_back
# The launch inside it (hold.sh; deadline = the hold's seconds left less the set-up and 60 s):
#   python3 -m playground.sweep.cli docs/bench/2026-11-28-h200-findings/findings_hold1.yaml scale=mini \
#       root=results/mini/runs launcher=local gpus=1 per_gpu=6 deadline=1378 margin=0.9
# Hold 2 (one call and the give-back, one batch):
#   run kind=nvidia-h200 carry=[".whl"] timeout_s=420: bash docs/bench/2026-11-28-h200-findings/workers.sh
#   give_back
# .whl: antlr4_python3_runtime 4.9.3, einops 0.8.1, fla_core 0.6.0, hydra_core 1.3.2,
#   mamba_ssm 2.3.2.post1, nltk 3.9.1, omegaconf 2.3.0 (pip download --no-deps, py3-none-any).
# Then, here: the run records from runs.tgz into results/mini/runs/, and
#   playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
#   python docs/bench/2026-11-26-cost-estimate/check.py   # the GPU-time table of results/mini/README.md
