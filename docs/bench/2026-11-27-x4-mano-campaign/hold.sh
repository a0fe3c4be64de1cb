#!/bin/bash
# One device call of the campaign: bash hold.sh setup|poll SECONDS [DEADLINE_S]
#   setup: unpack the code (.whl/head.tar, git archive of the commit) and the wheels, install,
#          start campaign.py detached (setsid) with DEADLINE_S;
#   then, both: copy /tmp/runs/report/* to $OUT every 15 s until SECONDS have passed, so a call
#   cut short still brings back the last packed records.
set -u
end=$((SECONDS + $2))
B=docs/bench/2026-11-27-x4-mano-campaign
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WANDB_MODE=disabled
if [ "$1" = setup ]; then
  mkdir -p /tmp/head /tmp/runs/report && tar xf .whl/head.tar -C /tmp/head
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > /tmp/runs/report/gpu.txt
  nproc >> /tmp/runs/report/gpu.txt
  cd /tmp/head && python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null
  setsid nohup python3 $B/campaign.py /tmp/runs /tmp/runs/report "$3" \
    > /tmp/runs/report/campaign.log 2>&1 < /dev/null &
  cd - > /dev/null
fi
while [ $SECONDS -lt $end ]; do sleep 15; cp /tmp/runs/report/* "$OUT"/ 2> /dev/null; done
grep -c '"start"' /tmp/runs/report/campaign.jsonl; tail -4 /tmp/runs/report/campaign.jsonl
