# 2026-11-28, nvidia-h100-x4 asked. Code: the commit of this folder, carried as .whl/head.tar with
# the wheels (fla-core 0.6.0, hydra-core 1.3.2, omegaconf 2.3.0, antlr4-python3-runtime 4.9.3,
# nltk 3.9.1; since the hold also mamba_ssm 2.3.2.post1 and einops 0.8.1 for the findings campaign):
git archive HEAD playground conf sweeps pyproject.toml README.md tests \
  docs/bench/2026-11-28-x4-rope-cell > .whl/head.tar
git archive HEAD results/mini/runs > .whl/runs.tar   # the records so far: the sweep skips them
# Device calls (run tool, carry [.whl]); the first names kind nvidia-h100-x4, every later one names
# no kind, each at once after the last; HOLD_LEFT_S = 1,800 s less the device's held time at the call:
bash docs/bench/2026-11-28-x4-rope-cell/hold.sh start 560 1600
bash docs/bench/2026-11-28-x4-rope-cell/hold.sh poll 560 1150                    # bare: the cell lost
CANONS=skip bash docs/bench/2026-11-28-x4-rope-cell/hold.sh start 345 390        # the scaling phases
# Later holds run these scripts as docs/paper_cell.md ("Running it on a device hold") says; the one
# that finished RoPE: ../2026-11-28-x4-rope-done/.
