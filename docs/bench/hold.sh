#!/bin/bash
# A sweep on a machine lent for one hold, driven by calls of at most SECONDS each:
#   bash docs/bench/hold.sh start SECONDS HOLD_LEFT_S SWEEP [ARG ...] [--then SWEEP [ARG ...] ...]
#   bash docs/bench/hold.sh poll SECONDS
# start: copy the repository (the working tree that travelled) to /tmp/head, install the wheels of
#   .whl (if any), and start detached `playground-sweep SWEEP ARG ... launcher=local gpus=<all>
#   deadline=<s>`, the deadline being HOLD_LEFT_S (the seconds of the hold the launch may use,
#   from this call's start) less the set-up and MARGIN_S (default 60 s, so that the records come
#   back); ARG holds the rest (scale=, root=, per_gpu=, margin=, whole=true, results=, ...). After
#   each --then, a further sweep, launched when the one before has ended, with the deadline then left
#   (none when less than MIN_LAUNCH_S, default 120 s): a launch that ends early leaves its time to
#   the next, in the same hold, with no machine start between. Beside
#   it a packer, every PACK_S s (default 20): the finished new run records under results/ (checkpoints
#   left out) into runs.tgz, the launch's and runs' logs into logs.tgz, a line of nvidia-smi per GPU (time, index,
#   use, memory, power, clock) and one of uptime.
# both: copy the report folder to $OUT (default /tmp/hold/out) every 10 s until SECONDS have
#   passed or the launch is done (seen within a second; then one more packing round at once, so a
#   run that ends in the call comes back with its answer: a run short enough can take one call, no
#   call boundary in its way), then print the launch's last lines and each new run's last
#   training row. poll on a machine without a launch (the hold was lost): say so, exit 3.
# Carry only the wheels the runs import (docs/reproducing_figures.md names them): the tree that travels has a
#   64 MiB limit (the tracked files 54.9 MB as a tar on 2026-12-07, the committed records' metrics.jsonl packed by
#   results/mini/regenerate.sh; 64.1 MB before, when all seven wheels no longer fit beside them).
# Run the dry run first, here: the same SWEEP ARG ... with gpus=<the machine's> deadline=<s>
# dry_run=true. Records: copy this call sequence into the dated folder of the campaign.
# HOLD_LEFT_S: a machine's start counts in its hold and may take minutes (8 on 2026-12-05), so start it with a
#   short first call (nvidia-smi) and pass the smaller of 1,800 less its answer's lease.held_s and its
#   lease.budget_left_s (the device time left; a one-GPU hold drew it second for second on 2026-12-05), less a
#   few seconds; then poll in calls of a few minutes: a machine taken back for other work returns nothing of the
#   call it was in.
# start again while the hold is warm (the last launch ended, in the call before): a second launch on the same
#   machine; the first packer stops, and runs.tgz and logs.tgz, once rewritten, hold what is newer than this start;
#   smi.csv and load.txt go on.
# HOLD_TESTS="PYTEST ARGS" (start): also run `python3 -m pytest -q PYTEST ARGS` in the copy, beside the launch (its
#   GPUs shared with the runs; e.g. HOLD_TESTS='-m gpu tests/test_gpu.py -k "cuda"'), its output into
#   gpu_tests.txt of the report folder, ending with a line "pytest exit N".
# HOLD_NO_INSTALL=1: the project is importable already (a trial on a development machine); HOLD_TMP: the
#   folder of hold/, head/ and hold_end (default /tmp; tests/test_hold_script.py tries the queue so).
set -u
T=${HOLD_TMP:-/tmp}  # the folders below; HOLD_TMP: elsewhere (a trial, a test)
ROOT=$T/hold R=$T/hold/report HEAD=$T/head END=$T/hold_end
MARGIN_S=${MARGIN_S:-60} MIN_LAUNCH_S=${MIN_LAUNCH_S:-120} PACK_S=${PACK_S:-20}
OUT=${OUT:-$ROOT/out}
end=$((SECONDS + $2))
export PYTHONUNBUFFERED=1 WANDB_MODE=disabled
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site
if [ "$1" = poll ] && [ ! -e $ROOT/marker ]; then echo "bare machine: nothing to poll"; exit 3; fi
if [ "$1" = start ]; then
  hold_left=$3; shift 3
  [ -e $ROOT/packer.pid ] && kill "$(cat $ROOT/packer.pid)" 2> /dev/null
  rm -f $ROOT/done
  echo $(($(date +%s) + hold_left)) > $END
  mkdir -p $R $HEAD "$OUT" && touch $ROOT/marker
  tar cf - --exclude=./.whl . | tar xf - -C $HEAD
  if ls .whl/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
  fi
  gpus=$(nvidia-smi -L 2> /dev/null | wc -l)
  { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; cat /proc/uptime
    python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > $R/gpu.txt 2>&1
  cd $HEAD
  [ -n "${HOLD_NO_INSTALL:-}" ] || python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null
  # the sweeps, one after the other, each with the deadline left at its start
  g=""; [ "$gpus" -gt 0 ] && g=" gpus=$gpus"
  { cat << EOS
launch() {
  left=\$((\$(cat $END) - \$(date +%s) - $MARGIN_S))
  if [ \$left -lt $MIN_LAUNCH_S ]; then echo "not launched, \$left s left: playground-sweep \$*"; return; fi
  echo "launch at \$(date -u +%FT%TZ): playground-sweep \$* launcher=local deadline=\$left$g"
  python3 -m playground.sweep.cli "\$@" launcher=local deadline=\$left$g
  echo "launch ended at \$(date -u +%FT%TZ), rc \$?"
}
EOS
    seg=""
    for a in "$@" --then; do
      if [ "$a" != --then ]; then seg="$seg $(printf %q "$a")"; continue; fi
      [ -n "$seg" ] && echo "launch$seg"
      seg=""
    done; } > $ROOT/launch.sh
  : > $R/launch.log
  if [ -n "${HOLD_TESTS:-}" ]; then  # the tests, as written (their quotes kept), beside the launch
    echo "python3 -m pytest -q -p no:cacheprovider $HOLD_TESTS" > $ROOT/tests.sh
    setsid nohup bash -c "bash $ROOT/tests.sh > $R/gpu_tests.txt 2>&1; echo \"pytest exit \$?\" >> $R/gpu_tests.txt" \
      > /dev/null 2>&1 < /dev/null &
  fi
  setsid nohup bash -c "bash $ROOT/launch.sh >> $R/launch.log 2>&1; touch $ROOT/done" \
    > /dev/null 2>&1 < /dev/null &
  # one packing round (run by the packer every PACK_S s and once more when the launch is done); each
  # round writes its archives under names of its own, then renames them, so two rounds never clash
  cat > $ROOT/pack.sh << EOS
cd $HEAD || exit 1
done=\$(find results -name summary.json -newer $ROOT/marker \\
       -exec grep -l '"status": "finished"' {} + 2> /dev/null | xargs -r -n1 dirname)
[ -n "\$done" ] && tar czf $R/.runs.\$\$.tgz --exclude=checkpoints \$done 2> /dev/null &&
  mv $R/.runs.\$\$.tgz $R/runs.tgz
logs=\$(find results \\( -path "*/.*logs/*" -o -name train.log \\) -newer $ROOT/marker 2> /dev/null)
[ -n "\$logs" ] && tar czf $R/.logs.\$\$.tgz \$logs 2> /dev/null && mv $R/.logs.\$\$.tgz $R/logs.tgz
rm -f $R/.runs.\$\$.tgz $R/.logs.\$\$.tgz
EOS
  setsid nohup bash -c 'while sleep '$PACK_S'; do bash '$ROOT'/pack.sh
    nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,power.draw,clocks.sm --format=csv,noheader \
      >> '$R'/smi.csv 2> /dev/null; uptime >> '$R'/load.txt
  done' > /dev/null 2>&1 < /dev/null &
  echo $! > $ROOT/packer.pid
  cd - > /dev/null
fi
i=0  # the launch's end seen within a second; the report copied out every 10 s
while [ $SECONDS -lt $end ] && [ ! -e $ROOT/done ]; do
  sleep 1; i=$((i + 1)); [ $((i % 10)) = 0 ] && cp $R/* "$OUT"/ 2> /dev/null
done
[ -e $ROOT/done ] && bash $ROOT/pack.sh  # the launch's last records, at once
cp $R/* "$OUT"/ 2> /dev/null
tail -15 $R/launch.log
find $HEAD/results -name metrics.jsonl -newer $ROOT/marker 2> /dev/null | while read -r f; do
  echo "$(basename "$(dirname "$f")") $(grep '"train"' "$f" | tail -1 | cut -c1-120)"
done
echo "hold left: $(($(cat $END) - $(date +%s))) s"
