#!/bin/bash
# One device call: bash hold.sh start SECONDS HOLD_LEFT_S RESULTS PER_GPU MARGIN | poll SECONDS
#   start: copy the repository (the working tree that travelled) to /tmp/head, install the wheels
#          of .whl, and start detached the project's own launcher (`playground-sweep findings
#          results=RESULTS whole=true`) on the whole finding cells that fit, PER_GPU a GPU on every
#          GPU of the host, with
#          deadline = HOLD_LEFT_S less the set-up and MARGIN_S (so that the records come back) and
#          margin = MARGIN (the factor on the estimates);
#          its deadline guard stops, resumably, a run of a GPU projected to end late; and a packer
#          (every 20 s: the finished new run records, checkpoints left out, into runs.tgz; the
#          logs into logs.tgz);
#   HOLD_LEFT_S: the seconds of the hold the launch may use, from the call's start;
#   both: copy the report to $OUT every 10 s until SECONDS have passed or the launch is done;
#   poll on a bare machine (the hold was lost between calls): say so and exit 3 at once.
set -u
B=docs/bench/2026-11-28-x2-r10-findings
ROOT=/tmp/hold R=/tmp/hold/report MARGIN_S=60
end=$((SECONDS + $2))
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WANDB_MODE=disabled
if [ "$1" = poll ] && [ ! -e $ROOT/marker ]; then echo "bare machine: nothing to poll"; exit 3; fi
if [ "$1" = start ]; then
  echo $(($(date +%s) + $3)) > /tmp/hold_end
  mkdir -p $R /tmp/head && touch $ROOT/marker
  tar cf - --exclude=./.whl . | tar xf - -C /tmp/head
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; cat /proc/uptime
    python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > $R/gpu.txt
  cd /tmp/head && python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null
  deadline=$(($(cat /tmp/hold_end) - $(date +%s) - MARGIN_S))
  echo "launch at $(date -u +%FT%TZ), deadline=$deadline s" > $R/launch.log
  setsid nohup bash -c "python3 -m playground.sweep.cli findings results=$4 whole=true scale=mini root=results/mini/runs \
      launcher=local gpus=$(nvidia-smi -L | wc -l) per_gpu=$5 deadline=$deadline margin=$6 >> $R/launch.log 2>&1;
      rc=\$?; echo \"launch ended at \$(date -u +%FT%TZ), rc \$rc\" >> $R/launch.log;
      touch $ROOT/done" \
    > /dev/null 2>&1 < /dev/null &
  setsid nohup bash -c 'cd /tmp/head; while sleep 20; do
    done=$(find results/mini/runs -name summary.json -newer '$ROOT'/marker \
           -exec grep -l "\"status\": \"finished\"" {} + 2> /dev/null | xargs -r -n1 dirname)
    [ -n "$done" ] && tar czf '$R'/.runs.tgz --exclude=checkpoints $done 2> /dev/null &&
      mv '$R'/.runs.tgz '$R'/runs.tgz
    tar czf '$R'/.logs.tgz --exclude=checkpoints results/mini/runs/.findings_logs \
      $(find results/mini/runs -name train.log -newer '$ROOT'/marker) 2> /dev/null &&
      mv '$R'/.logs.tgz '$R'/logs.tgz
    nvidia-smi --query-gpu=utilization.gpu,memory.used,power.draw,clocks.sm --format=csv,noheader \
      >> '$R'/smi.csv; uptime >> '$R'/load.txt
  done' > /dev/null 2>&1 < /dev/null &
  cd - > /dev/null
fi
while [ $SECONDS -lt $end ] && [ ! -e $ROOT/done ]; do sleep 10; cp $R/* "$OUT"/ 2> /dev/null; done
[ -e $ROOT/done ] && [ $SECONDS -le $((end - 15)) ] && sleep 25  # the packer's last round
cp $R/* "$OUT"/ 2> /dev/null
tail -15 $R/launch.log
for f in /tmp/head/results/mini/runs/probe_mini/*/metrics.jsonl; do
  [ $f -nt $ROOT/marker ] && echo "$(basename $(dirname $f)) $(grep '"train"' $f | tail -1 | cut -c1-120)"
done 2> /dev/null
echo "hold left: $(($(cat /tmp/hold_end) - $(date +%s))) s"
