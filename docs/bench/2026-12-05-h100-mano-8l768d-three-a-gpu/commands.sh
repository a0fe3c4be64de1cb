# Device calls, 2026-12-05 15:3x UTC, code 071a031 plus measure.sh (uncommitted then; committed beside this file).
# The first try carried all of .whl (7 wheels, 3.4 MB): refused, the working tree over 64 MiB (git ls-files | tar:
#   64.09 MB, + the wheels 67.53 MB > 67.11 MB); no device time.
# Then, kind nvidia-h100-x1, a fresh machine, carrying only the four wheels a Llama run imports (0.42 MB):
bash docs/bench/2026-12-05-h100-mano-8l768d-three-a-gpu/measure.sh 95 45; cat /proc/uptime
#   carry: .whl/antlr4_python3_runtime-4.9.3-py3-none-any.whl .whl/defusedxml-0.7.1-py2.py3-none-any.whl
#          .whl/hydra_core-1.3.8-py3-none-any.whl .whl/omegaconf-2.3.1-py3-none-any.whl
#   146 s; budget 297 -> 88 s. give_back.
# Then, here: the files of $OUT into this folder (smi.csv did not come back: more than 8 files).
