# Depo1 N = 15 probe runs for Result 4 (and RoPE¼ + Canon at Mano L = 4 for Result 3c), then fla's
# ShortConvolution beside our Canon kernel; 2026-11-27, one hold of nvidia-h100-x4 (4 x H200 given).
# Code: commit e6ed0f4 as .whl/head.tar with the records so far (the sweep skips finished runs),
# carried with the wheels (fla-core 0.6.0, mamba_ssm 2.3.2.post1, hydra, omegaconf, antlr4, nltk,
# einops, defusedxml; pytest, pluggy, iniconfig in .whl/test/, installed only where pytest is missing):
git archive HEAD playground conf sweeps pyproject.toml README.md tests results/mini/runs \
  docs/bench/2026-11-27-x4-depo1-result4 > .whl/head.tar
# Device calls (run tool, kind nvidia-h100-x4, carry [.whl]), each within the 30-s warm window:
bash docs/bench/2026-11-27-x4-depo1-result4/hold.sh setup 500 1620   # installs, starts drive.sh:
#   playground-sweep findings scale=mini root=results/mini/runs results=3c,4 launcher=local \
#     per_gpu=4 deadline=1620
bash docs/bench/2026-11-27-x4-depo1-result4/hold.sh poll 575
# drive.sh's own benchmark window (t <= deadline - 420 s) closed before any GPU was left idle, so the
# last call started bench.sh, which waits for the sweep to end and then runs on GPU 0 alone:
setsid nohup bash docs/bench/2026-11-27-x4-depo1-result4/bench.sh > /tmp/runs/report/bench.log 2>&1 \
  < /dev/null & bash docs/bench/2026-11-27-x4-depo1-result4/hold.sh poll 598   # cut at 600 s (rc 124)
# locally: records into results/mini/runs/ (runs.tgz, logs left out), then
playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
playground-report site results/mini/runs out=docs/site
python docs/bench/2026-11-26-cost-estimate/check.py results/mini/runs > docs/bench/2026-11-26-cost-estimate/check.txt
