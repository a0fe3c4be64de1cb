# Device calls, in order (kind nvidia-h200, carry .whl; wheels as in ../2026-12-02-h200-r5-brevo1/commands.sh).
# 0. 2026-12-03 18:27 UTC, code 662cd1d, beside the hold of ../2026-12-03-h200-r10-mamba2-brevo1-lost/ (its HOLD_TESTS):
#    pytest -m gpu tests/test_mixers_gpu.py -k "cuda_graphs and mamba2" -> gpu_tests_before.txt (failed)
# 1. 2026-12-03 18:44 UTC, a fresh machine, code 662cd1d + spread.py and run.sh of this folder (untracked then):
bash docs/bench/2026-12-03-h200-mamba2-cudagraphs/run.sh   # gpu.txt, spread.txt, smi.csv, train_*.txt, summary_mamba2.json
# 2. 2026-12-03 18:55 UTC, a fresh machine, with the test as changed (tests/test_mixers_gpu.py):
bash docs/bench/2026-12-03-h200-mamba2-cudagraphs/tests.sh   # gpu_tests.txt
