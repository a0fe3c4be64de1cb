# 2026-11-27, nvidia-h100-x4 asked. Code: the commit of this folder, carried as .whl/head.tar with
# the wheels (fla-core 0.6.0, hydra-core 1.3.2, omegaconf 2.3.0, antlr4-python3-runtime 4.9.3,
# nltk 3.9.1):
git archive HEAD playground conf sweeps pyproject.toml README.md tests \
  docs/bench/2026-11-27-x4-rope-and-grad-sync > .whl/head.tar
git archive HEAD results/mini/runs > .whl/runs.tar   # the records so far: the sweep skips them
# Device calls (run tool, carry [.whl]), each at once after the last; the second call found no warm
# machine and started bare (why: ../2026-11-28-x4-rope-cell/README.md);
# HOLD_LEFT_S = 1,800 s less the device's held time at the call:
bash docs/bench/2026-11-27-x4-rope-and-grad-sync/hold.sh start 560 1600          # 4 x H200: the cell
bash docs/bench/2026-11-27-x4-rope-and-grad-sync/hold.sh poll 560 1199           # bare 4 x H100
CANONS=skip bash docs/bench/2026-11-27-x4-rope-and-grad-sync/hold.sh start 430 440  # the scaling phases
