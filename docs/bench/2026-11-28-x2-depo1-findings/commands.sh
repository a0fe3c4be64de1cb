# The device calls of this record. Hold 1, issued as ONE batch of tool calls (docs/paper_cell.md says why):
#   run kind=nvidia-h200-x2 carry=[".whl"] timeout_s=600:
#       bash docs/bench/2026-11-28-x2-depo1-findings/hold.sh start 585 1680
#   run timeout_s=600: bash docs/bench/2026-11-28-x2-depo1-findings/hold.sh poll 585
#   run timeout_s=530: bash docs/bench/2026-11-28-x2-depo1-findings/hold.sh poll 500
#   give_back
# Hold 2 (one call and the give-back, one batch):
#   run kind=nvidia-h200-x2 carry=[".whl"] timeout_s=470:
#       bash docs/bench/2026-11-28-x2-depo1-findings/hold.sh start 440 440 scaling.py
#   give_back
# .whl: antlr4_python3_runtime 4.9.3, einops 0.8.1, fla_core 0.6.0, hydra_core 1.3.2,
#   mamba_ssm 2.3.2.post1, nltk 3.9.1, omegaconf 2.3.0 (pip download --no-deps, py3-none-any).
# Then, here: the run records from runs.tgz into results/mini/runs/, and
#   playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
