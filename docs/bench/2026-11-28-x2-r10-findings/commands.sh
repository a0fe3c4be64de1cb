# 2026-11-28, nvidia-h200-x2 (the 4-GPU kinds not lent). Code: the working tree of this folder's
# commit (it travels; hold.sh copies it to /tmp/head), with .whl carried: antlr4-python3-runtime
# 4.9.3 and mamba_ssm 2.3.2.post1 built here (`pip wheel --no-deps`; mamba_ssm with
# MAMBA_FORCE_BUILD=TRUE MAMBA_SKIP_CUDA_BUILD=TRUE: its Triton kernels only), einops 0.8.1,
# fla-core 0.6.0, hydra-core 1.3.2, nltk 3.9.1, omegaconf 2.3.0 (pip download --no-deps).
# What the launch would take, here first:
#   playground-sweep findings results=10,6,7,4,8,9,5,3b,3c scale=mini root=results/mini/runs \
#     launcher=local gpus=2 per_gpu=4 deadline=1320 margin=0.9 whole=true dry_run=true
# One batch of tool calls (each later call finds the machine warm):
#   run kind=nvidia-h200-x2 carry=[".whl"] timeout_s=600:
#     bash docs/bench/2026-11-28-x2-r10-findings/hold.sh start 585 1450 10,6,7,4,8,9,5,3b,3c 4 0.9
#   run timeout_s=600: bash docs/bench/2026-11-28-x2-r10-findings/hold.sh poll 585
#   run timeout_s=420: bash docs/bench/2026-11-28-x2-r10-findings/hold.sh poll 400
#   give_back
# Then, here: the run records from runs.tgz into results/mini/runs/, and
#   playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
