#!/bin/bash
# One device call: bash hold.sh start SECONDS HOLD_LEFT_S [PLAN] | poll SECONDS
#   start: copy the repository (the working tree that travelled) to /tmp/head, install the wheels
#          of .whl, start PLAN (plan.py, or scaling.py) detached, and a packer (every 20 s: the finished new run
#          records, checkpoints left out, into runs.tgz; the logs into logs.tgz);
#   HOLD_LEFT_S: the seconds of the hold the plan may use, from now;
#   both: copy the report to $OUT every 10 s until SECONDS have passed or the plan is done;
#   poll on a bare machine (the hold was lost between calls): say so and exit 3 at once.
set -u
B=docs/bench/2026-11-28-x2-depo1-findings
ROOT=/tmp/hold R=/tmp/hold/report
end=$((SECONDS + $2))
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WANDB_MODE=disabled
if [ "$1" = poll ] && [ ! -e $ROOT/marker ]; then echo "bare machine: nothing to poll"; exit 3; fi
if [ "$1" = start ]; then
  echo $(($(date +%s) + $3)) > /tmp/hold_end
  mkdir -p $R /tmp/head && touch $ROOT/marker
  tar cf - --exclude=./.whl . | tar xf - -C /tmp/head
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc
    python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > $R/gpu.txt
  cd /tmp/head && python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null
  setsid nohup python3 $B/${4:-plan.py} $ROOT $R > $ROOT/plan.log 2>&1 < /dev/null &
  setsid nohup bash -c 'cd /tmp/head; while sleep 20; do
    done=$(find results/mini/runs -name summary.json -newer '$ROOT'/marker \
           -exec grep -l "\"status\": \"finished\"" {} + 2> /dev/null | xargs -r -n1 dirname)
    [ -n "$done" ] && tar czf '$R'/.runs.tgz --exclude=checkpoints $done 2> /dev/null &&
      mv '$R'/.runs.tgz '$R'/runs.tgz
    tar czf '$R'/.logs.tgz --exclude=tmp/hold/report --exclude=checkpoints -C / tmp/hold 2> /dev/null &&
      mv '$R'/.logs.tgz '$R'/logs.tgz
    tar czf '$R'/.sweep_logs.tgz results/mini/runs/.findings_logs 2> /dev/null &&
      mv '$R'/.sweep_logs.tgz '$R'/sweep_logs.tgz
  done' > /dev/null 2>&1 < /dev/null &
  cd - > /dev/null
fi
while [ $SECONDS -lt $end ] && [ ! -e $ROOT/done ]; do sleep 10; cp $R/* "$OUT"/ 2> /dev/null; done
[ -e $ROOT/done ] && [ $SECONDS -le $((end - 15)) ] && sleep 25  # the packer's last round
cp $R/* "$OUT"/ 2> /dev/null
cut -c1-400 $R/plan.jsonl 2> /dev/null | tail -12; tail -3 $ROOT/plan.log
echo "hold left: $(($(cat /tmp/hold_end) - $(date +%s))) s"
