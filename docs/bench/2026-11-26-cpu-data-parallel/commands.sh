# Data parallel: ranks share the shards; Lano's sampler. 2026-11-26, the 2-core development machine
# (AMD EPYC, torch 2.13.0+cpu, numpy 2.4.6, Python 3.11.7), from the repository root.
D=docs/bench/2026-11-26-cpu-data-parallel
python $D/data_parallel.py shards 200 > $D/shards.jsonl
# the same for cfg3f with the sampler before (a copy of the tree with playground/grammar/sampler.py and
# playground/tasks/lano.py as of commit 1b56933, at /tmp/before)
PYTHONPATH=/tmp/before python $D/data_parallel.py shards 200 cfg3f > $D/shards_cfg3f_sampler_before.jsonl
for mode in "alone 1" "alone 2" "ranks 2"; do python $D/data_parallel.py $mode 100; done > $D/processes.jsonl
for i in 1 2 3; do
  PYTHONPATH=/tmp/before python $D/sampler_speed.py 8192 | sed 's/^/{"code": "before", "result": /; s/$/}/'
  python $D/sampler_speed.py 8192 | sed 's/^/{"code": "after", "result": /; s/$/}/'
done > $D/sampler.jsonl
