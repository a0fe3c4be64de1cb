#!/bin/bash
# One device call on the 4-GPU host: [CANONS=…] [LR=…] bash hold.sh start|poll SECONDS [HOLD_LEFT_S]
#   (CANONS: the paper cell's variants in drive.py's order, default none: RoPE; LR: its learning
#   rate, default 1e-3)
#   start: unpack the code (.whl/head.tar) and the records so far (.whl/runs.tar: the findings
#          sweep skips them), install the wheels, start drive.py detached, and a packer (every
#          20 s: the finished new findings records, checkpoints left out, into runs.tgz; the logs
#          into logs.tgz);
#   HOLD_LEFT_S: the seconds left of the machine hold now (from the device's held time), which
#          drive.py plans against;
#   both: copy the report to $OUT every 10 s until SECONDS have passed or the plan is done
#          (then after 25 s more, for the packer's last round);
#   poll on a bare machine (the hold was lost between calls): say so and exit 3 at once;
#   start also unpacks the records that earlier calls brought back (.whl/back/*.tgz, each a
#          runs.tgz), so that a findings sweep started again skips them.
set -u
B=docs/bench/2026-11-28-x4-rope-cell
ROOT=/tmp/hold R=/tmp/hold/report
end=$((SECONDS + $2))
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 WANDB_MODE=disabled
if [ "$1" = poll ] && [ ! -e $ROOT/marker ]; then echo "bare machine: nothing to poll"; exit 3; fi
[ -n "${3:-}" ] && echo $(($(date +%s) + $3)) > /tmp/hold_end
if [ "$1" = start ]; then
  mkdir -p $R /tmp/head && touch $ROOT/marker
  tar xf .whl/head.tar -C /tmp/head && tar xf .whl/runs.tar -C /tmp/head
  for back in .whl/back/*.tgz; do [ -e "$back" ] && tar xzf "$back" -C /tmp/head; done
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nvidia-smi topo -m
    nproc; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > $R/gpu.txt
  cd /tmp/head && python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null
  setsid nohup python3 $B/drive.py $ROOT $R "${LR:-1e-3}" "${CANONS:-none}" > $ROOT/drive.log 2>&1 < /dev/null &
  setsid nohup bash -c 'cd /tmp/head; while sleep 20; do
    done=$(find results/mini/runs -name summary.json -newer '$ROOT'/marker \
           -exec grep -l "\"status\": \"finished\"" {} + 2> /dev/null | xargs -r -n1 dirname)
    [ -n "$done" ] && tar czf '$R'/.runs.tgz --exclude=checkpoints $done 2> /dev/null &&
      mv '$R'/.runs.tgz '$R'/runs.tgz
    tar czf '$R'/.logs.tgz --exclude=tmp/hold/report --exclude=checkpoints -C / tmp/hold \
      2> /dev/null; tar czf '$R'/.logs2.tgz results/mini/runs/.findings_logs 2> /dev/null
    mv '$R'/.logs.tgz '$R'/logs.tgz; mv '$R'/.logs2.tgz '$R'/findings_logs.tgz 2> /dev/null
  done' > /dev/null 2>&1 < /dev/null &
  cd - > /dev/null
fi
while [ $SECONDS -lt $end ]; do sleep 10; cp $R/* "$OUT"/ 2> /dev/null
  grep -q '"decision": "done"' $R/drive.jsonl 2> /dev/null && sleep 25 && break; done
cp $R/* "$OUT"/ 2> /dev/null
cut -c1-400 $R/drive.jsonl 2> /dev/null; tail -2 $ROOT/drive.log
echo "hold left: $(($(cat /tmp/hold_end) - $(date +%s))) s"
