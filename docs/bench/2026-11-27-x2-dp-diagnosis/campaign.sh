#!/bin/bash
# The findings campaign on the same (warm) machine, after hold.sh: bash campaign.sh start|poll SECONDS [DEADLINE_S]
#   start: unpack the records so far (.whl/runs.tar, a git archive of results/mini/runs) into
#          /tmp/head and start, detached, the findings sweep with the deadline rule and a packer
#          (every 20 s the finished new records, checkpoints left out, into report/runs.tgz);
#   both: copy report/* to $OUT every 15 s until SECONDS have passed.
set -u
end=$((SECONDS + $2))
R=/tmp/runs/report
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WANDB_MODE=disabled
if [ "$1" = start ]; then
  mkdir -p $R && tar xf .whl/runs.tar -C /tmp/head && touch /tmp/runs/marker
  cd /tmp/head
  setsid nohup playground-sweep findings scale=mini root=results/mini/runs launcher=local \
    per_gpu=4 deadline="$3" > $R/sweep.log 2>&1 < /dev/null &
  setsid nohup bash -c 'while sleep 20; do
    done=$(find results/mini/runs -name summary.json -newer /tmp/runs/marker \
           -exec grep -l "\"status\": \"finished\"" {} + 2> /dev/null | xargs -r -n1 dirname)
    tar czf '$R'/runs.tgz.tmp --exclude=checkpoints results/mini/runs/.findings_logs $done \
      2> /dev/null && mv '$R'/runs.tgz.tmp '$R'/runs.tgz; done' > /dev/null 2>&1 < /dev/null &
  cd - > /dev/null
fi
while [ $SECONDS -lt $end ]; do sleep 15; cp $R/* "$OUT"/ 2> /dev/null; done
grep -v "^ *$" $R/sweep.log | tail -6
