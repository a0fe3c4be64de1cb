#!/bin/bash
# The hold's work, run detached in /tmp/head (a git archive of the commit, with the records so far)
# by hold.sh: bash drive.sh DEADLINE_S
# 1. The findings sweep for Results 3c and 4 (the runs they still need), 4 runs at most per GPU,
#    each started only if its estimated time ends within DEADLINE_S (the sweep's deadline= rule).
# 2. Every 20 s, the finished new records (checkpoints left out) and the sweep's logs are packed
#    into report/runs.tgz (written aside, then renamed).
# 3. On the first GPU the sweep has left for good (no run of it there at two checks 20 s apart)
#    while enough time is left: fla's ShortConvolution beside our Canon kernel (GPU tests, the
#    per-layer benchmark, the compiled training step), into report/bench.tgz.
set -u
R=/tmp/runs/report
cd /tmp/head
start=$SECONDS
touch /tmp/runs/marker
playground-sweep findings scale=mini root=results/mini/runs results=3c,4 launcher=local \
  per_gpu=4 deadline="$1" > $R/sweep.log 2>&1 &
sweep=$!

pack() {
  local done
  done=$(find results/mini/runs -name summary.json -newer /tmp/runs/marker \
         -exec grep -l '"status": "finished"' {} + 2> /dev/null | xargs -r -n1 dirname)
  tar czf $R/runs.tgz.tmp --exclude=checkpoints results/mini/runs/.findings_logs $done \
    2> /dev/null && mv $R/runs.tgz.tmp $R/runs.tgz
}

busy() {  # the GPUs the sweep's runs use now
  for p in $(pgrep -P $sweep); do
    tr '\0' '\n' < /proc/$p/environ 2> /dev/null | sed -n 's/^CUDA_VISIBLE_DEVICES=//p'
  done
}

bench() {  # on GPU $1, each step with a time limit, all inside BENCH_END
  local B=$R/bench g=$1
  mkdir -p $B
  echo "bench on GPU $g from t=$((SECONDS - start)) s" > $B/when.txt
  export CUDA_VISIBLE_DEVICES=$g
  timeout 240 python3 -m pytest -q -m gpu tests/test_kernels.py -k fla_backend -p no:cacheprovider \
    > $B/gpu_tests.txt 2>&1
  timeout 120 playground-bench canon batch=64 context=512 widths=512,1536,2688 \
    json=$B/canon_mini.json > $B/canon_mini.txt 2>&1
  timeout 300 playground-bench train task=depo1_K4 task.context=512 task.N=25 size=8L512D \
    train=paper train.batch_size=64 canon=ABCD train.compile=true \
    compare='model.canon.backend=auto | model.canon.backend=triton | model.canon.backend=fla' \
    json=$B/fla_mini.json > $B/fla_mini.txt 2>&1
  timeout 120 playground-bench canon widths=512,768,1536,2304,4096 \
    json=$B/canon_2048.json > $B/canon_2048.txt 2>&1
  echo "bench ended at t=$((SECONDS - start)) s" >> $B/when.txt
  tar czf $R/bench.tgz.tmp -C $R bench && mv $R/bench.tgz.tmp $R/bench.tgz
}

declare -A idle
benched=0
while kill -0 $sweep 2> /dev/null; do
  sleep 20
  pack
  t=$((SECONDS - start))
  [ $benched = 1 ] || [ $t -lt 300 ] || [ $t -gt $(($1 - 420)) ] && continue
  used=$(busy)
  for g in 0 1 2 3; do
    if echo "$used" | grep -qx $g; then idle[$g]=0; else idle[$g]=$((${idle[$g]:-0} + 1)); fi
    if [ ${idle[$g]} -ge 2 ] && [ $benched = 0 ]; then
      benched=1; (bench $g) & echo "bench started on GPU $g at t=$t s"
    fi
  done
done
pack
t=$((SECONDS - start))
[ $benched = 0 ] && [ $t -le $(($1 - 420)) ] && { echo "bench after the sweep, t=$t s"; bench 0; }
wait
echo "drive ended at t=$((SECONDS - start)) s"
