# 2026-11-27, nvidia-h100-x2 asked, 2 x H200 given (gpu.txt), one hold of 1,576 s.
# Code: commit of this folder's dp.py and hold.sh, carried as .whl/head.tar with the wheels of
# docs/bench/2026-11-27-x4-depo1-result4 (fla-core 0.6.0, mamba_ssm 2.3.2.post1, hydra, omegaconf,
# antlr4, nltk, einops, defusedxml; pytest, pluggy, iniconfig in .whl/test/):
git archive HEAD playground conf sweeps pyproject.toml README.md tests \
  docs/bench/2026-11-27-x2-dp-diagnosis docs/bench/2026-11-27-x4-dp-profile > .whl/head.tar
git archive HEAD results/mini/runs > .whl/runs.tar   # the records so far: the sweep skips them
# Device calls (run tool, kind nvidia-h100-x2, carry [.whl]), each within the 30-s warm window:
bash docs/bench/2026-11-27-x2-dp-diagnosis/hold.sh          # dp.py's three phases, then the fla test
bash docs/bench/2026-11-27-x2-dp-diagnosis/campaign.sh start 570 1150
#   = playground-sweep findings scale=mini root=results/mini/runs launcher=local per_gpu=4 deadline=1150
bash docs/bench/2026-11-27-x2-dp-diagnosis/campaign.sh poll 540
# locally: the records into results/mini/runs/ (runs.tgz, the sweep's logs left out), then
playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
playground-report site results/mini/runs out=docs/site
python docs/bench/2026-11-26-cost-estimate/check.py results/mini/runs > docs/bench/2026-11-26-cost-estimate/check.txt
