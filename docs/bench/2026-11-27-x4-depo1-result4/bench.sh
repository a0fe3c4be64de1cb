#!/bin/bash
# fla's ShortConvolution beside our Canon kernel on GPU 0, started in the last device call once the
# sweep has ended (nothing else on the GPUs); report/bench.tgz is rewritten after every step.
set -u
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0
while pgrep -f playground-sweep > /dev/null; do sleep 5; done
R=/tmp/runs/report B=/tmp/runs/report/bench
mkdir -p $B && cd /tmp/head
save() { echo "$1 ended $(date +%T)" >> $B/when.txt
         tar czf $R/bench.tgz.tmp -C $R bench && mv $R/bench.tgz.tmp $R/bench.tgz; }
echo "bench from $(date +%T)" > $B/when.txt
timeout 150 python3 -m pytest -q -m gpu tests/test_kernels.py -k fla_backend -p no:cacheprovider \
  > $B/gpu_tests.txt 2>&1; save tests
timeout 90 playground-bench canon batch=64 context=512 widths=512,1536,2688 \
  json=$B/canon_mini.json > $B/canon_mini.txt 2>&1; save canon_mini
timeout 240 playground-bench train task=depo1_K4 task.context=512 task.N=25 size=8L512D \
  train=paper train.batch_size=64 canon=ABCD train.compile=true \
  compare='model.canon.backend=auto | model.canon.backend=triton | model.canon.backend=fla' \
  json=$B/fla_mini.json > $B/fla_mini.txt 2>&1; save fla_mini
timeout 90 playground-bench canon widths=512,768,1536,2304,4096 \
  json=$B/canon_2048.json > $B/canon_2048.txt 2>&1; save canon_2048
