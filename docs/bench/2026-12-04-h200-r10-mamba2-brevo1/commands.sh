# Device calls, in order (kind nvidia-h200, carry .whl), 2026-12-04, code b05df9c. The wheels in .whl, made here:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform any -d .whl \
#     fla-core==0.6.0 hydra-core==1.3.8 nltk==3.10.4
#   pip download --no-deps -d .whl omegaconf==2.3.1 defusedxml==0.7.1            (from the project's venv)
#   pip wheel --no-deps -w .whl antlr4-python3-runtime==4.9.3
#   MAMBA_SKIP_CUDA_BUILD=TRUE MAMBA_FORCE_BUILD=TRUE pip wheel --no-deps --no-build-isolation -w .whl mamba-ssm==2.3.2.post1
# Dry runs here first: the same launches with launcher=local gpus=1 deadline=<s> dry_run=true (each starts one run).
bash docs/bench/hold.sh start 597 700 findings results=R10-mamba2 scale=mini root=results/mini/runs per_gpu=1 margin=1.0   # seed 0 (597 s)
bash docs/bench/hold.sh poll 90      # at once: the launch had ended 2 s after the call; the run records came back
bash docs/bench/hold.sh start 597 700 findings results=R10-mamba2 scale=mini root=results/mini/runs per_gpu=1 margin=1.0   # seed 1 (584 s)
# 549 s of budget left, too little for seed 2 (≈ 586 s): a fig7 run whose estimate fits instead
bash docs/bench/hold.sh start 500 515 fig7 scale=mini root=results/mini/runs panels=depo1_K4,mano per_gpu=1 margin=1.0   # 373 s
# give_back (145 s of budget left). Then, here: tar xzf runs.tgz of each call (the records into results/mini/runs/), and
#   python docs/bench/2026-11-26-cost-estimate/check.py results/mini/runs > docs/bench/2026-11-26-cost-estimate/check.txt
#   playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
#   playground-report site results/mini/runs out=docs/site findings=sweeps/findings.yaml
#   the fig7_depo1_K4 folder as results/mini/README.md says (heatmap ×2, table, curves, gaps)
