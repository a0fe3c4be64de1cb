# 2026-11-27, nvidia-h100-x4 asked. Code: the commit of this folder, carried as .whl/head.tar with
# the wheels (fla-core 0.6.0, hydra-core 1.3.2, omegaconf 2.3.0, antlr4-python3-runtime 4.9.3,
# nltk 3.9.1):
git archive HEAD playground conf sweeps pyproject.toml README.md tests \
  docs/bench/2026-11-27-x4-rope-and-grad-sync > .whl/head.tar
git archive HEAD results/mini/runs > .whl/runs.tar   # the records so far: the sweep skips them
# Device calls (run tool, kind nvidia-h100-x4, carry [.whl]), each within the 30-s warm window;
# HOLD_LEFT_S = 1,800 s less the device's held time at the call (an assumed 1,600 at the first):
bash docs/bench/2026-11-27-x4-rope-and-grad-sync/hold.sh start 30 1600
bash docs/bench/2026-11-27-x4-rope-and-grad-sync/hold.sh poll 560 HOLD_LEFT_S
bash docs/bench/2026-11-27-x4-rope-and-grad-sync/hold.sh poll 560   # until drive.jsonl says done
