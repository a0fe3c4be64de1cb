#!/bin/bash
# One device call: bash hold.sh setup|poll SECONDS [DEADLINE_S]
#   setup: unpack the code and the records so far (.whl/head.tar, a git archive of the commit),
#          install the wheels, start drive.sh detached (setsid) with DEADLINE_S;
#   then, both: copy /tmp/runs/report/* to $OUT every 15 s until SECONDS have passed, so a call
#   cut short still brings back the last packed records.
set -u
end=$((SECONDS + $2))
B=docs/bench/2026-11-27-x4-depo1-result4
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WANDB_MODE=disabled
if [ "$1" = setup ]; then
  mkdir -p /tmp/head /tmp/runs/report && tar xf .whl/head.tar -C /tmp/head
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  python3 -c "import pytest" 2> /dev/null ||
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/test/*.whl
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > /tmp/runs/report/gpu.txt
  nproc >> /tmp/runs/report/gpu.txt
  python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" \
    >> /tmp/runs/report/gpu.txt
  cd /tmp/head && python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null
  setsid nohup bash $B/drive.sh "$3" > /tmp/runs/report/drive.log 2>&1 < /dev/null &
  cd - > /dev/null
fi
while [ $SECONDS -lt $end ]; do sleep 15; cp /tmp/runs/report/* "$OUT"/ 2> /dev/null; done
tail -3 /tmp/runs/report/drive.log; grep -v "^ *$" /tmp/runs/report/sweep.log | tail -4
